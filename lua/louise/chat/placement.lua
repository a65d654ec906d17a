-- Where a chat's windows go and how they hold: the transcript and its prompt are one unit,
-- placed as setup{ layout = 'right' | 'left' | 'bottom' | 'float' | 'tab' } says, sized by
-- setup{ width, height } (columns or lines, or a fraction of the editor); closing either
-- window closes the other, other windows closing (a tool's terminal) give the prompt its
-- height back, :LouiseToggle hides and shows the unit, and what a chat opens beside itself
-- (logs, lists, terminals) goes where it can be read: a window at least MIN_SIDE_WIDTH
-- wide, else a new tab.
local chat = require('louise.chat')

local M = {}

local api = vim.api

M.MIN_SIDE_WIDTH = 40

local function layout()
  return chat.options().layout or 'right'
end

--- `value` (a count, or a fraction of `total` below 1) as a count.
local function measure(value, total, default)
  value = type(value) == 'number' and value or default
  if value < 1 then
    value = math.floor(total * value)
  end
  return math.floor(value)
end

--- The chat column's width (layout right or left): setup{width}, leaving the rest of the
--- editor at least 20 columns (what louise opens beside a chat goes to a new tab when
--- the rest is narrower than MIN_SIDE_WIDTH: see side_window).
function M.width()
  local columns = vim.o.columns
  local want = measure(chat.options().width, columns, 80)
  return math.max(math.min(want, columns - 21), 20)
end

--- The chat's height (layout bottom): setup{height}, else 40 % of the editor.
function M.height()
  local lines = vim.o.lines - vim.o.cmdheight - 1
  local options = chat.options()
  local want = measure(options.height, lines, 0.4)
  return math.max(math.min(want, lines - 8), (options.prompt_height or 6) + 4)
end

--- Whether `win` is one of a chat's own floats (layout float).
function M.chat_float(win)
  return vim.w[win].louise_chat_float == true
end

--- A new window for the chat's transcript, current, showing `buf` (the prompt is made
--- below it by the caller, except for a float, where `pwin` is returned too).
function M.create(state)
  local kind = layout()
  if kind == 'float' then
    return M.float_pair(state)
  end
  if kind == 'left' then
    vim.cmd(('topleft vertical %dsplit'):format(M.width()))
  elseif kind == 'bottom' then
    vim.cmd(('botright %dsplit'):format(M.height()))
  elseif kind == 'tab' then
    vim.cmd('tabnew')
    vim.bo.bufhidden = 'wipe' -- the tab's empty buffer goes when the chat takes its window
  else
    vim.cmd(('botright vertical %dsplit'):format(M.width()))
  end
  local win = api.nvim_get_current_win()
  api.nvim_win_set_buf(win, state.buf)
  return win, nil
end

--- layout = 'float': the transcript and the prompt as two floats, centred, one above the
--- other.
function M.float_pair(state)
  local options = chat.options()
  local columns, lines = vim.o.columns, vim.o.lines - vim.o.cmdheight - 1
  local width = math.max(math.min(measure(options.width, columns, 0.8), columns - 4), 20)
  local total = math.max(math.min(measure(options.height, lines, 0.8), lines - 2), 10)
  local prompt_height = math.min(options.prompt_height or 6, math.floor(total / 3))
  local height = math.max(total - prompt_height - 4, 3) -- two borders each
  local row = math.max(math.floor((lines - (height + prompt_height + 4)) / 2), 0)
  local col = math.max(math.floor((columns - width - 2) / 2), 0)
  local common = { relative = 'editor', width = width, col = col, border = 'rounded',
    zindex = 40 }
  local win = api.nvim_open_win(state.buf, true, vim.tbl_extend('force', common,
    { row = row, height = height }))
  local pwin = api.nvim_open_win(state.prompt, false, vim.tbl_extend('force', common,
    { row = row + height + 2, height = prompt_height }))
  vim.w[win].louise_chat_float = true
  vim.w[pwin].louise_chat_float = true
  return win, pwin
end

--- The transcript and prompt windows back to their sizes (after the terminal was resized,
--- or another window of the tab closed and left its room to them).
function M.restore(win, pwin)
  local kind = layout()
  if win and api.nvim_win_is_valid(win) and not M.chat_float(win) then
    if (kind == 'right' or kind == 'left') and api.nvim_win_get_width(win) < vim.o.columns then
      pcall(api.nvim_win_set_width, win, M.width())
    end
  end
  if pwin and api.nvim_win_is_valid(pwin) and not M.chat_float(pwin) then
    pcall(api.nvim_win_set_height, pwin, chat.options().prompt_height or 6)
  end
end

--- The windows of this tab showing the chat's transcript or prompt (its floats too).
function M.windows(state)
  local wins = {}
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    local buf = api.nvim_win_get_buf(win)
    if (buf == state.buf or buf == state.prompt)
        and (api.nvim_win_get_config(win).relative == '' or M.chat_float(win)) then
      table.insert(wins, win)
    end
  end
  return wins
end

--- Close `wins`; the last window of the last tab cannot close: it shows an empty buffer.
local function close(wins)
  for _, win in ipairs(wins) do
    if api.nvim_win_is_valid(win) then
      local ok = pcall(api.nvim_win_close, win, false)
      if not ok and api.nvim_win_is_valid(win) then
        api.nvim_win_set_buf(win, api.nvim_create_buf(true, false))
      end
    end
  end
end

--- :LouiseToggle: the chat (this one, else the last) hidden when it is on screen in this
--- tab, shown (and focused) when not.
function M.toggle()
  local state = chat.current()
  if not state or not api.nvim_buf_is_valid(state.buf) then
    require('louise.notice').notify('louise: no chat to show; :LouiseChat opens one',
      vim.log.levels.INFO)
    return
  end
  local wins = M.windows(state)
  if #wins > 0 then
    close(wins)
    return
  end
  local hidden = not state.attached
  chat.open(state.key, state.agent, true)
  if hidden and not state.pending then
    require('louise.engine').send('attach', { key = state.key })
  end
end

--- A window was closed: the other half of its chat goes too (the chat is one unit), and
--- chats left on screen get their prompt's height back.
local function closed(buf)
  local state = chat.by_buf[buf]
  vim.schedule(function()
    if state and api.nvim_buf_is_valid(state.buf) then
      local wins = M.windows(state)
      local halves = {}
      for _, w in ipairs(wins) do
        halves[api.nvim_win_get_buf(w)] = true
      end
      if not (halves[state.buf] and halves[state.prompt]) then -- not made whole again
        close(wins)
      end
    end
    for _, other in pairs(chat.chats) do
      local wins = api.nvim_buf_is_valid(other.buf) and M.windows(other) or {}
      if #wins > 0 then
        local twin, pwin = nil, nil
        for _, w in ipairs(wins) do
          if api.nvim_win_get_buf(w) == other.buf then
            twin = w
          else
            pwin = w
          end
        end
        M.restore(twin, pwin)
      end
    end
  end)
end

api.nvim_create_autocmd('WinClosed', {
  group = api.nvim_create_augroup('louise_chat_unit', { clear = true }),
  callback = function(ev)
    closed(ev.buf)
  end,
})

-- The hint an empty window shows when the last chat closed and no file was there to go
-- back to (virtual text: the buffer is not changed, and the hint goes at the first edit).
local hint_ns = api.nvim_create_namespace('louise_closed_hint')
M.CLOSED_HINT = 'louise: chat closed · :LouiseChat opens one, :LouiseResume brings one back'

local function empty_unnamed(buf)
  return api.nvim_buf_is_valid(buf) and api.nvim_buf_get_name(buf) == ''
    and vim.bo[buf].buftype == '' and not vim.bo[buf].modified
    and api.nvim_buf_line_count(buf) == 1 and api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ''
end

--- A chat's buffers are gone: when that left this tab a single window on an empty unnamed
--- buffer, it goes back to the file buffer the person used last, else it says how to get
--- a chat back (virtual text, one line; never a message to press Enter at).
function M.after_close()
  local wins = {}
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_config(win).relative == '' then
      table.insert(wins, win)
    end
  end
  if #wins ~= 1 or not empty_unnamed(api.nvim_win_get_buf(wins[1])) then
    return
  end
  local win, empty = wins[1], api.nvim_win_get_buf(wins[1])
  local best, best_used = nil, -1
  for _, info in ipairs(vim.fn.getbufinfo({ buflisted = 1 })) do
    local buf = info.bufnr
    if buf ~= empty and info.name ~= '' and vim.bo[buf].buftype == '' and not chat.by_buf[buf]
        and info.lastused > best_used then
      best, best_used = buf, info.lastused
    end
  end
  if best then
    api.nvim_win_set_buf(win, best)
    return
  end
  api.nvim_buf_clear_namespace(empty, hint_ns, 0, -1)
  api.nvim_buf_set_extmark(empty, hint_ns, 0, 0, {
    virt_text = { { M.CLOSED_HINT, 'Comment' } }, virt_text_pos = 'overlay' })
  api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI', 'InsertEnter', 'BufLeave' }, {
    buffer = empty,
    once = true,
    callback = function()
      if api.nvim_buf_is_valid(empty) then
        api.nvim_buf_clear_namespace(empty, hint_ns, 0, -1)
      end
    end,
  })
end

--- A window of this tab at least MIN_SIDE_WIDTH wide for what the chat opens (files,
--- logs): the one used last when it is an ordinary one, else the widest; never a chat
--- window or a float, so the chat keeps its size. Without one, a new one where the tab
--- has room for it, else in a new tab. Returns the window and whether it was made for
--- this (then it shows an empty buffer that goes when replaced).
function M.side_window()
  local function ordinary(win)
    return api.nvim_win_is_valid(win) and api.nvim_win_get_config(win).relative == ''
      and not chat.by_buf[api.nvim_win_get_buf(win)]
      and api.nvim_win_get_tabpage(win) == api.nvim_get_current_tabpage()
      and api.nvim_win_get_width(win) >= M.MIN_SIDE_WIDTH
  end
  local under_float = false
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    under_float = under_float or M.chat_float(win)
  end
  local previous = vim.fn.win_getid(vim.fn.winnr('#'))
  if not under_float and previous ~= 0 and ordinary(previous) then
    return previous, false
  end
  local best, best_width = nil, -1
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    if not under_float and ordinary(win) and api.nvim_win_get_width(win) > best_width then
      best, best_width = win, api.nvim_win_get_width(win)
    end
  end
  if best then
    return best, false
  end
  local chat_columns, floating = 0, false
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_config(win).relative == '' and chat.by_buf[api.nvim_win_get_buf(win)] then
      chat_columns = math.max(chat_columns, api.nvim_win_get_width(win))
    end
    floating = floating or M.chat_float(win)
  end
  if floating then -- a window under the chat's floats could not be read: a tab of its own
    vim.cmd('tabnew')
  elseif layout() ~= 'tab' and vim.o.columns - chat_columns - 1 >= M.MIN_SIDE_WIDTH then
    vim.cmd('topleft vertical new')
  else
    vim.cmd('tabnew')
  end
  vim.bo.bufhidden = 'wipe'
  return api.nvim_get_current_win(), true
end

--- A window for a view the chat opens (a log, a list, a terminal), made current: a split
--- of the side window, or the side window itself when it was made for it.
function M.side_split(height)
  local win, fresh = M.side_window()
  api.nvim_set_current_win(win)
  if not fresh then
    vim.cmd(height and ('belowright %dsplit'):format(height) or 'belowright split')
  end
  return api.nvim_get_current_win()
end

return M
