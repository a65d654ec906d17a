-- A chat's keys, chosen to follow Vim's habits: nothing on <Tab> (it is <C-i>, the
-- jumplist forward) or <C-s> (XOFF: it freezes many terminals); <C-c> cancels a running
-- turn and otherwise leaves Insert mode as Vim does; g? lists the keys (`?` stays the
-- search backward); ]] and [[ move between messages as between sections. A key the
-- person already mapped in the buffer (a FileType autocommand of their own) is kept.
local chat = require('louise.chat')

local M = {}

local api = vim.api

-- The chat's keys, for g? and the help: { where, mode, lhs, what }.
M.KEYS = {
  { 'prompt', 'n', '<CR>', 'send the prompt' },
  { 'prompt', 'i', '<M-CR>', 'send the prompt (Alt-Enter)' },
  { 'prompt', 'n i', '<C-c>', 'cancel the running turn; with none, leave Insert mode' },
  { 'prompt', 'i', '<C-x><C-o>', 'complete /commands and @paths' },
  { 'transcript', 'n', 'i', 'type a prompt' },
  { 'transcript', 'n', '<C-c>', 'cancel the running turn' },
  { 'transcript', 'n', ']] [[', 'next, previous message' },
  { 'transcript', 'n', '<CR> gf', 'open what the tool line points at; elsewhere go to the prompt' },
  { 'transcript', 'n', 'za', 'on a tool line: show or hide its details' },
  { 'both', 'n', 'g?', 'this list (q or <Esc> closes it)' },
}

local BUSY = { prompting = true, waiting_permission = true, cancelling = true }

--- Whether the chat has a turn under way (what <C-c> would cancel).
function M.turn_running(state)
  local status = state.status and state.status.status
  return BUSY[status] == true
end

--- <C-c>: cancel the running turn; with none, leave Insert mode as Vim's <C-c> does.
local function interrupt(state)
  if state.pending then -- the agent is starting: a prompt waiting for it is taken back
    state.waiting_prompt = nil
  end
  if M.turn_running(state) then
    chat.cancel(state.key)
  elseif api.nvim_get_mode().mode:sub(1, 1) == 'i' then
    vim.cmd('stopinsert')
  end
end

-- Message blocks: what ]] and [[ move between.
local MESSAGE_KINDS = { user = true, agent = true }

--- The first rows (0-based) of the transcript's messages, in order.
function M.message_rows(state)
  local ns = api.nvim_create_namespace('louise_blocks') -- buffer.lua's block marks
  local rows = {}
  for _, id in ipairs(state.order or {}) do
    local mark = state.blocks[id]
    if mark and MESSAGE_KINDS[state.kinds[id]] then
      local at = api.nvim_buf_get_extmark_by_id(state.buf, ns, mark, {})[1]
      if at then
        -- On the message's heading, not the blank line that parts it from the one above.
        local head = api.nvim_buf_get_lines(state.buf, at, at + 2, false)
        if head[1] == '' and head[2] then
          at = at + 1
        end
        -- A message goes on after a tool call under the same heading: only headings count.
        local line = api.nvim_buf_get_lines(state.buf, at, at + 1, false)[1] or ''
        if line:find('^▌ ') then
          table.insert(rows, at)
        end
      end
    end
  end
  table.sort(rows)
  return rows
end

--- ]] (forward) and [[ (back): the cursor to the start of the count-th message from
--- here, as ]] and [[ move between sections; the jumplist remembers where it was.
function M.jump_message(state, forward)
  local rows = M.message_rows(state)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local target = nil
  for _ = 1, vim.v.count1 do
    local found = nil
    if forward then
      for _, r in ipairs(rows) do
        if r > row then
          found = r
          break
        end
      end
    else
      for i = #rows, 1, -1 do
        if rows[i] < row then
          found = rows[i]
          break
        end
      end
    end
    if not found then
      break
    end
    row, target = found, found
  end
  if target then
    vim.cmd("normal! m'")
    api.nvim_win_set_cursor(0, { target + 1, 0 })
  end
end

--- za on a tool line shows or hides its details; elsewhere it is Vim's za (the folded
--- thoughts).
local function toggle(state)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local id = chat.block_at(state, row)
  if id and state.kinds[id] == 'tool' then
    chat.toggle_details(state)
  else
    pcall(vim.cmd, 'normal! ' .. vim.v.count1 .. 'za')
  end
end

local help = {}

--- g?: the chat's keys in a small float, closed by q or <Esc>.
function M.show_keys()
  local lines = {}
  local where = nil
  local keys = vim.deepcopy(M.KEYS)
  if chat.options().send_on_enter then
    table.insert(keys, 2, { 'prompt', 'i', '<CR>', 'send the prompt (send_on_enter)' })
    table.insert(keys, 3, { 'prompt', 'i', '<C-j> <S-CR>', 'a new line' })
  end
  for _, key in ipairs(keys) do
    if key[1] ~= where then
      where = key[1]
      if #lines > 0 then
        table.insert(lines, '')
      end
      table.insert(lines, where == 'both' and 'In both' or ('In the ' .. where))
    end
    table.insert(lines, ('  %-12s %s'):format(key[3], key[4]))
  end
  local win = require('louise.float').show(help, lines, {
    title = ' louise: chat keys ',
    filetype = 'louise_keys',
    enter = true,
  })
  vim.wo[win].winhighlight = 'NormalFloat:LouisePermission'
  for _, lhs in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', lhs, function()
      if help.win and api.nvim_win_is_valid(help.win) then
        api.nvim_win_close(help.win, true)
      end
      help.win = nil
    end, { buffer = help.buf, nowait = true, silent = true })
  end
  return win
end

--- Send the prompt of the chat of the current buffer (for a key of the person's own:
--- `vim.keymap.set('i', '<C-s>', require('louise.chat').send, { buffer = … })`).
function M.send()
  local state = chat.by_buf[api.nvim_get_current_buf()]
  if state and state.pending then
    require('louise.chat.starting').hold(state)
  elseif state then
    chat.submit(state.key)
  end
end

--- Set a buffer's key unless the person mapped it there already.
local function map(buf, modes, lhs, rhs, desc)
  for _, mode in ipairs(vim.split(modes, ' ')) do
    local mine = vim.fn.maparg(lhs, mode, false, true)
    if not (type(mine) == 'table' and mine.buffer == 1 and not (mine.desc or ''):find('^louise:')) then
      vim.keymap.set(mode, lhs, rhs, { buffer = buf, nowait = true, silent = true, desc = desc })
    end
  end
end

function M.keymaps(state)
  local layout = require('louise.chat.layout')
  local function submit()
    if state.pending then -- the agent is starting: the prompt waits for its session
      require('louise.chat.starting').hold(state)
      return
    end
    chat.submit(state.key)
  end
  api.nvim_buf_call(state.prompt, function()
    map(state.prompt, 'n', '<CR>', submit, 'louise: send the prompt')
    map(state.prompt, 'i', '<M-CR>', submit, 'louise: send the prompt')
    if chat.options().send_on_enter then
      -- Insert <CR> sends; a new line is <S-CR> (where the terminal tells it) or <C-j>.
      map(state.prompt, 'i', '<CR>', submit, 'louise: send the prompt')
      map(state.prompt, 'i', '<S-CR>', '<CR>', 'louise: new line')
      map(state.prompt, 'i', '<C-j>', '<CR>', 'louise: new line')
    end
    map(state.prompt, 'n i', '<C-c>', function()
      interrupt(state)
    end, 'louise: cancel the turn')
    map(state.prompt, 'n', 'g?', M.show_keys, "louise: the chat's keys")
  end)
  api.nvim_buf_call(state.buf, function()
    map(state.buf, 'n', '<C-c>', function()
      interrupt(state)
    end, 'louise: cancel the turn')
    map(state.buf, 'n', 'i', function()
      layout.focus_prompt(state, true)
    end, 'louise: type a prompt')
    map(state.buf, 'n', '<CR>', function()
      layout.follow(state, true)
    end, 'louise: open what the line points at, else go to the prompt')
    map(state.buf, 'n', 'gf', function()
      layout.follow(state)
    end, 'louise: open what the tool line points at')
    map(state.buf, 'n', 'za', function()
      toggle(state)
    end, 'louise: show or hide the details of the tool call under the cursor')
    map(state.buf, 'n', ']]', function()
      M.jump_message(state, true)
    end, 'louise: next message')
    map(state.buf, 'n', '[[', function()
      M.jump_message(state, false)
    end, 'louise: previous message')
    map(state.buf, 'n', 'g?', M.show_keys, "louise: the chat's keys")
  end)
  -- Completion of /commands and @paths in the prompt.
  vim.bo[state.prompt].omnifunc = "v:lua.require'louise.chat'.omnifunc"
end

return M
