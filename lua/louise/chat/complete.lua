-- Completion in the prompt (omnifunc, <C-x><C-o>): the agent's /commands and @paths.
local chat = require('louise.chat')
local text = require('louise.text')

local M = {}

local api = vim.api
local MAX_PATHS = 200

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
  local state = chat.by_buf[api.nvim_get_current_buf()]
  local items = {}
  if base:sub(1, 1) == '/' and state and state.status and chat.present(state.status.commands) then
    for _, name in ipairs(state.status.commands) do
      local item = '/' .. text.line(name)
      if item:sub(1, #base) == base then
        table.insert(items, item)
      end
    end
  elseif base:sub(1, 1) == '@' then
    local prefix = base:sub(2)
    for _, path in ipairs(vim.fn.glob(prefix .. '*', false, true)) do
      table.insert(items, '@' .. path)
      if #items >= MAX_PATHS then
        break
      end
    end
  end
  return items
end

return M
