-- Pickers (vim.ui.select, so any picker plugin shows them) and read-only text views.
-- The engine sends one picker per frame at most (a later one replaces an earlier one);
-- every agent string in an item is shown on one line (louise.text).
local chat = require('louise.chat')
local text = require('louise.text')
local notice = require('louise.notice')

local M = {}

local api = vim.api
local present = chat.present
local line = text.line
local picker_text = require('louise.chat.picker_text')

local function send(command, args)
  require('louise.engine').send(command, args)
end

-- A session's state in words, as a picker row says it.
M.STATUS_WORDS = {
  starting = 'starting', ready = 'ready', prompting = 'working',
  waiting_permission = 'waiting for permission', cancelling = 'cancelling',
  closing = 'closing', error = 'failed', closed = 'closed',
}

--- One :LouiseSwitch row: the current session marked, its name cut at a word to fit, its
--- state in words, when it was last used ("3 min ago", worded as :LouiseResume words
--- it), its directory only when it is not this one (relative or with ~).
function M.session_row(item, current, cwd, width, now)
  local mark = item.key == current and '▸' or ' '
  local title = present(item.title) and item.title ~= '' and item.title or ''
  return mark .. ' ' .. picker_text.row({ line(item.agent), title,
    M.STATUS_WORDS[item.status] or line(item.status or ''),
    picker_text.ago(present(item.updated) and item.updated or nil, now),
    picker_text.path(present(item.cwd) and item.cwd or '', cwd) }, 2, width and width - 2)
end

--- :LouiseSwitch — the sessions of this louise process, the current one marked (and
--- listed first), with the tail of its transcript as a preview where a picker shows one.
function M.pick(items)
  if #items == 0 then
    notice.notify('louise: no sessions yet; :LouiseNew starts one', vim.log.levels.INFO)
    return
  end
  local now = chat.current()
  local current = now and now.key or nil
  local cwd = vim.fn.getcwd()
  local clock = os.time() -- one "now" for every row
  local ordered = {} -- the current first, then as listed
  for _, item in ipairs(items) do
    if item.key == current then
      table.insert(ordered, 1, item)
    else
      table.insert(ordered, item)
    end
  end
  items = ordered
  require('louise.chat.picker_preview').select(items, {
    prompt = 'louise: switch to',
    kind = 'louise_session',
    format_item = function(item)
      return M.session_row(item, current, cwd, nil, clock)
    end,
    preview = function(item)
      return require('louise.chat.picker_preview').transcript_tail(item.key)
    end,
  }, function(choice)
    if choice then
      chat.send_later('focus', { key = choice.key })
    end
  end)
end

--- :LouiseChat with several Agents configured and no chat yet.
function M.pick_agent(req)
  require('louise.chat.picker_text').select(req.agents, {
    prompt = 'louise: agent',
    format_item = function(name)
      return name == req.default and (name .. ' (default)') or name
    end,
  }, function(choice)
    if choice then
      chat.send_later('chat', { agent = choice, cwd = present(req.cwd) and req.cwd or nil })
    end
  end)
end

function M.pick_mode(req)
  require('louise.chat.picker_text').select(req.items, {
    prompt = 'louise: mode',
    format_item = function(item)
      local mark = item.id == req.current and '● ' or '  '
      return mark .. line(item.name) .. (item.description ~= '' and (' — ' .. line(item.description)) or '')
    end,
  }, function(choice)
    if choice then
      send('set_mode', { key = req.key, mode = choice.id })
    end
  end)
end

function M.pick_option(req)
  local function pick_value(option)
    require('louise.chat.picker_text').select(option.values, {
      prompt = 'louise: ' .. line(option.name),
      format_item = function(item)
        local mark = item.value == option.current and '● ' or '  '
        return mark .. line(item.name)
      end,
    }, function(choice)
      if choice then
        send('set_option', { key = req.key, option = option.id, value = choice.value })
      end
    end)
  end
  if #req.options == 1 then
    return pick_value(req.options[1])
  end
  require('louise.chat.picker_text').select(req.options, {
    prompt = 'louise: option',
    format_item = function(item)
      return ('%s (%s)'):format(line(item.name), line(item.current))
    end,
  }, function(choice)
    if choice then
      pick_value(choice)
    end
  end)
end

local PICKERS = {
  session = M.pick,
  agent = M.pick_agent,
  resume = function(data)
    require('louise.chat.resume').pick(data)
  end,
  mode = M.pick_mode,
  option = M.pick_option,
}

--- The frame's picker: { kind = 'session' | 'agent' | 'resume' | 'mode' | 'option', data },
--- shown after the frame (a blocking vim.ui.select must not hold the engine's frames up).
function M.show_picker(picker)
  local show = PICKERS[picker.kind]
  if not show then
    error(('unknown picker %s'):format(tostring(picker.kind)), 0)
  end
  vim.schedule(function()
    local ok, err = pcall(show, picker.data)
    if not ok then
      notice.notify('louise: the picker failed: ' .. tostring(err), vim.log.levels.ERROR)
    end
  end)
end

--- A read-only scratch buffer (export, log) in a split.
function M.show_text(view)
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  local lines = view.lines
  local exit = require('louise.engine').last_exit
  if view.name:find('^louise%-log://') and exit and exit.tail ~= '' then
    -- The previous Python side's last words (it died; this one cannot know them).
    lines = vim.list_extend(vim.deepcopy(lines), { '', ('## louise\'s Python side, before it '
      .. 'exited with status %d (stderr tail)'):format(exit.code) })
    vim.list_extend(lines, vim.split(exit.tail, '\n', { plain = true }))
  end
  text.write(buf, 0, -1, lines)
  pcall(api.nvim_buf_set_name, buf, view.name .. '#' .. buf)
  if present(view.ft) then
    vim.bo[buf].filetype = view.ft
  end
  if view.name:find('^louise%-export://') then
    vim.cmd('tabnew') -- a transcript reads best full-size
    local scratch = api.nvim_get_current_buf()
    api.nvim_win_set_buf(0, buf)
    if scratch ~= buf and api.nvim_buf_is_valid(scratch) and api.nvim_buf_get_name(scratch) == ''
      and not vim.bo[scratch].modified then
      pcall(api.nvim_buf_delete, scratch, {})
    end
  else
    -- Beside the chat, never a full-width split over it, nor a narrow one.
    require('louise.chat.placement').side_split()
    api.nvim_win_set_buf(0, buf)
  end
  vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = buf, nowait = true, silent = true,
    desc = 'louise: close this view' })
end

return M
