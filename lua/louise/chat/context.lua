-- The prompt window: context chips queued for the next prompt (:LouiseAdd), sending the
-- prompt, cancelling the turn.
local chat = require('louise.chat')
local text = require('louise.text')
local notice = require('louise.notice')

local M = {}

local api = vim.api

local function chip_label(chip)
  local name = (chip.path or '') ~= '' and vim.fn.fnamemodify(chip.path, ':t') or '[No Name]'
  if chip.clipboard then
    return 'image from the clipboard'
  elseif chip.mention then
    return '@' .. name
  elseif chip.kind == 'selection' then
    return ('%s:%d-%d'):format(name, chip.first, chip.last)
  elseif chip.kind == 'diagnostics' then
    return ('diagnostics %s (%d)'):format(name, chip.count or 0)
  end
  return ('%s %s'):format(chip.kind, name)
end

local function keys_hint()
  if chat.options().send_on_enter then
    return '<CR> send · <C-j> new line · g? keys'
  end
  return '<CR> (Normal) or <M-CR> send · g? keys'
end

local function width_of(bar)
  return vim.fn.strdisplaywidth((bar:gsub('%%#[^#]*#', ''):gsub('%%%%', '%%')))
end

--- The prompt's winbar: the keys, or the queued chips (numbered, for :LouiseDrop) as many
--- as fit the window, then how many more.
local function prompt_bar(state, width)
  if state.confirm then
    -- A turn likely to hit a limit: say why; a second send within CONFIRM_MS sends it.
    return '%#LouiseLimitsWarning# ' .. text.line(state.confirm.risk):gsub('%%', '%%%%')
      .. ' · send again to send it anyway'
  end
  if not (state.context and #state.context > 0) then
    return '%#LouiseNeutral# prompt · ' .. keys_hint()
  end
  local head, tail = '%#LouisePlan# context: ', ' %#LouiseNeutral#· :LouiseDrop removes'
  local labels = {}
  for i, chip in ipairs(state.context) do
    labels[i] = ('[%d %s]'):format(i, text.line(chip_label(chip)):gsub('%%', '%%%%'))
  end
  for shown = #labels, 0, -1 do
    local more = #labels - shown
    local bar = head .. table.concat(vim.list_slice(labels, 1, shown), ' ')
      .. (more > 0 and (' +%d'):format(more) or '') .. tail
    if width_of(bar) <= width or shown == 0 then
      if width_of(bar) > width then
        bar = head .. ('%d items'):format(#labels)
      end
      return bar
    end
  end
end

function M.refresh_prompt_bar(state)
  for _, win in ipairs(chat.windows_of(state.prompt)) do
    vim.wo[win].winbar = prompt_bar(state, api.nvim_win_get_width(win))
  end
end

local function warn(message)
  notice.notify('louise: ' .. message, vim.log.levels.WARN)
end

-- The chip goes with the next prompt; the prompt's bar and a notification say so.
local function add_chip(state, chip)
  state.context = state.context or {}
  table.insert(state.context, chip)
  M.refresh_prompt_bar(state)
  notice.notify('louise: added ' .. chip_label(chip) .. ' to the next prompt', vim.log.levels.INFO)
end

--- :LouiseAdd buffer|file|selection|diagnostics|image [path] — queued until the next
--- prompt (`file` without a path: this buffer's file, else one picked).
function M.add(kind, range, arg)
  local state = chat.chats[chat.last or ''] or nil
  if not state then
    warn('open a chat first (:LouiseChat)')
    return
  end
  if kind == 'image' then
    if not (state.status and state.status.image) then
      warn(('%s does not take images: nothing added'):format(state.agent or 'the agent'))
      return
    end
    local chip, why = require('louise.chat.attach').image_chip(arg)
    if not chip then
      warn(why .. ': nothing added')
      return
    end
    return add_chip(state, chip)
  end
  local buf = api.nvim_get_current_buf()
  if kind == 'file' and (arg or chat.by_buf[buf] or api.nvim_buf_get_name(buf) == ''
      or vim.bo[buf].buftype ~= '') then
    return M.add_file(state, arg)
  end
  if chat.by_buf[buf] then
    warn('run :LouiseAdd from the buffer you want to add')
    return
  end
  local path = api.nvim_buf_get_name(buf)
  local chip = { kind = kind, path = path }
  if kind == 'buffer' then
    chip.text = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
    if vim.trim(chip.text) == '' then
      warn('this buffer is empty: nothing added')
      return
    end
  elseif kind == 'file' then
    if path == '' then
      warn('this buffer has no file: :LouiseAdd buffer adds its text')
      return
    end
  elseif kind == 'selection' then
    local first, last = range and range[1] or vim.fn.line("'<"), range and range[2] or vim.fn.line("'>")
    if first < 1 or last < first then
      warn('no selection: select lines (V) first, or give a range (:10,20LouiseAdd)')
      return
    end
    chip.first, chip.last = first, last
    chip.text = table.concat(api.nvim_buf_get_lines(buf, first - 1, last, false), '\n')
  elseif kind == 'diagnostics' then
    local lines = {}
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      table.insert(lines, ('%d:%d %s: %s'):format(d.lnum + 1, d.col + 1,
        vim.diagnostic.severity[d.severity] or '?', d.message))
    end
    if #lines == 0 then
      warn(('no diagnostics in %s: nothing added'):format(chip_label({ kind = 'file', path = path }):sub(6)))
      return
    end
    chip.text = table.concat(lines, '\n')
    chip.count = #lines
  else
    notice.notify('louise: :LouiseAdd buffer|file|selection|diagnostics|image [path]',
      vim.log.levels.ERROR)
    return
  end
  add_chip(state, chip)
end

--- :LouiseAdd file [path]: the file named (relative to the working directory), else one
--- picked among the workspace's files (vim.ui.select, bounded).
function M.add_file(state, arg)
  local attach = require('louise.chat.attach')
  local cwd = vim.fn.getcwd()
  if arg then
    local path = attach.resolve(arg, cwd)
    if not path then
      warn(('no file %s: nothing added'):format(arg))
      return
    end
    return add_chip(state, { kind = 'file', path = path })
  end
  local files, cut = attach.workspace_files(cwd)
  if #files == 0 then
    warn('no files in ' .. vim.fn.fnamemodify(cwd, ':~') .. ': nothing added')
    return
  end
  require('louise.chat.picker_text').select(files, {
    prompt = cut and ('louise: add which file? (the first %d)'):format(#files)
      or 'louise: add which file?',
    kind = 'louise_file',
    format_item = text.line,
  }, function(choice)
    if choice then
      add_chip(state, { kind = 'file', path = vim.fs.joinpath(cwd, choice) })
    end
  end)
end

--- :LouiseDrop [n] — take queued context off the next prompt: item n, else the one picked;
--- with ! all of them.
function M.drop(which, all)
  local state = chat.current()
  if not state or not state.context or #state.context == 0 then
    notice.notify('louise: no context is queued', vim.log.levels.INFO)
    return
  end
  local function remove(i)
    local chip = table.remove(state.context, i)
    M.refresh_prompt_bar(state)
    notice.notify('louise: dropped ' .. chip_label(chip), vim.log.levels.INFO)
  end
  if all then
    state.context = {}
    M.refresh_prompt_bar(state)
    notice.notify('louise: dropped all queued context', vim.log.levels.INFO)
  elseif which then
    local i = tonumber(which)
    if not i or not state.context[i] then
      notice.notify(('louise: no context item %s (1-%d)'):format(which, #state.context),
        vim.log.levels.ERROR)
      return
    end
    remove(i)
  else
    local items = {}
    for i = 1, #state.context do
      items[i] = i
    end
    require('louise.chat.picker_text').select(items, {
      prompt = 'louise: drop which context?',
      format_item = function(i)
        return ('%d %s'):format(i, text.line(chip_label(state.context[i])))
      end,
    }, function(choice)
      if choice then
        remove(choice)
      end
    end)
  end
end

--- <CR> in the prompt: send what it holds (with the queued chips) and clear it.
local CONFIRM_MS = 10000

--- Whether the prompt may go now: when the agent's next turn is likely to hit a limit
--- (the engine's `[limits] confirm`, pushed with the limits label), the first send only
--- says why in the prompt's winbar and the same prompt sent again within 10 s goes
--- (a chat whose turn is parked queues it behind, without asking).
local function confirmed(state, prompt)
  local label = require('louise.limits').label_for(state.agent)
  local risk = label and label[3]
  local parked = state.status and type(state.status.parked) == 'string'
  -- Behind a parked turn a prompt waits for the reset anyway: nothing to confirm.
  if parked or type(risk) ~= 'string' or risk == '' then
    state.confirm = nil
    return true
  end
  local now = vim.uv.now()
  local asked = state.confirm
  if asked and asked.text == prompt and now - asked.at < CONFIRM_MS then
    state.confirm = nil
    M.refresh_prompt_bar(state)
    return true
  end
  state.confirm = { text = prompt, at = now, risk = risk }
  M.refresh_prompt_bar(state)
  return false
end

function M.submit(key)
  local state = chat.chats[key]
  if not state then
    return
  end
  local lines = api.nvim_buf_get_lines(state.prompt, 0, -1, false)
  local prompt = vim.trim(table.concat(lines, '\n'))
  if prompt == '' then
    return
  end
  if not confirmed(state, prompt) then
    return
  end
  api.nvim_buf_set_lines(state.prompt, 0, -1, false, {})
  vim.bo[state.prompt].modified = false -- sent: nothing left to lose
  if api.nvim_get_mode().mode:sub(1, 1) == 'i' and not chat.options().send_on_enter then
    vim.cmd('stopinsert')
  end
  chat.scroll_to_end(state)
  -- Files mentioned with @path go along as attachments (not only as their names).
  local mentioned = require('louise.chat.attach').mentions(prompt, state.context,
    state.status and state.status.cwd ~= vim.NIL and state.status.cwd or nil)
  if #mentioned > 0 then
    state.context = vim.list_extend(state.context or {}, mentioned)
  end
  if state.context and #state.context > 0 then
    local context = state.context
    state.context = {}
    M.refresh_prompt_bar(state)
    require('louise.engine').send('prompt_with', { key = key, text = prompt, context = context })
  else
    require('louise.engine').send('prompt', { key = key, text = prompt })
  end
end

function M.cancel(key)
  require('louise.engine').send('cancel', { key = key })
end

return M
