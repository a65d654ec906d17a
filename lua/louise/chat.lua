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
  M.markdown(buf, true)
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

--- Markdown highlighting (treesitter) on the transcript, paused while a turn streams:
--- a whole-buffer markdown parse per frame costs Neovim seconds of CPU on a long reply
--- (measured by bench/stream.py). Very long transcripts stay plain to keep idle cheap.
local MARKDOWN_MAX_BYTES = 256 * 1024

function M.markdown(buf, on)
  if options().markdown == false or not api.nvim_buf_is_valid(buf) then
    return
  end
  if on then
    local size = api.nvim_buf_get_offset(buf, api.nvim_buf_line_count(buf))
    if size <= MARKDOWN_MAX_BYTES then
      pcall(vim.treesitter.start, buf, 'markdown')
    end
  else
    pcall(vim.treesitter.stop, buf)
  end
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
  map(state.buf, 'n', '<CR>', function()
    M.follow(state)
  end, 'louise: open what the tool line points at')
  map(state.buf, 'n', 'gf', function()
    M.follow(state)
  end, 'louise: open what the tool line points at')
  map(state.buf, 'n', '<Tab>', function()
    M.toggle_details(state)
  end, 'louise: expand or collapse the tool call under the cursor')
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
      state.unseen = false
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

--- A window of this tab showing some chat's transcript, and that chat's prompt window.
local function chat_window_in_tab()
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    local other = M.by_buf[api.nvim_win_get_buf(win)]
    if other and api.nvim_win_get_buf(win) == other.buf then
      for _, pwin in ipairs(api.nvim_tabpage_list_wins(0)) do
        if api.nvim_win_get_buf(pwin) == other.prompt then
          return win, pwin
        end
      end
      return win, nil
    end
  end
  return nil, nil
end

local function show(state, focus)
  local chat_wins = windows_of(state.buf)
  local reuse, reuse_prompt = nil, nil
  if #chat_wins == 0 then
    reuse, reuse_prompt = chat_window_in_tab()
  end
  if reuse then
    -- Another chat is on screen: this one takes its windows (no pile of splits).
    local cur = api.nvim_get_current_win()
    api.nvim_win_set_buf(reuse, state.buf)
    if reuse_prompt then
      api.nvim_win_set_buf(reuse_prompt, state.prompt)
    else
      api.nvim_set_current_win(reuse)
      vim.cmd(('belowright %dsplit'):format(options().prompt_height or 6))
      api.nvim_win_set_buf(0, state.prompt)
      reuse_prompt = api.nvim_get_current_win()
    end
    vim.wo[reuse_prompt].winbar = '%#LouiseNeutral# prompt · <CR> send · <C-c> cancel'
    M.refresh_prompt_bar(state)
    M.refresh_winbar(state)
    M.fold_thoughts(state, reuse)
    if not focus and api.nvim_win_is_valid(cur) then
      api.nvim_set_current_win(cur)
    end
  elseif #chat_wins == 0 then
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

local function op_reset(state, lines, blocks, metas)
  api.nvim_buf_clear_namespace(state.buf, ns, 0, -1)
  api.nvim_buf_clear_namespace(state.buf, hl_ns, 0, -1)
  state.blocks, state.order, state.index, state.kinds = {}, {}, {}, {}
  state.meta = present(metas) and metas or {}
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
  if state.expanded and state.expanded[id] and #lines > 0 then
    local meta = state.meta and state.meta[id]
    lines = vim.list_extend(vim.list_slice(lines), meta and meta.details or {})
  end
  local start, stop = block_range(state, id)
  if not start then
    return
  end
  if #lines == 0 then -- the block goes away (e.g. "waiting for permission" once answered)
    api.nvim_buf_set_lines(state.buf, start, stop, false, {})
    api.nvim_buf_del_extmark(state.buf, ns, state.blocks[id])
    state.blocks[id], state.kinds[id] = nil, nil
    table.remove(state.order, state.index[id])
    state.index = {}
    for i, other in ipairs(state.order) do
      state.index[other] = i
    end
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
      op_reset(state, op[2], op[3], op[4])
    elseif kind == 'meta' then
      state.meta = state.meta or {}
      state.meta[op[2]] = op[3]
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

--- Winbar parts in the order they are dropped when the window is narrow (the reference
--- plugin's order): cost, context %, mode, model, limits label, agent, session name; the
--- turn state always stays (as its icon alone when nothing else fits). Background
--- sessions show on the right, collapsing into counts. Click handlers are plain globals:
--- `v:lua.require(…)` click targets are never invoked by Neovim.
local DROP_ORDER = { 'cost', 'context', 'mode', 'model', 'limits', 'agent', 'name' }
local BG_ICON = { prompting = '…', cancelling = '…', waiting_permission = '!', error = '✗' }

local function display_width(text)
  -- Width of a winbar string without its %#…#, %*, %@…@, %X items and with %% as one.
  local plain = text:gsub('%%#[^#]*#', ''):gsub('%%%*', ''):gsub('%%%d*@[^@]*@', ''):gsub('%%X', ''):gsub('%%%%', '%%')
  return vim.fn.strdisplaywidth(plain)
end

local function background(state)
  local items, counts = {}, {}
  for key, other in pairs(M.chats) do
    if key ~= state.key and api.nvim_buf_is_valid(other.buf) then
      local st = other.status and other.status.status or 'starting'
      local icon = BG_ICON[st] or (other.unseen and '●' or nil)
      if icon then
        local name = (present(other.status and other.status.title) and other.status.title) or (other.agent .. ' ' .. other.n)
        table.insert(items, { icon = icon, name = name, key = key, n = other.n })
        counts[icon] = (counts[icon] or 0) + 1
      end
    end
  end
  table.sort(items, function(a, b)
    return a.n < b.n
  end)
  return items, counts
end

M.click_targets = {}

function M.click_session(minwid)
  local key = M.click_targets[minwid]
  if key then
    require('louise.engine').send('focus', { key = key })
  end
end

_G.__louise_session_click = function(minwid)
  M.click_session(minwid)
end
_G.__louise_limits_click = function()
  require('louise.limits').click()
end

function M.winbar(state, width)
  width = width or 10000
  local s = state.status or {}
  local fields = {}
  local icon = STATUS_ICON[s.status or 'starting'] or '·'
  local turn = s.status == 'waiting_permission' and '! waiting for permission' or (s.status or 'starting')
  fields.turn = ('%%#LouiseStatus#%s %s%%*'):format(icon, esc(turn))
  if present(s.title) then
    fields.name = esc(s.title)
  end
  fields.agent = esc(state.agent)
  local label = require('louise.limits').label_for(state.agent)
  if label and label[1] ~= '' then
    fields.limits = ('%%@v:lua.__louise_limits_click@%%#%s#%s%%*%%X'):format(
      require('louise.limits').hl(label[2]), esc(label[1]))
  end
  if present(s.model) then
    fields.model = esc(s.model)
  end
  if present(s.mode) then
    fields.mode = esc(s.mode)
  end
  if present(s.context) then
    fields.context = ('ctx %d%%%%'):format(s.context)
  end
  if present(s.cost) then
    fields.cost = esc(s.cost)
  end
  local order = { 'turn', 'name', 'agent', 'limits', 'model', 'mode', 'context', 'cost' }
  local function compose()
    local parts = {}
    for _, f in ipairs(order) do
      if fields[f] then
        table.insert(parts, fields[f])
      end
    end
    return ' ' .. table.concat(parts, ' · ')
  end
  -- Background sessions: full names, else counts.
  local items, counts = background(state)
  local right_full, right_counts = '', ''
  if #items > 0 then
    local parts = {}
    for _, item in ipairs(items) do
      local id = state.n * 1000 + item.n
      M.click_targets[id] = item.key
      table.insert(parts, ('%%%d@v:lua.__louise_session_click@%s %s%%X'):format(id, item.icon, esc(item.name)))
    end
    right_full = table.concat(parts, '  ')
    -- Compact: sessions that need the person (permission, error) stay named and
    -- clickable; working and finished ones become counts.
    local c = {}
    for i, item in ipairs(items) do
      if item.icon == '!' or item.icon == '✗' then
        table.insert(c, parts[i])
      end
    end
    for _, ic in ipairs({ '…', '●' }) do
      if counts[ic] then
        table.insert(c, ic .. counts[ic])
      end
    end
    right_counts = table.concat(c, ' ')
  end
  local left = compose()
  local right = right_full
  local function fits()
    return display_width(left) + display_width(right) + 2 <= width
  end
  if not fits() and right ~= '' then
    right = right_counts
  end
  local i = 1
  while not fits() and i <= #DROP_ORDER do
    fields[DROP_ORDER[i]] = nil
    left = compose()
    i = i + 1
  end
  if not fits() then
    right = ''
    if not fits() then
      fields.turn = ('%%#LouiseStatus#%s%%*'):format(icon)
      left = compose()
    end
  end
  if right ~= '' then
    return left .. '%=' .. right .. ' '
  end
  return left
end

function M.refresh_winbar(state)
  for _, win in ipairs(windows_of(state.buf)) do
    vim.wo[win].winbar = M.winbar(state, api.nvim_win_get_width(win))
  end
end

function M.set_status(key, status)
  local state = M.chats[key]
  if not state then
    return
  end
  local before = state.status and state.status.status
  state.status = status
  local streaming = { prompting = true, waiting_permission = true, cancelling = true }
  if streaming[status.status] and not streaming[before or ''] then
    M.markdown(state.buf, false)
  elseif not streaming[status.status] and streaming[before or ''] then
    M.markdown(state.buf, true)
  end
  if before ~= status.status then
    local busy = before == 'prompting' or before == 'waiting_permission' or before == 'cancelling'
    if busy and status.status == 'ready' and #windows_of(state.buf) == 0 then
      state.unseen = true -- finished while nobody was looking
    end
    M.refresh_all_winbars() -- other chats show this one in the background list
  else
    M.refresh_winbar(state)
  end
end

vim.api.nvim_create_autocmd({ 'WinResized', 'VimResized' }, {
  group = vim.api.nvim_create_augroup('louise_winbar_resize', { clear = true }),
  callback = function()
    M.refresh_all_winbars()
  end,
})

function M.refresh_all_winbars()
  for _, state in pairs(M.chats) do
    if api.nvim_buf_is_valid(state.buf) then
      M.refresh_winbar(state)
    end
  end
end

-- ------------------------------------------------------------------ follow-along

--- The block under the cursor (by extmark rows).
function M.block_at(state, row)
  local found = nil
  for _, id in ipairs(state.order) do
    local mark = state.blocks[id]
    local start = mark and api.nvim_buf_get_extmark_by_id(state.buf, ns, mark, {})[1]
    if start and start <= row then
      found = id
    elseif start and start > row then
      break
    end
  end
  return found
end

--- <Tab> on a tool line: show or hide its details (title, locations, raw input and
--- output, content and diffs), kept expanded across its later updates.
function M.toggle_details(state)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local id = M.block_at(state, row)
  if not id or state.kinds[id] ~= 'tool' then
    return
  end
  state.expanded = state.expanded or {}
  state.expanded[id] = not state.expanded[id]
  local start = block_range(state, id)
  local first = api.nvim_buf_get_lines(state.buf, start, start + 1, false)
  vim.bo[state.buf].modifiable = true
  op_replace(state, id, first)
  vim.bo[state.buf].modifiable = false
  pcall(api.nvim_win_set_cursor, 0, { start + 1, 0 })
end

--- <CR>/gf on a tool line: its terminal, else its first location (in another window).
function M.follow(state)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local id = M.block_at(state, row)
  local meta = id and state.meta and state.meta[id]
  if not meta then
    return
  end
  if meta.terminals and #meta.terminals > 0 then
    require('louise.terminal').open(meta.terminals[#meta.terminals])
    return
  end
  local loc = meta.locations and meta.locations[1]
  if not loc then
    vim.notify('louise: this tool call points at no file', vim.log.levels.INFO)
    return
  end
  vim.cmd('wincmd p')
  if M.by_buf[api.nvim_get_current_buf()] then
    vim.cmd('topleft split')
  end
  vim.cmd('edit ' .. vim.fn.fnameescape(loc.path))
  if present(loc.line) then
    pcall(api.nvim_win_set_cursor, 0, { loc.line, 0 })
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
  if state.context and #state.context > 0 then
    local context = state.context
    state.context = {}
    M.refresh_prompt_bar(state)
    require('louise.engine').send('prompt_with', { key = key, text = text, context = context })
  else
    require('louise.engine').send('prompt', { key = key, text = text })
  end
end

-- ------------------------------------------------------------------ context chips

local function chip_label(chip)
  local name = vim.fn.fnamemodify(chip.path or '', ':t')
  if chip.kind == 'selection' then
    return ('%s:%d-%d'):format(name, chip.first, chip.last)
  elseif chip.kind == 'diagnostics' then
    return ('diagnostics %s (%d)'):format(name, chip.count or 0)
  end
  return ('%s %s'):format(chip.kind, name)
end

function M.refresh_prompt_bar(state)
  local bar = '%#LouiseNeutral# prompt · <CR> send · <C-c> cancel'
  if state.context and #state.context > 0 then
    local labels = {}
    for _, chip in ipairs(state.context) do
      table.insert(labels, '[' .. chip_label(chip):gsub('%%', '%%%%') .. ']')
    end
    bar = '%#LouisePlan# context: ' .. table.concat(labels, ' ') .. ' %#LouiseNeutral#· <CR> send'
  end
  for _, win in ipairs(windows_of(state.prompt)) do
    vim.wo[win].winbar = bar
  end
end

--- :LouiseAdd buffer|file|selection|diagnostics — queued until the next prompt.
function M.add(kind, range)
  local state = M.chats[M.last or ''] or nil
  if not state then
    vim.notify('louise: open a chat first (:LouiseChat)', vim.log.levels.WARN)
    return
  end
  local buf = api.nvim_get_current_buf()
  if M.by_buf[buf] then
    vim.notify('louise: run :LouiseAdd from the buffer you want to add', vim.log.levels.WARN)
    return
  end
  local path = api.nvim_buf_get_name(buf)
  local chip = { kind = kind, path = path }
  if kind == 'buffer' then
    chip.text = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  elseif kind == 'file' then
    if path == '' then
      vim.notify('louise: this buffer has no file', vim.log.levels.WARN)
      return
    end
  elseif kind == 'selection' then
    local first, last = range and range[1] or vim.fn.line("'<"), range and range[2] or vim.fn.line("'>")
    chip.first, chip.last = first, last
    chip.text = table.concat(api.nvim_buf_get_lines(buf, first - 1, last, false), '\n')
  elseif kind == 'diagnostics' then
    local lines = {}
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      table.insert(lines, ('%d:%d %s: %s'):format(d.lnum + 1, d.col + 1,
        vim.diagnostic.severity[d.severity] or '?', d.message))
    end
    chip.text = table.concat(lines, '\n')
    chip.count = #lines
  else
    vim.notify('louise: :LouiseAdd buffer|file|selection|diagnostics', vim.log.levels.ERROR)
    return
  end
  state.context = state.context or {}
  table.insert(state.context, chip)
  M.refresh_prompt_bar(state)
  vim.notify('louise: added ' .. chip_label(chip) .. ' to the next prompt', vim.log.levels.INFO)
end

-- ------------------------------------------------------------------ pickers & views

function M.pick_resume(items)
  if #items == 0 then
    vim.notify('louise: the agent lists no sessions here (:LouiseResume! lists all)', vim.log.levels.INFO)
    return
  end
  vim.ui.select(items, {
    prompt = 'louise: resume session',
    format_item = function(item)
      local title = item.title ~= '' and item.title or item.id
      return ('%s · %s · %s'):format(title, item.updated, item.cwd)
    end,
  }, function(choice)
    if choice then
      require('louise.engine').send('load', { agent = choice.agent, id = choice.id, cwd = choice.cwd ~= '' and choice.cwd or vim.fn.getcwd() })
    end
  end)
end

function M.pick_mode(req)
  vim.ui.select(req.items, {
    prompt = 'louise: mode',
    format_item = function(item)
      local mark = item.id == req.current and '● ' or '  '
      return mark .. item.name .. (item.description ~= '' and (' — ' .. item.description) or '')
    end,
  }, function(choice)
    if choice then
      require('louise.engine').send('set_mode', { key = req.key, mode = choice.id })
    end
  end)
end

function M.pick_option(req)
  local function pick_value(option)
    vim.ui.select(option.values, {
      prompt = 'louise: ' .. option.name,
      format_item = function(item)
        local mark = item.value == option.current and '● ' or '  '
        return mark .. item.name
      end,
    }, function(choice)
      if choice then
        require('louise.engine').send('set_option', { key = req.key, option = option.id, value = choice.value })
      end
    end)
  end
  if #req.options == 1 then
    return pick_value(req.options[1])
  end
  vim.ui.select(req.options, {
    prompt = 'louise: option',
    format_item = function(item)
      return ('%s (%s)'):format(item.name, tostring(item.current))
    end,
  }, function(choice)
    if choice then
      pick_value(choice)
    end
  end)
end

--- A read-only scratch buffer (export, log) in a split.
function M.show_text(view)
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, view.lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = 'wipe'
  pcall(api.nvim_buf_set_name, buf, view.name .. '#' .. buf)
  if view.ft and view.ft ~= vim.NIL then
    vim.bo[buf].filetype = view.ft
  end
  vim.cmd('topleft split')
  api.nvim_win_set_buf(0, buf)
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

--- The Python side died: every chat shows it; returns how many chats are open.
function M.engine_died()
  local open = 0
  for _, state in pairs(M.chats) do
    state.status = vim.tbl_extend('force', state.status or {}, {
      status = 'error',
      error = 'the louise Python side exited',
    })
    if api.nvim_buf_is_valid(state.buf) then
      open = open + 1
      M.refresh_winbar(state)
    end
  end
  return open
end

--- A new Python side takes over the open chats (the agent replays their history).
function M.reattach_all()
  for key, state in pairs(M.chats) do
    if api.nvim_buf_is_valid(state.buf) then
      local status = state.status or {}
      require('louise.engine').send('reattach', {
        key = key,
        agent = state.agent,
        cwd = present(status.cwd) and status.cwd or vim.fn.getcwd(),
      })
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
