-- Completion in the prompt: the agent's /commands (with their descriptions) and @paths.
-- One list of items serves the omnifunc (<C-x><C-o>), and the nvim-cmp and blink.cmp
-- sources (lua/louise/cmp.lua, lua/louise/blink.lua).
local chat = require('louise.chat')
local text = require('louise.text')

local M = {}

local api = vim.api
local MAX_PATHS = 200

--- The token being completed: where it starts (0-based byte column) and its text, when it
--- starts with / or @.
function M.token(line, col)
  local start = col
  while start > 0 and not line:sub(start, start):match('%s') do
    start = start - 1
  end
  local base = line:sub(start + 1, col)
  if base:sub(1, 1) ~= '/' and base:sub(1, 1) ~= '@' then
    return nil, nil
  end
  return start, base
end

--- Completion items for `base` in the prompt of `state`: { word, description, kind }
--- with kind 'command', 'file' or 'folder'.
function M.items(state, base)
  local items = {}
  if base:sub(1, 1) == '/' and state and state.status then
    local info = chat.present(state.status.command_info) and state.status.command_info or {}
    if #info == 0 and chat.present(state.status.commands) then
      for _, name in ipairs(state.status.commands) do
        table.insert(info, { name = name, description = '', hint = '' })
      end
    end
    for _, command in ipairs(info) do
      local word = '/' .. text.line(command.name)
      if word:sub(1, #base) == base then
        local description = text.line(command.description or '')
        local hint = text.line(command.hint or '')
        if hint ~= '' then
          description = description .. (description ~= '' and ' ' or '') .. '(' .. hint .. ')'
        end
        table.insert(items, { word = word, description = description, kind = 'command' })
      end
    end
  elseif base:sub(1, 1) == '@' then
    local prefix = base:sub(2)
    for _, path in ipairs(vim.fn.glob(prefix .. '*', false, true)) do
      -- A folder is not attached: it completes to `@dir/`, to go on into it.
      local folder = vim.fn.isdirectory(path) == 1
      table.insert(items, {
        word = '@' .. path .. (folder and '/' or ''),
        description = folder and 'folder: go on typing to pick a file in it' or 'attached when sent',
        kind = folder and 'folder' or 'file',
      })
      if #items >= MAX_PATHS then
        break
      end
    end
  end
  return items
end

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
  local out = {}
  for _, item in ipairs(M.items(state, base)) do
    table.insert(out, { word = item.word, menu = item.description, info = item.description,
      kind = ({ command = 'c', folder = 'd' })[item.kind] or 'f' })
  end
  return out
end

--- LSP-style completion items for the token before the cursor of the current buffer
--- (when it is a chat's prompt): what the nvim-cmp and blink.cmp sources return.
function M.lsp_items()
  local buf = api.nvim_get_current_buf()
  local state = chat.by_buf[buf]
  if not state or state.prompt ~= buf then
    return {}
  end
  local row, col = unpack(api.nvim_win_get_cursor(0))
  local start, base = M.token(api.nvim_get_current_line(), col)
  if not start then
    return {}
  end
  local KIND = { command = 3, file = 17, folder = 19 } -- LSP CompletionItemKind
  local out = {}
  for _, item in ipairs(M.items(state, base)) do
    table.insert(out, {
      label = item.word,
      kind = KIND[item.kind],
      detail = item.description ~= '' and item.description or nil,
      documentation = item.description ~= '' and item.description or nil,
      textEdit = {
        newText = item.word,
        range = {
          start = { line = row - 1, character = start },
          ['end'] = { line = row - 1, character = col },
        },
      },
    })
  end
  return out
end

return M
