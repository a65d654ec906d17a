-- Collecting a turn's Lua garbage once the turn is over (see collect_after_turn).
local M = {}

local chat = require('louise.chat')

-- A turn's frames leave Neovim's Lua heap their garbage (a burst: megabytes of chunk
-- strings). LuaJIT collects only as Lua allocates, so an idle Neovim keeps that debt and
-- the next turn's first frames paid it: a collection of several ms before its first chunk
-- reached the screen (bench/stream.py paced_big). Once a turn is over, one collection
-- cycle runs here in slices of at most GC_SLICE_NS, every GC_PAUSE_MS, while nothing
-- streams.
M.GC_SLICE_NS = 1e6
M.GC_PAUSE_MS = 10
M.GC_MAX_SLICES = 300

local collecting = false

local function any_busy()
  for _, state in pairs(chat.chats) do
    if chat.busy(state) then
      return true
    end
  end
  return false
end

--- Run one garbage collection cycle in slices, now that a turn is over.
function M.collect_after_turn()
  if collecting then
    return
  end
  collecting = true
  local slices = 0
  local function slice()
    slices = slices + 1
    if any_busy() or slices > M.GC_MAX_SLICES then
      collecting = false -- a turn streams: its frames come first
      return
    end
    local deadline = vim.uv.hrtime() + M.GC_SLICE_NS
    repeat
      if collectgarbage('step', 0) then -- true: the cycle is complete
        collecting = false
        return
      end
    until vim.uv.hrtime() >= deadline
    vim.defer_fn(slice, M.GC_PAUSE_MS)
  end
  vim.defer_fn(slice, M.GC_PAUSE_MS)
end

return M
