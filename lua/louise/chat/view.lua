-- The transcript's windows around the engine's frames (buffer.lua changes the text):
-- windows whose cursor is on the last line follow the tail, a window scrolled up says
-- when new output is below it, thoughts are folded, the wait line sits under the last
-- line, and a chat holding a line cut into pieces scrolls smoothly.
local chat = require('louise.chat')

local M = {}

local api = vim.api

-- Keys the person typed or clicked (`<C-e>`, the mouse wheel may scroll a window that
-- follows the tail): counted, so that the next frame measures those windows again.
-- (Reading a window's top line before a frame would cost Neovim a measure of it: 20-50
-- µs, as much as the check saves.)
M.keys = 0
vim.on_key(function()
  M.keys = M.keys + 1
end, api.nvim_create_namespace('louise_view_keys'))

--- The windows of a transcript whose cursor is on its last line (taken before a frame's
--- ops: only they follow the tail). `wins`: its windows, when the caller has them.
--- `state`: its chat, whose windows' bottom checks (see wait_tail) stay valid only while
--- nothing else moved their view since the last frame.
function M.on_tail(buf, wins, state)
  local follow = {}
  local last = api.nvim_buf_line_count(buf)
  local bottoms = state and state.bottoms
  for _, win in ipairs(wins or chat.windows_of(buf)) do
    if api.nvim_win_get_cursor(win)[1] >= last then
      table.insert(follow, win)
      local seen = bottoms and bottoms[win]
      -- The view as the last frame left it (no key since, the same size), else it is
      -- checked again. (A winbar shown or hidden changes its rows of text, not its height:
      -- that waits for the next check, at most BOTTOM_RECHECK frames later.)
      if seen and (seen.lines ~= last or seen.keys ~= M.keys
          or api.nvim_win_get_height(win) ~= seen.height) then
        bottoms[win] = nil
      end
    elseif bottoms then
      bottoms[win] = nil
    end
  end
  return follow
end

--- After a frame's ops: the windows that were on the tail are on it again, the cursor at
--- the end of the last line (a line taller than the window shows its tail).
function M.follow(state, follow)
  local buf = state.buf
  local last = api.nvim_buf_line_count(buf)
  local tail = math.max(api.nvim_buf_get_offset(buf, last) - api.nvim_buf_get_offset(buf, last - 1) - 1, 0)
  for _, win in ipairs(follow) do
    pcall(api.nvim_win_set_cursor, win, { last, tail })
  end
end

--- After a frame's ops (and the windows' following): the wait line moves under the new
--- last line, a window scrolled up learns whether output is below it, new thoughts fold.
function M.after_frame(state, follow, ops, wins)
  local buf = state.buf
  wins = wins or chat.windows_of(buf)
  if state.wait_mark then
    M.wait_tail(state, wins, follow) -- under the new last line
  end
  -- A window scrolled up does not follow; its winbar says when its tail is off screen.
  if #follow < #wins and M.grows(ops) then
    local last = api.nvim_buf_line_count(buf)
    local shown = state.below_shown
    state.below = true
    local now = false
    for _, win in ipairs(wins) do
      now = now or vim.fn.line('w$', win) < last
    end
    if now ~= shown then
      state.below_shown = now
      chat.refresh_winbar(state)
    end
  end
  if state.needs_fold or state.fold_pending then
    state.bottoms = nil -- a fold changes the heights the checks counted
    for _, win in ipairs(wins) do
      M.fold_thoughts(state, win)
    end
  end
end

--- A chat holding a line cut into pieces: its windows scroll smoothly, so a piece taller
--- than the window may start above it and the tail of the one before the newest stays in
--- view ('smoothscroll' doubles Neovim's redraw cost while streaming: only these chats).
function M.long_lines(state)
  if state.long_lines then
    return
  end
  state.long_lines = true
  for _, win in ipairs(chat.windows_of(state.buf)) do
    vim.wo[win].smoothscroll = true
  end
end

local WAIT_NS = api.nvim_create_namespace('louise_wait')
local TAIL_SHOWN = { starting = true, prompting = true, cancelling = true }
local NO_OPTS = {}

-- A window following the tail is measured (M.at_bottom, or `zb`) at least once every this
-- many frames; the frames between are the ones whose result is known without measuring.
M.BOTTOM_RECHECK = 8

--- Before a frame's cursor follows the tail: a wait line under a last row that text was
--- streamed onto goes above that row for the moment, so that the cursor's scroll counts
--- it, as it counts it above rows added below it (wait_tail moves it back under the last
--- row and knows the window shows it then, without measuring or `zb`).
function M.lift_wait(state, follow)
  local mark = state.wait_mark
  if not mark or #follow == 0 or not state.appended_only or state.long_lines
      or not state.wait_text then
    return
  end
  local buf = state.buf
  local last = api.nvim_buf_line_count(buf) - 1
  if last > 0 and api.nvim_buf_get_extmark_by_id(buf, WAIT_NS, mark, NO_OPTS)[1] == last then
    api.nvim_buf_set_extmark(buf, WAIT_NS, last - 1, 0, {
      id = mark,
      virt_lines = { { { state.wait_text, 'Comment' } } },
      right_gravity = false,
    })
  end
end

--- The transcript's tail says how long the agent has been starting or working, and its
--- last note, as a virtual line under the last line (never text of the buffer). `wins`:
--- its windows, when the caller has them; `followed`: the windows whose cursor a frame
--- just put on the last line (view.follow).
function M.wait_tail(state, wins, followed)
  local buf = state.buf
  if not api.nvim_buf_is_valid(buf) then
    return
  end
  local status = state.status or {}
  if state.since == nil or not TAIL_SHOWN[status.status or 'starting'] then
    if state.wait_mark then
      pcall(api.nvim_buf_del_extmark, buf, WAIT_NS, state.wait_mark)
      state.wait_mark, state.wait_text, state.bottoms = nil, nil, nil
    end
    return
  end
  local words = require('louise.chat.winbar').turn_words(state)
  if chat.present(status.note) then
    words = words .. ' · ' .. require('louise.text').line(status.note)
  end
  local text = '… ' .. words
  local last = api.nvim_buf_line_count(buf) - 1
  wins = wins or chat.windows_of(buf)
  -- Where the mark was: rows added below it since (it stays put, see right_gravity) were
  -- under it when the frame's cursor scrolled into view, so it was counted.
  local row = state.wait_mark and api.nvim_buf_get_extmark_by_id(buf, WAIT_NS, state.wait_mark, NO_OPTS)[1]
  local grew = row ~= nil and row < last and state.appended_only
  local bottoms = state.bottoms
  -- ('scrolljump' above one scrolls further than `zb` would: measured every frame.)
  local known = grew and bottoms and followed and not state.long_lines and vim.o.scrolljump == 1
  -- Moving the mark (or changing its text) makes Neovim measure the window again when it
  -- draws: not done when it is already there with these words.
  if row ~= last or text ~= state.wait_text then
    state.wait_mark = api.nvim_buf_set_extmark(buf, WAIT_NS, last, 0, {
      id = state.wait_mark,
      virt_lines = { { { text, 'Comment' } } },
      -- Text streamed onto the last row goes below the mark: when the next frame's cursor
      -- scrolls into view, the line is still above the cursor's and counted, so moving it
      -- down again leaves the window full without `zb` (see below).
      right_gravity = false,
    })
    state.wait_text = text
  end
  -- A window that follows the tail shows the line too: Neovim scrolls for the cursor's
  -- line, not for the virtual line under it (`zb` does; the cursor stays where it is).
  for _, win in ipairs(wins) do
    if api.nvim_win_get_cursor(win)[1] > last then
      local height = api.nvim_win_get_height(win)
      local width = api.nvim_win_get_width(win)
      local seen = bottoms and bottoms[win]
      if known and seen and seen.height == height and seen.width == width
          and seen.frames < M.BOTTOM_RECHECK and vim.tbl_contains(followed, win) then
        -- The window showed the wait line after the last frame, only rows were added at
        -- the end since, and the cursor scrolled them into view counting the wait line
        -- above them: with the line moved under them the window shows what `zb` would.
        seen.lines, seen.frames = last + 1, seen.frames + 1
      else
        -- Taller than the window (a short transcript is measured; a long one is, surely).
        if (last + 2 > height or api.nvim_win_text_height(win, {}).all > height)
            and not M.at_bottom(state, win) then
          api.nvim_win_call(win, function()
            vim.cmd('normal! zb')
          end)
        end
        if not state.long_lines then
          state.bottoms = state.bottoms or {}
          bottoms = state.bottoms
          bottoms[win] = { lines = last + 1, height = height, width = width, keys = M.keys,
            frames = 0 }
        end
      end
    elseif bottoms then
      bottoms[win] = nil
    end
  end
end

--- Whether the window already shows what `zb` would: its top line and everything below it
--- down to the wait line fit, and the line above the top would not (`zb` on every frame
--- was a third of a streamed frame's Lua, ~75 µs, its :normal machinery most of it). A
--- window scrolling smoothly (a line cut into pieces, a top line shown in part) is left
--- to `zb`.
function M.at_bottom(state, win)
  if state.long_lines then
    return false
  end
  local height = vim.fn.winheight(win) -- the text's rows (nvim_win_get_height counts a winbar)
  local top = vim.fn.line('w0', win)
  local below = api.nvim_win_text_height(win, { start_row = top - 1 }).all
  if below > height then
    return false
  end
  return top == 1
    or below + api.nvim_win_text_height(win, { start_row = top - 2, end_row = top - 2 }).all > height
end

--- Whether a frame's ops add output at the end (streamed text, a new block, a reset).
function M.grows(ops)
  for _, op in ipairs(ops) do
    if op[1] == 'text' or op[1] == 'block' or op[1] == 'reset' then
      return true
    end
  end
  return false
end

--- Put the transcript's windows at its end, following new output again (a prompt was
--- just sent: its turn is what the person wants to see).
function M.scroll_to_end(state)
  if not api.nvim_buf_is_valid(state.buf) then
    return
  end
  local last = api.nvim_buf_line_count(state.buf)
  for _, win in ipairs(chat.windows_of(state.buf)) do
    pcall(api.nvim_win_set_cursor, win, { last, 0 })
  end
  if state.below then
    state.below = false
    chat.refresh_winbar(state)
  end
end

--- Thoughts are folded by default (zo opens one).
function M.fold_thoughts(state, win)
  if chat.options().fold_thoughts == false then
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
  -- Required here, not at the top: buffer.lua requires this module as it loads.
  local block_range = require('louise.chat.buffer').block_range
  api.nvim_win_call(win, function()
    for _, id in ipairs(ids) do
      local start, stop = block_range(state, id)
      if start and stop - start > 2 then
        pcall(vim.cmd, ('%d,%dfold'):format(start + 2, stop))
      end
    end
  end)
end

return M
