-- The one boundary between strings an agent controls and buffer lines. A buffer line
-- cannot hold a newline (nvim_buf_set_lines fails on one: a heredoc in a command used to
-- keep the permission float from opening), and control characters (ESC, BEL, NUL, CR, …)
-- are shown as their visible Unicode pictures (␛ ␇ ␀ ␍) rather than as raw bytes. Tabs
-- stay. Every agent string that becomes a buffer line, float line, winbar item or picker
-- item goes through here.
local M = {}

local api = vim.api

-- Control characters but tab; in `line` newlines count too.
local CONTROL = '[%z\1-\8\11-\31\127]'
local CONTROL_OR_NL = '[%z\1-\8\10-\31\127]'

local PICTURES = {}
for byte = 0, 31 do
  -- U+2400 + byte, the "control pictures" block, in UTF-8.
  PICTURES[string.char(byte)] = string.char(0xE2, 0x90, 0x80 + byte)
end
PICTURES['\127'] = '\226\144\161' -- U+2421 ␡

local byte = string.byte

--- Whether `s` holds a control character other than tab (newlines count when
--- `newline`). A byte loop: LuaJIT compiles it, and it is ~20 times faster than a
--- pattern with a character class (streamed text comes through here every frame).
local function has_control(s, newline)
  for i = 1, #s do
    local b = byte(s, i)
    if b < 32 then
      if b ~= 9 and (newline or b ~= 10) then
        return true
      end
    elseif b == 127 then
      return true
    end
  end
  return false
end

local function str(value)
  if value == nil or value == vim.NIL then
    return ''
  end
  return type(value) == 'string' and value or tostring(value)
end

--- One buffer line, one to one: every control character (newlines too) as its picture.
function M.line(value)
  local s = str(value)
  if has_control(s, true) then
    return (s:gsub(CONTROL_OR_NL, PICTURES))
  end
  return s
end

--- A text as buffer lines: split at newlines (CR LF as one), control characters shown.
function M.lines(value)
  local s = str(value)
  if s:find('\r', 1, true) then
    s = s:gsub('\r\n', '\n')
  end
  local out = vim.split(s, '\n', { plain = true })
  if has_control(s, false) then
    for i, piece in ipairs(out) do
      out[i] = (piece:gsub(CONTROL, PICTURES))
    end
  end
  return out
end

--- A list of strings as buffer lines, one to one (lines whose positions are counted
--- elsewhere, e.g. the chat's blocks): a stray newline shows as ␊ instead of splitting.
function M.map(list)
  local out = {}
  for i, value in ipairs(list) do
    out[i] = M.line(value)
  end
  return out
end

--- A list of strings as buffer lines, each split at its newlines (floats and views).
function M.list(list)
  local out = {}
  for _, value in ipairs(list) do
    local s = str(value)
    if has_control(s, true) then
      vim.list_extend(out, M.lines(s))
    else
      out[#out + 1] = s
    end
  end
  return out
end

--- Replace lines of a read-only buffer: sanitized (split); read-only again afterwards,
--- even when setting them fails.
function M.write(buf, start, stop, list)
  vim.bo[buf].modifiable = true
  local ok, err = pcall(api.nvim_buf_set_lines, buf, start, stop, false, M.list(list))
  vim.bo[buf].modifiable = false
  if not ok then
    error(err, 0)
  end
end

return M
