-- A chat's life beside its frames: the quit guard while its session works, every
-- transcript read-only after a failed frame, a chat closed, every chat told when the
-- Python side died, and handed to a new one (the agent replays their history).
local chat = require('louise.chat')

local M = {}

local api = vim.api
local present = chat.present

local BUSY = { prompting = true, waiting_permission = true, cancelling = true }

--- Whether the session works or waits for the person (closing it loses that).
function M.busy(state)
  return BUSY[state.status and state.status.status or ''] == true
end

--- The quit guard: the transcript counts as modified exactly while its session works or
--- waits for a permission, and the prompt while it holds unsent text, so `:qa` refuses
--- (E37/E162) as for any unsaved buffer and `:qa!` quits anyway.
function M.guard(state)
  local buf, busy = state.buf, M.busy(state)
  if api.nvim_buf_is_valid(buf) and api.nvim_get_option_value('modified', { buf = buf }) ~= busy then
    api.nvim_set_option_value('modified', busy, { buf = buf }) -- on a change only: a set redraws status lines
  end
end

--- Every transcript read-only (after a failed frame, whatever it left behind).
function M.lock_all()
  for _, state in pairs(chat.chats) do
    if api.nvim_buf_is_valid(state.buf) then
      vim.bo[state.buf].modifiable = false
    end
  end
end

function M.closed(key)
  local state = chat.chats[key]
  if not state then
    require('louise.chat.starting').drop(key) -- a placeholder no session took
    return
  end
  chat.chats[key] = nil
  require('louise.chat.markdown').detach(state.buf)
  for _, buf in ipairs({ state.buf, state.prompt }) do
    chat.by_buf[buf] = nil
    if api.nvim_buf_is_valid(buf) then
      pcall(api.nvim_buf_delete, buf, { force = true })
    end
  end
  if chat.last == key then
    chat.last = nil
  end
end

--- The Python side died: every chat shows it; returns how many chats are open.
function M.engine_died()
  local open = 0
  for _, state in pairs(chat.chats) do
    state.status = vim.tbl_extend('force', state.status or {}, {
      status = 'error',
      error = 'the louise Python side exited',
    })
    if api.nvim_buf_is_valid(state.buf) then
      open = open + 1
      chat.refresh_winbar(state)
    end
  end
  return open
end

--- A new Python side takes over the open chats (the agent replays their history).
function M.reattach_all()
  for key, state in pairs(chat.chats) do
    if api.nvim_buf_is_valid(state.buf) then
      local status = state.status or {}
      require('louise.engine').send('reattach', {
        key = key,
        agent = state.agent,
        cwd = present(status.cwd) and status.cwd or vim.fn.getcwd(),
        name = type(status.title) == 'string' and status.title or nil,
      })
    end
  end
end

return M
