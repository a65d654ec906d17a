-- Chats: a read-only transcript buffer fed by the engine's frame batches, and a separate
-- prompt buffer below it, so streaming never touches what the person types (cursor, text
-- or undo history).
--
-- `require('louise.chat')` is the facade: it holds the chats of this Neovim and routes
-- every other function to the module that implements it, loaded on first use (sourcing
-- the plugin, or a statusline asking for the current chat, loads none of them):
--   chat/buffer.lua    the transcript buffer: frame ops, blocks, details
--   chat/view.lua      its windows around a frame: follow the tail, folds, the wait line
--   chat/lifecycle.lua the quit guard, read-only after a failed frame, closed, the Python
--                      side died or was replaced
--   chat/layout.lua    windows: open, reuse, focus, follow-along
--   chat/keys.lua      the chat's keys, g? lists them
--   chat/placement.lua where the windows go (setup{layout}), one unit, :LouiseToggle,
--                      side views
--   chat/starting.lua  the placeholder chat shown while its agent starts
--   chat/winbar.lua    the header: turn state, names, limits, background sessions
--   chat/context.lua   the prompt: context chips, submit, cancel
--   chat/pickers.lua   vim.ui.select pickers and read-only text views
--   chat/complete.lua  omnifunc for /commands and @paths
local M = {
  chats = {}, -- key -> chat state (see buffer.create)
  by_buf = {}, -- transcript or prompt buffer -> chat state
  counter = 0,
  last = nil, -- key of the chat used last
  entered = nil, -- key of the chat or placeholder opened or gone into last (see M.enter)
  asked = nil, -- where the person was when they last asked for a chat (see M.ask)
  click_targets = {}, -- winbar click id -> session key
}

local api = vim.api

local ROUTES = {
  buffer = { 'create', 'apply_ops', 'markdown', 'block_at', 'toggle_details', 'markdown_finish' },
  view = { 'fold_thoughts', 'scroll_to_end' },
  lifecycle = { 'busy', 'lock_all', 'closed', 'engine_died', 'reattach_all' },
  idle_gc = { 'collect_after_turn' },
  layout = { 'open', 'focus_prompt', 'autocmds', 'follow', 'name', 'side_window' },
  keys = { 'keymaps', 'show_keys', 'send' },
  winbar = { 'winbar', 'set_status', 'refresh_winbar', 'refresh_all_winbars', 'click_session' },
  context = { 'add', 'drop', 'submit', 'cancel', 'refresh_prompt_bar' },
  pickers = { 'pick', 'pick_agent', 'pick_mode', 'pick_option', 'show_picker',
    'show_text' },
  complete = { 'omnifunc' },
}
local MODULE_OF = {}
for module, names in pairs(ROUTES) do
  for _, name in ipairs(names) do
    MODULE_OF[name] = module
  end
end

setmetatable(M, {
  __index = function(t, name)
    local module = MODULE_OF[name]
    if not module then
      return nil
    end
    local fn = require('louise.chat.' .. module)[name]
    rawset(t, name, fn)
    return fn
  end,
})

-- ------------------------------------------------------------------ shared helpers

function M.present(value)
  return value ~= nil and value ~= vim.NIL
end

function M.options()
  return require('louise').options or {}
end

function M.windows_of(buf)
  local wins = {}
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == buf then
      table.insert(wins, win)
    end
  end
  return wins
end

--- A chat, or a placeholder (chat/starting.lua), was opened or gone into: a session's
--- chat is now the last chat; a placeholder becomes it once its session is ready.
function M.enter(state)
  M.entered = state.key
  if not state.pending then
    M.last = state.key
  end
end

--- Where the person is: their window and its buffer.
function M.here()
  return { win = api.nvim_get_current_win(), buf = api.nvim_get_current_buf() }
end

--- The person asks for a chat to open (`where`, default `M.here()`; false: the answer
--- may not focus it): every command the engine answers by opening a chat asks as it is
--- sent (engine.lua); a command that shows the chat at once says so after. The answer
--- focuses the chat only if they are still there (`M.may_focus`): one that comes late
--- never pulls them from where they went.
function M.ask(where)
  if where == false then
    M.asked = nil
  else
    M.asked = where or M.here()
  end
end

--- `engine.send(command, args)` from a picker's or a click's callback, once the picker has
--- given the cursor back (some call back before closing): it asks from there.
function M.send_later(command, args)
  vim.schedule(function()
    require('louise.engine').send(command, args)
  end)
end

--- Whether the engine's answer opening a chat may focus it: the person is still in the
--- window and buffer they asked from (one ask, one focus).
function M.may_focus()
  local asked = M.asked
  if asked and asked.win == api.nvim_get_current_win()
      and asked.buf == api.nvim_get_current_buf() then
    M.asked = nil
    return true
  end
  return false
end

--- The chat of the current buffer, else the one used last (cheap: the statusline asks).
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

return M
