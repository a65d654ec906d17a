-- The visible prompt queue: prompts sent while a turn runs wait, shown as "queued" lines
-- just above the prompt window's text (under the transcript). :LouiseQueue picks one to
-- edit (in a small float), remove, send now (the running turn is cancelled) or, where
-- the agent offers it, steer into the running turn.
local text = require('louise.text')
local notice = require('louise.notice')

local M = { queues = {} } -- session key -> { items = { {id, text, context} }, steer }

local api = vim.api
local NS = api.nvim_create_namespace('louise_queue')
local MAX_SHOWN = 5
local MAX_LINE = 120

local function send(command, args)
  require('louise.engine').send(command, args)
end

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

local function one_line(s)
  local line = text.line(s)
  if vim.fn.strchars(line) > MAX_LINE then
    line = vim.fn.strcharpart(line, 0, MAX_LINE - 1) .. '…'
  end
  return line
end

--- Draw the queue of one chat above its prompt's first line (nothing when empty).
function M.render(key)
  local chat = require('louise.chat').chats[key]
  if not chat or not chat.prompt or not api.nvim_buf_is_valid(chat.prompt) then
    return
  end
  api.nvim_buf_clear_namespace(chat.prompt, NS, 0, -1)
  local queue = M.queues[key]
  if not queue or #queue.items == 0 then
    return
  end
  local lines = {}
  for i, item in ipairs(queue.items) do
    if i > MAX_SHOWN then
      table.insert(lines, { { ('⧗ +%d more queued'):format(#queue.items - MAX_SHOWN), 'LouiseNeutral' } })
      break
    end
    local chips = (item.context or 0) > 0 and (' [+%d context]'):format(item.context) or ''
    table.insert(lines, { { ('⧗ queued %d: '):format(i), 'LouisePlan' },
      { one_line(item.text) .. chips, 'LouiseNeutral' } })
  end
  local how = queue.steer and 'edit, remove, send now or steer' or 'edit, remove or send now'
  table.insert(lines, { { ('  :LouiseQueue to %s'):format(how), 'LouiseNeutral' } })
  api.nvim_buf_set_extmark(chat.prompt, NS, 0, 0, { virt_lines = lines, virt_lines_above = true })
  for _, win in ipairs(require('louise.chat').windows_of(chat.prompt)) do
    vim.fn.win_execute(win, 'normal! zt') -- lines above the first line need the top in view
  end
end

--- { [key] = { items, steer } } from one frame.
function M.update(queues)
  for key, queue in pairs(queues) do
    M.queues[key] = { items = present(queue.items) and queue.items or {}, steer = queue.steer == true }
    M.render(key)
  end
end

--- The shown lines of a chat's queue (tests, and the statusline if wanted).
function M.lines(key)
  local chat = require('louise.chat').chats[key]
  if not chat or not api.nvim_buf_is_valid(chat.prompt) then
    return {}
  end
  local out = {}
  for _, mark in ipairs(api.nvim_buf_get_extmarks(chat.prompt, NS, 0, -1, { details = true })) do
    for _, line in ipairs(mark[4].virt_lines or {}) do
      local parts = {}
      for _, chunk in ipairs(line) do
        table.insert(parts, chunk[1])
      end
      table.insert(out, table.concat(parts))
    end
  end
  return out
end

--- Edit a queued prompt in a float: :w saves it to the queue, q leaves it.
function M.edit(key, item)
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].buftype = 'acwrite'
  api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(item.text, '\n', { plain = true }))
  pcall(api.nvim_buf_set_name, buf, ('louise-queue://%s/%d'):format(key, item.id))
  vim.bo[buf].modified = false
  local width = math.min(80, vim.o.columns - 4)
  local win = api.nvim_open_win(buf, true, {
    relative = 'editor', width = width, height = math.min(10, vim.o.lines - 4),
    row = math.floor((vim.o.lines - 10) / 2), col = math.floor((vim.o.columns - width) / 2),
    style = 'minimal', border = 'rounded', title = ' queued prompt · :w saves · q leaves ',
  })
  local function save()
    local edited = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
    send('queue_edit', { key = key, id = item.id, text = edited })
    vim.bo[buf].modified = false
    pcall(api.nvim_win_close, win, true)
  end
  api.nvim_create_autocmd('BufWriteCmd', { buffer = buf, callback = save })
  vim.keymap.set('n', 'q', function()
    pcall(api.nvim_win_close, win, true)
  end, { buffer = buf, nowait = true, desc = 'louise: leave it as it was' })
  M.edit_buf = buf
  return buf
end

local ACTION_WORDS = { steer = 'steer it into the running turn',
  send_now = 'send it now (cancels the turn)', edit = 'edit it', remove = 'remove it' }

--- The rows of :LouiseQueue: each queued prompt with each action, in one list.
function M.choices(key)
  local queue = M.queues[key]
  local out = {}
  if not queue then
    return out
  end
  local actions = { 'send_now', 'edit', 'remove' }
  if queue.steer then
    table.insert(actions, 1, 'steer')
  end
  for i, item in ipairs(queue.items) do
    for _, action in ipairs(actions) do
      table.insert(out, { n = i, item = item, action = action })
    end
  end
  return out
end

local function still_queued(key, id)
  for _, item in ipairs((M.queues[key] or { items = {} }).items) do
    if item.id == id then
      return item
    end
  end
end

--- :LouiseQueue — one list of each queued prompt of the current chat × what to do with it
--- (send now, edit, remove, steer where the agent offers it): one pick, so a turn ending
--- meanwhile cannot leave a second menu behind; a prompt sent meanwhile is said so.
function M.pick()
  local chat = require('louise.chat').current()
  local queue = chat and M.queues[chat.key]
  if not queue or #queue.items == 0 then
    notice.notify('louise: no prompt is queued in this chat', vim.log.levels.INFO)
    return
  end
  local key = chat.key
  local picker_text = require('louise.chat.picker_text')
  require('louise.chat.picker_text').select(M.choices(key), {
    prompt = 'louise: queued prompts',
    kind = 'louise_queue',
    format_item = function(choice)
      local words = ACTION_WORDS[choice.action]
      -- Numbered as the queue's lines are, when there is more than one to tell apart.
      local head = #queue.items > 1 and ('⧗%d '):format(choice.n) or ''
      return head .. picker_text.row({ choice.item.text, words }, 1,
        picker_text.width() - vim.fn.strdisplaywidth(head))
    end,
  }, function(choice)
    if not choice then
      return
    end
    local item = still_queued(key, choice.item.id)
    if not item then
      notice.notify('louise: that prompt is no longer queued (it was sent or removed)',
        vim.log.levels.INFO)
    elseif choice.action == 'edit' then
      M.edit(key, item)
    else
      send('queue_' .. choice.action, { key = key, id = item.id })
    end
  end)
end

return M
