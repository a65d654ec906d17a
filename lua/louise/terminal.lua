-- Agent terminals as real Neovim terminal buffers (colours and cursor movement render
-- as in a shell). Output arrives coalesced per frame and already filtered by the engine
-- (louise/nvim/terminal_filter.py: no OSC, DCS, … reaches the emulator; newlines are
-- CR LF). louise's own lines are not terminal text, so output cannot forge them: the
-- command is drawn over the terminal's first line (a blank one louise writes) and the
-- exit status is a virtual line below the output. The engine releases a chat's oldest
-- terminals (louise/nvim/terminals.py); closing the chat releases all of them.
local M = { terms = {}, latest = {} }
local api = vim.api
local NS = api.nvim_create_namespace('louise.terminal')
-- The command's line covers the whole first row: output moved up there cannot show
-- beside it.
local ROW_WIDTH = 512

local function ensure(id, entry)
  local t = M.terms[id]
  if t and api.nvim_buf_is_valid(t.buf) then
    return t
  end
  local buf = api.nvim_create_buf(false, true)
  local chan = api.nvim_open_term(buf, {})
  if type(entry.scrollback) == 'number' then
    vim.bo[buf].scrollback = entry.scrollback
  end
  pcall(api.nvim_buf_set_name, buf, 'louise-term://' .. id)
  api.nvim_chan_send(chan, '\r\n') -- the first row, where the command is drawn
  t = { buf = buf, chan = chan, key = entry.key }
  M.terms[id] = t
  if entry.key and entry.key ~= vim.NIL then
    M.latest[entry.key] = id
  end
  return t
end

local function show_command(t)
  -- The command is the agent's: shown, never interpreted by the terminal.
  local text = '$ ' .. require('louise.text').line(t.command)
  local pad = math.max(ROW_WIDTH - api.nvim_strwidth(text), 0)
  t.command_mark = api.nvim_buf_set_extmark(t.buf, NS, 0, 0, {
    id = t.command_mark,
    virt_text = { { text, 'LouiseTerminal' }, { string.rep(' ', pad), 'Normal' } },
    virt_text_pos = 'overlay',
    invalidate = true, -- the first row left the scrollback: so did the command's line
  })
end

local function exit_text(exit)
  local code = exit.exitCode
  if code ~= nil and code ~= vim.NIL then
    return 'exit ' .. tostring(code)
  end
  return 'signal ' .. require('louise.text').line(exit.signal)
end

--- The exit status below the last line of output. Neovim writes what the terminal
--- received into the buffer a moment later (a timer), so it is placed again after
--- every change of the buffer.
local function show_exit(t)
  t.exit_due = false
  if not api.nvim_buf_is_valid(t.buf) then
    return
  end
  local last = api.nvim_buf_line_count(t.buf)
  while last > 1 and api.nvim_buf_get_lines(t.buf, last - 1, last, false)[1] == '' do
    last = last - 1
  end
  t.exit_mark = api.nvim_buf_set_extmark(t.buf, NS, last - 1, 0, {
    id = t.exit_mark,
    virt_lines = { { { '[' .. exit_text(t.exit) .. ']', 'LouiseTerminal' } } },
  })
end

local function exited(t, exit)
  t.exit = exit
  show_exit(t)
  if t.follows then
    return
  end
  t.follows = true
  api.nvim_buf_attach(t.buf, false, {
    on_lines = function()
      if M.terms[t.id] ~= t then
        return true -- released: stop listening
      end
      if not t.exit_due then
        t.exit_due = true
        vim.schedule(function()
          show_exit(t)
        end)
      end
    end,
  })
end

--- Neovim lets go of a terminal: its buffer is wiped (once no window shows it).
local function release(id)
  local t = M.terms[id]
  if not t then
    return
  end
  M.terms[id] = nil
  if M.latest[t.key] == id then
    M.latest[t.key] = nil
  end
  if not api.nvim_buf_is_valid(t.buf) then
    return
  end
  if #vim.fn.win_findbuf(t.buf) > 0 then
    vim.bo[t.buf].bufhidden = 'wipe' -- on screen: it goes when its window does
  else
    pcall(api.nvim_buf_delete, t.buf, { force = true })
  end
end

--- { [terminal_id] = { key, data?, command?, exit?, scrollback? } or { key, release } }
--- from one frame.
function M.update(terms)
  for id, entry in pairs(terms) do
    if entry.release then
      release(id)
    else
      local t = ensure(id, entry)
      t.id = id
      if entry.command and entry.command ~= vim.NIL then
        t.command = entry.command
        show_command(t)
      end
      if entry.data and entry.data ~= vim.NIL and #entry.data > 0 then
        api.nvim_chan_send(t.chan, entry.data)
      end
      if entry.exit and entry.exit ~= vim.NIL then
        exited(t, entry.exit)
      end
    end
  end
end

--- The chat closed: its terminals go with it.
function M.release_chat(key)
  for id, t in pairs(M.terms) do
    if t.key == key then
      release(id)
    end
  end
  M.latest[key] = nil
end

--- louise's own lines of a terminal, as shown: { command = '$ …', exit = '[exit 0]' }.
function M.markers(id)
  local t = M.terms[id]
  local out = {}
  if not t or not api.nvim_buf_is_valid(t.buf) then
    return out
  end
  for _, mark in ipairs(api.nvim_buf_get_extmarks(t.buf, NS, 0, -1, { details = true })) do
    local details = mark[4]
    if mark[1] == t.command_mark and details.virt_text then
      out.command = details.virt_text[1][1]
      out.command_row = mark[2]
    elseif mark[1] == t.exit_mark and details.virt_lines then
      out.exit = details.virt_lines[1][1][1]
      out.exit_row = mark[2]
    end
  end
  return out
end

function M.open(id)
  local t = id and M.terms[id]
  if not t or not api.nvim_buf_is_valid(t.buf) then
    require('louise.notice').notify("louise: that terminal's output is not kept (a chat keeps only its newest terminals)",
      vim.log.levels.INFO)
    return
  end
  local wins = vim.fn.win_findbuf(t.buf)
  if #wins > 0 then
    api.nvim_set_current_win(wins[1])
    return
  end
  -- Beside the chat, not a full-width split under it: closing it leaves the chat as it was.
  require('louise.chat.placement').side_split(15)
  api.nvim_win_set_buf(0, t.buf)
end

--- :LouiseTerminal: the current chat's latest terminal.
function M.open_latest()
  local chat = require('louise.chat').current()
  local id = chat and M.latest[chat.key]
  if not id then
    require('louise.notice').notify('louise: no agent terminal in this chat yet', vim.log.levels.INFO)
    return
  end
  M.open(id)
end

return M
