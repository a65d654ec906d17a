-- Chat buffers: a read-only transcript buffer fed by the engine's frame batches, and a
-- separate prompt buffer below it, so streaming never touches what the person types
-- (cursor, text or undo history).
local M = { chats = {}, by_buf = {}, counter = 0, last = nil }

local api = vim.api
local ns = api.nvim_create_namespace('louise_blocks')
local hl_ns = api.nvim_create_namespace('louise_hl')

local KIND_HL = {
  user = 'LouiseUser',
  agent = 'LouiseAgent',
  thought = 'LouiseThought',
  tool = 'LouiseTool',
  notice = 'LouiseNotice',
  plan = 'LouisePlan',
}
local STATUS_ICON = {
  starting = '…',
  ready = '●',
  prompting = '…',
  waiting_permission = '!',
  cancelling = '⊘',
  error = '✗',
  closed = '○',
}

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

local function options()
  return require('louise').options or {}
end

-- ------------------------------------------------------------------ buffers & windows

local function set_buf_opts(buf, ft)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = ft
end

local function windows_of(buf)
  local wins = {}
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == buf then
      table.insert(wins, win)
    end
  end
  return wins
end

local function make_state(key, agent)
  M.counter = M.counter + 1
  local n = M.counter
  local buf = api.nvim_create_buf(false, true)
  set_buf_opts(buf, 'louise')
  vim.bo[buf].modifiable = false
  vim.bo[buf].undolevels = -1
  pcall(api.nvim_buf_set_name, buf, ('louise://%s/%d'):format(agent, n))
  local prompt = api.nvim_create_buf(false, true)
  set_buf_opts(prompt, 'louise_prompt')
  pcall(api.nvim_buf_set_name, prompt, ('louise://%s/%d/prompt'):format(agent, n))
  local state = {
    key = key,
    agent = agent,
    n = n,
    buf = buf,
    prompt = prompt,
    blocks = {}, -- id -> extmark id
    order = {}, -- block ids in buffer order
    index = {}, -- id -> position in order
    kinds = {},
    status = {},
    attached = true,
  }
  M.chats[key] = state
  M.by_buf[buf] = state
  M.by_buf[prompt] = state
  M.keymaps(state)
  M.autocmds(state)
  return state
end

function M.keymaps(state)
  local function map(buf, mode, lhs, rhs, desc)
    vim.keymap.set(mode, lhs, rhs, { buffer = buf, nowait = true, silent = true, desc = desc })
  end
  local submit = function()
    M.submit(state.key)
  end
  map(state.prompt, 'n', '<CR>', submit, 'louise: send the prompt')
  map(state.prompt, 'i', '<C-s>', submit, 'louise: send the prompt')
  map(state.prompt, 'n', '<C-c>', function()
    M.cancel(state.key)
  end, 'louise: cancel the turn')
  map(state.buf, 'n', '<C-c>', function()
    M.cancel(state.key)
  end, 'louise: cancel the turn')
  map(state.buf, 'n', 'i', function()
    M.focus_prompt(state, true)
  end, 'louise: type a prompt')
  -- Completion of /commands and @paths in the prompt.
  vim.bo[state.prompt].omnifunc = "v:lua.require'louise.chat'.omnifunc"
end

function M.autocmds(state)
  local group = api.nvim_create_augroup('louise_chat_' .. state.n, { clear = true })
  api.nvim_create_autocmd('BufWinEnter', {
    group = group,
    buffer = state.buf,
    callback = function()
      M.last = state.key
      if not state.attached then
        state.attached = true
        require('louise.engine').send('attach', { key = state.key })
      end
    end,
  })
  api.nvim_create_autocmd('BufHidden', {
    group = group,
    buffer = state.buf,
    callback = function()
      vim.schedule(function()
        if api.nvim_buf_is_valid(state.buf) and #windows_of(state.buf) == 0 and state.attached then
          state.attached = false
          require('louise.engine').send('detach', { key = state.key })
        end
      end)
    end,
  })
  api.nvim_create_autocmd('WinEnter', {
    group = group,
    buffer = state.prompt,
    callback = function()
      M.last = state.key
    end,
  })
end

function M.focus_prompt(state, insert)
  local wins = windows_of(state.prompt)
  if #wins > 0 then
    api.nvim_set_current_win(wins[1])
    if insert then
      vim.cmd('startinsert!')
    end
  end
end

local function show(state, focus)
  local chat_wins = windows_of(state.buf)
  if #chat_wins == 0 then
    local cur = api.nvim_get_current_win()
    local width = options().width or 80
    vim.cmd(('botright vertical %dsplit'):format(width))
    local win = api.nvim_get_current_win()
    api.nvim_win_set_buf(win, state.buf)
    vim.wo[win].wrap = true
    vim.wo[win].linebreak = true
    vim.wo[win].number = false
    vim.wo[win].relativenumber = false
    vim.wo[win].signcolumn = 'no'
    vim.wo[win].foldmethod = 'manual'
    vim.wo[win].foldenable = true
    vim.wo[win].winfixwidth = true
    vim.cmd(('belowright %dsplit'):format(options().prompt_height or 6))
    local pwin = api.nvim_get_current_win()
    api.nvim_win_set_buf(pwin, state.prompt)
    vim.wo[pwin].winfixheight = true
    vim.wo[pwin].number = false
    vim.wo[pwin].winbar = '%#LouiseNeutral# prompt · <CR> send · <C-c> cancel'
    M.refresh_winbar(state)
    if not focus then
      api.nvim_set_current_win(cur)
    end
    M.fold_thoughts(state, win)
  elseif focus then
    api.nvim_set_current_win(chat_wins[1])
  end
  if focus then
    M.focus_prompt(state, false)
  end
  M.last = state.key
end

function M.open(key, agent, focus)
  local state = M.chats[key]
  if state == nil or not api.nvim_buf_is_valid(state.buf) then
    state = make_state(key, agent)
  end
  state.attached = true
  show(state, focus ~= false)
end

function M.current()
  local state = M.by_buf[api.nvim_get_current_buf()]
  if state then
    return state
  end
  if M.last then
    return M.chats[M.last]
  end
  return nil
end

-- ------------------------------------------------------------------ applying ops

local function next_start(state, id)
  local pos = state.index[id]
  if pos == nil then
    return nil
  end
  for i = pos + 1, #state.order do
    local mark = state.blocks[state.order[i]]
    if mark then
      local row = api.nvim_buf_get_extmark_by_id(state.buf, ns, mark, {})[1]
      if row then
        return row
      end
    end
  end
  return nil
end

local function block_range(state, id)
  local mark = state.blocks[id]
  if not mark then
    return nil
  end
  local start = api.nvim_buf_get_extmark_by_id(state.buf, ns, mark, {})[1]
  if not start then
    return nil
  end
  local stop = next_start(state, id) or api.nvim_buf_line_count(state.buf)
  return start, stop
end

local function highlight(state, id, kind, start, count)
  local group = KIND_HL[kind]
  if not group then
    return
  end
  local buf = state.buf
  if kind == 'tool' or kind == 'notice' then
    for row = start, start + count - 1 do
      api.nvim_buf_set_extmark(buf, hl_ns, row, 0, { line_hl_group = group, priority = 50 })
    end
  else
    -- Headers: the first non-empty line of the block ("▌ …").
    for row = start, math.min(start + 1, start + count - 1) do
      local line = api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ''
      if line:sub(1, 3) == '▌' then
        api.nvim_buf_set_extmark(buf, hl_ns, row, 0, { line_hl_group = group, priority = 50 })
      end
    end
  end
end

local function add_block(state, id, kind, start, count)
  state.blocks[id] = api.nvim_buf_set_extmark(state.buf, ns, start, 0, {})
  table.insert(state.order, id)
  state.index[id] = #state.order
  state.kinds[id] = kind
  highlight(state, id, kind, start, count)
end

local function op_reset(state, lines, blocks)
  api.nvim_buf_clear_namespace(state.buf, ns, 0, -1)
  api.nvim_buf_clear_namespace(state.buf, hl_ns, 0, -1)
  state.blocks, state.order, state.index, state.kinds = {}, {}, {}, {}
  api.nvim_buf_set_lines(state.buf, 0, -1, false, lines)
  for _, b in ipairs(blocks) do
    add_block(state, b[1], b[2], b[3], b[4])
  end
  state.needs_fold = true
end

local function op_block(state, id, kind, lines)
  local count = api.nvim_buf_line_count(state.buf)
  local start = count
  if count == 1 and api.nvim_buf_get_lines(state.buf, 0, 1, false)[1] == '' and #state.order == 0 then
    api.nvim_buf_set_lines(state.buf, 0, 1, false, lines)
    start = 0
  else
    api.nvim_buf_set_lines(state.buf, count, count, false, lines)
  end
  local previous = state.order[#state.order]
  add_block(state, id, kind, start, #lines)
  if previous and state.kinds[previous] == 'thought' then
    state.fold_pending = state.fold_pending or {}
    table.insert(state.fold_pending, previous)
  end
end

local function op_text(state, id, text)
  local start, stop = block_range(state, id)
  if not start then
    return
  end
  local row = math.max(stop - 1, start)
  local line = api.nvim_buf_get_lines(state.buf, row, row + 1, false)[1] or ''
  local col = #line
  api.nvim_buf_set_text(state.buf, row, col, row, col, vim.split(text, '\n', { plain = true }))
end

local function op_replace(state, id, lines)
  local start, stop = block_range(state, id)
  if not start then
    return
  end
  api.nvim_buf_set_lines(state.buf, start, stop, false, lines)
  api.nvim_buf_clear_namespace(state.buf, hl_ns, start, start + #lines)
  state.blocks[id] = api.nvim_buf_set_extmark(state.buf, ns, start, 0, { id = state.blocks[id] })
  highlight(state, id, state.kinds[id], start, #lines)
end

function M.apply_ops(key, ops)
  local state = M.chats[key]
  if state == nil or not api.nvim_buf_is_valid(state.buf) then
    return
  end
  local buf = state.buf
  -- Follow the tail only in windows whose cursor is on the last line.
  local follow = {}
  local last = api.nvim_buf_line_count(buf)
  for _, win in ipairs(windows_of(buf)) do
    if api.nvim_win_get_cursor(win)[1] >= last then
      table.insert(follow, win)
    end
  end
  vim.bo[buf].modifiable = true
  for _, op in ipairs(ops) do
    local kind = op[1]
    if kind == 'text' then
      op_text(state, op[2], op[3])
    elseif kind == 'block' then
      op_block(state, op[2], op[3], op[4])
    elseif kind == 'replace' then
      op_replace(state, op[2], op[3])
    elseif kind == 'reset' then
      op_reset(state, op[2], op[3])
    end
  end
  vim.bo[buf].modifiable = false
  local new_last = api.nvim_buf_line_count(buf)
  for _, win in ipairs(follow) do
    pcall(api.nvim_win_set_cursor, win, { new_last, 0 })
  end
  if state.needs_fold or state.fold_pending then
    for _, win in ipairs(windows_of(buf)) do
      M.fold_thoughts(state, win)
    end
  end
end

--- Thoughts are folded by default (zo opens one).
function M.fold_thoughts(state, win)
  if options().fold_thoughts == false then
    state.needs_fold, state.fold_pending = nil, nil
    return
  end
  local ids = state.fold_pending
  if state.needs_fold then
    ids = {}
    for i, id in ipairs(state.order) do
      if state.kinds[id] == 'thought' and i < #state.order then
        table.insert(ids, id)
      end
    end
  end
  state.needs_fold, state.fold_pending = nil, nil
  if not ids or #ids == 0 then
    return
  end
  api.nvim_win_call(win, function()
    for _, id in ipairs(ids) do
      local start, stop = block_range(state, id)
      if start and stop - start > 2 then
        pcall(vim.cmd, ('%d,%dfold'):format(start + 2, stop))
      end
    end
  end)
end

-- ------------------------------------------------------------------ status / winbar

local function esc(text)
  return (tostring(text):gsub('%%', '%%%%'))
end

function M.winbar(state)
  local s = state.status or {}
  local parts = {}
  local icon = STATUS_ICON[s.status or 'starting'] or '·'
  local turn = s.status == 'waiting_permission' and '! waiting for permission' or (s.status or 'starting')
  table.insert(parts, ('%%#LouiseStatus#%s %s%%*'):format(icon, esc(turn)))
  if present(s.title) then
    table.insert(parts, esc(s.title))
  end
  table.insert(parts, esc(state.agent))
  local label = require('louise.limits').label_for(state.agent)
  if label and label[1] ~= '' then
    table.insert(parts, ('%%@v:lua.require\'louise.limits\'.click@%%#%s#%s%%*%%X'):format(
      require('louise.limits').hl(label[2]), esc(label[1])))
  end
  if present(s.model) then
    table.insert(parts, esc(s.model))
  end
  if present(s.mode) then
    table.insert(parts, esc(s.mode))
  end
  if present(s.context) then
    table.insert(parts, ('ctx %d%%%%'):format(s.context))
  end
  if present(s.cost) then
    table.insert(parts, esc(s.cost))
  end
  return ' ' .. table.concat(parts, ' · ')
end

function M.refresh_winbar(state)
  for _, win in ipairs(windows_of(state.buf)) do
    vim.wo[win].winbar = M.winbar(state)
  end
end

function M.set_status(key, status)
  local state = M.chats[key]
  if not state then
    return
  end
  state.status = status
  M.refresh_winbar(state)
end

function M.refresh_all_winbars()
  for _, state in pairs(M.chats) do
    if api.nvim_buf_is_valid(state.buf) then
      M.refresh_winbar(state)
    end
  end
end

-- ------------------------------------------------------------------ actions

function M.submit(key)
  local state = M.chats[key]
  if not state then
    return
  end
  local lines = api.nvim_buf_get_lines(state.prompt, 0, -1, false)
  local text = vim.trim(table.concat(lines, '\n'))
  if text == '' then
    return
  end
  api.nvim_buf_set_lines(state.prompt, 0, -1, false, {})
  if api.nvim_get_mode().mode:sub(1, 1) == 'i' then
    vim.cmd('stopinsert')
  end
  require('louise.engine').send('prompt', { key = key, text = text })
end

function M.cancel(key)
  require('louise.engine').send('cancel', { key = key })
end

function M.closed(key)
  local state = M.chats[key]
  if not state then
    return
  end
  M.chats[key] = nil
  for _, buf in ipairs({ state.buf, state.prompt }) do
    M.by_buf[buf] = nil
    if api.nvim_buf_is_valid(buf) then
      pcall(api.nvim_buf_delete, buf, { force = true })
    end
  end
  if M.last == key then
    M.last = nil
  end
end

function M.engine_died()
  for _, state in pairs(M.chats) do
    state.status = vim.tbl_extend('force', state.status or {}, {
      status = 'error',
      error = 'the louise Python side exited',
    })
    if api.nvim_buf_is_valid(state.buf) then
      M.refresh_winbar(state)
    end
  end
end

function M.pick(items)
  if #items == 0 then
    vim.notify('louise: no sessions yet; :LouiseNew starts one', vim.log.levels.INFO)
    return
  end
  vim.ui.select(items, {
    prompt = 'louise session',
    format_item = function(item)
      local title = present(item.title) and item.title ~= '' and (' ' .. item.title) or ''
      return ('%s %s%s · %s · %s'):format(STATUS_ICON[item.status] or '·', item.agent, title, item.status, item.cwd)
    end,
  }, function(choice)
    if choice then
      require('louise.engine').send('focus', { key = choice.key })
    end
  end)
end

-- ------------------------------------------------------------------ completion

function M.omnifunc(findstart, base)
  local line = api.nvim_get_current_line()
  local col = api.nvim_win_get_cursor(0)[2]
  if findstart == 1 then
    local start = col
    while start > 0 and not line:sub(start, start):match('%s') do
      start = start - 1
    end
    return start
  end
  local state = M.by_buf[api.nvim_get_current_buf()]
  local items = {}
  if base:sub(1, 1) == '/' and state and state.status and present(state.status.commands) then
    for _, name in ipairs(state.status.commands) do
      if ('/' .. name):sub(1, #base) == base then
        table.insert(items, '/' .. name)
      end
    end
  elseif base:sub(1, 1) == '@' then
    local prefix = base:sub(2)
    for _, path in ipairs(vim.fn.glob(prefix .. '*', false, true)) do
      table.insert(items, '@' .. path)
      if #items >= 200 then
        break
      end
    end
  end
  return items
end

return M
