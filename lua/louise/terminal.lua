-- Agent terminals as real Neovim terminal buffers (colours and cursor movement render
-- as in a shell). Output arrives coalesced per frame; kept after release.
local M = { terms = {}, latest = {} }
local api = vim.api

local function ensure(id, entry)
  local t = M.terms[id]
  if t and api.nvim_buf_is_valid(t.buf) then
    return t
  end
  local buf = api.nvim_create_buf(false, true)
  local chan = api.nvim_open_term(buf, {})
  pcall(api.nvim_buf_set_name, buf, 'louise-term://' .. id)
  t = { buf = buf, chan = chan, key = entry.key, command = entry.command }
  M.terms[id] = t
  if entry.key and entry.key ~= vim.NIL then
    M.latest[entry.key] = id
  end
  return t
end

--- { [terminal_id] = { key, data, command?, exit? } } from one frame.
function M.update(terms)
  for id, entry in pairs(terms) do
    local t = ensure(id, entry)
    if entry.command and entry.command ~= vim.NIL then
      t.command = entry.command
      -- The command is the agent's: shown, never interpreted by the terminal.
      local command = require('louise.text').line(entry.command)
      api.nvim_chan_send(t.chan, '\27[2m$ ' .. command .. '\27[0m\r\n')
    end
    if entry.data and entry.data ~= vim.NIL and #entry.data > 0 then
      api.nvim_chan_send(t.chan, (entry.data:gsub('\r?\n', '\r\n')))
    end
    if entry.exit and entry.exit ~= vim.NIL then
      t.exit = entry.exit
      local code = entry.exit.exitCode
      local how = (code ~= nil and code ~= vim.NIL) and ('exit ' .. code) or ('signal ' .. tostring(entry.exit.signal))
      api.nvim_chan_send(t.chan, '\r\n\27[2m[' .. how .. ']\27[0m\r\n')
    end
  end
end

function M.open(id)
  local t = id and M.terms[id]
  if not t or not api.nvim_buf_is_valid(t.buf) then
    vim.notify('louise: that terminal has no output here', vim.log.levels.INFO)
    return
  end
  local wins = vim.fn.win_findbuf(t.buf)
  if #wins > 0 then
    api.nvim_set_current_win(wins[1])
    return
  end
  vim.cmd('botright 15split')
  api.nvim_win_set_buf(0, t.buf)
end

--- :LouiseTerminal: the current chat's latest terminal.
function M.open_latest()
  local chat = require('louise.chat').current()
  local id = chat and M.latest[chat.key]
  if not id then
    vim.notify('louise: no agent terminal in this chat yet', vim.log.levels.INFO)
    return
  end
  M.open(id)
end

return M
