-- The permission float's fitting of words to a width: a line cut with "…", and the
-- float's title (who asks) fitted to its border.
local M = {}
local text = require('louise.text')

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

--- `line` cut to `width` columns, `…` saying so: a diff line in the preview does not
--- wrap (`d` shows it whole).
function M.cut(line, width)
  if vim.fn.strdisplaywidth(line) <= width then
    return line
  end
  local out = vim.fn.strcharpart(line, 0, math.max(width - 1, 0))
  while vim.fn.strdisplaywidth(out) > width - 1 and out ~= '' do
    out = vim.fn.strcharpart(out, 0, vim.fn.strchars(out) - 1)
  end
  return out .. '…'
end

--- The float's title in words, fitted to its border (`width` columns less the corners):
--- ` louise · demo 1 asks · <the session's name> `; on a narrow float the name is cut,
--- then left out, then "louise ·", then the asker is cut.
function M.title(req, width)
  local ok, chat = pcall(require, 'louise.chat')
  local state = ok and present(req.session) and chat.chats[req.session] or nil
  local room = width - 2
  local who = state and ('%s %d'):format(text.line(state.agent), state.n)
    or (present(req.agent) and text.line(req.agent)) or ''
  if who == '' then
    return M.cut(' louise · permission ', room)
  end
  local function wide(s)
    return vim.fn.strdisplaywidth(s)
  end
  local title = ' louise · ' .. who .. ' asks '
  local name = state and state.status and state.status.title
  if present(name) and name ~= '' then
    local left = room - wide(title .. '·  ')
    if left >= 8 then -- the name cut to what is left, if enough of it shows
      return title .. '· ' .. M.cut(text.line(name), left) .. ' '
    end
  end
  if wide(title) <= room then
    return title
  end
  local left = room - wide('  asks ')
  if left >= 8 then -- who asks matters more than "louise"
    return (' %s asks '):format(M.cut(who, left))
  end
  return M.cut(' ' .. who .. ' asks ', room)
end

return M
