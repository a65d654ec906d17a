-- Short picker entries: relative times ("3 min ago", "yesterday"), paths relative to the
-- workspace or `~`, labels cut at a word to fit the screen (a picker row that wraps, or
-- one cut mid-word, is hard to read). Pure but for vim.o.columns and $HOME.
local text = require('louise.text')

local M = {}

--- Days since 1970-01-01 of a civil date (proleptic Gregorian; Howard Hinnant's formula).
local function days_from_civil(y, m, d)
  y = m <= 2 and y - 1 or y
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * (m + (m > 2 and -3 or 9)) + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

--- Seconds since the epoch of an ISO 8601 time (`2026-12-03T15:25:01Z`, with fractions or
--- an offset), or of a number (seconds, or milliseconds when that large); nil if neither.
function M.epoch(value)
  if type(value) == 'number' then
    return value > 1e11 and value / 1000 or value
  end
  if type(value) ~= 'string' then
    return nil
  end
  local y, mo, d, h, mi, s, rest = value:match('^(%d%d%d%d)%-(%d%d)%-(%d%d)[T ](%d%d):(%d%d):?(%d*)(.*)$')
  if not y then
    return nil
  end
  local t = days_from_civil(tonumber(y), tonumber(mo), tonumber(d)) * 86400
    + tonumber(h) * 3600 + tonumber(mi) * 60 + (tonumber(s) or 0)
  local sign, oh, om = rest:match('([+-])(%d%d):?(%d%d)$')
  if sign then
    local offset = tonumber(oh) * 3600 + tonumber(om) * 60
    t = sign == '+' and t - offset or t + offset
  end
  return t
end

--- "just now", "3 min ago", "2 h ago", "yesterday", "4 days ago", else the date
--- ("Mar 3", or "2025-03-03" in another year); local days for "yesterday". '' when the
--- time cannot be read.
function M.ago(value, now)
  local t = M.epoch(value)
  if not t then
    return ''
  end
  now = now or os.time()
  local seconds = now - t
  if seconds < 60 then
    return 'just now' -- also a little in the future (clocks differ)
  elseif seconds < 3600 then
    return ('%d min ago'):format(math.floor(seconds / 60))
  end
  local today, day = os.date('*t', now), os.date('*t', math.floor(t))
  local days = days_from_civil(today.year, today.month, today.day)
    - days_from_civil(day.year, day.month, day.day)
  if days == 0 then
    return ('%d h ago'):format(math.floor(seconds / 3600))
  elseif days == 1 then
    return 'yesterday'
  elseif days < 7 then
    return ('%d days ago'):format(days)
  elseif day.year == today.year then
    return (os.date('%b %d', math.floor(t)):gsub(' 0', ' '))
  end
  return os.date('%Y-%m-%d', math.floor(t))
end

--- A path as short as it reads: '' for the workspace itself, relative inside it, else
--- with `~` for the home directory.
function M.path(path, cwd)
  if type(path) ~= 'string' or path == '' then
    return ''
  end
  path = path:gsub('/+$', '')
  cwd = type(cwd) == 'string' and cwd:gsub('/+$', '') or nil
  if cwd and cwd ~= '' then
    if path == cwd then
      return ''
    elseif path:sub(1, #cwd + 1) == cwd .. '/' then
      return './' .. path:sub(#cwd + 2)
    end
  end
  local home = vim.env.HOME and vim.env.HOME:gsub('/+$', '') or nil
  if home and home ~= '' and (path == home or path:sub(1, #home + 1) == home .. '/') then
    return '~' .. path:sub(#home + 1)
  end
  return path
end

--- `s` on one line in at most `width` display cells, cut at a word (else at a
--- character) with '…'.
function M.cut(s, width)
  s = text.line(s or '')
  if vim.fn.strdisplaywidth(s) <= width then
    return s
  end
  if width <= 1 then
    return width == 1 and '…' or ''
  end
  local chars = vim.fn.strchars(s)
  local keep = ''
  for n = chars, 1, -1 do -- the longest head that fits with the ellipsis
    local head = vim.fn.strcharpart(s, 0, n)
    if vim.fn.strdisplaywidth(head) <= width - 1 then
      keep = head
      break
    end
  end
  local at_word = keep:match('^(.*%S)%s+%S*$') -- up to the last whole word
  if at_word and vim.fn.strdisplaywidth(at_word) >= (width - 1) / 2 then
    keep = at_word
  end
  return keep .. '…'
end

--- The room a picker row has: the screen's width less a picker's frame and numbering.
function M.width()
  return math.max(20, vim.o.columns - 8)
end

--- Join `parts` with ' · ', cutting the part at `flexible` (the title) so that the row
--- fits `width` (default: M.width()); empty parts are left out.
function M.row(parts, flexible, width)
  width = width or M.width()
  local fixed = 0
  local shown = 0
  for i, part in ipairs(parts) do
    if part ~= '' then
      shown = shown + 1
      if i ~= flexible then
        fixed = fixed + vim.fn.strdisplaywidth(text.line(part))
      end
    end
  end
  local room = width - fixed - 3 * math.max(shown - 1, 0)
  local out = {}
  for i, part in ipairs(parts) do
    if part ~= '' then
      table.insert(out, i == flexible and M.cut(part, math.max(room, 8)) or text.line(part))
    end
  end
  return table.concat(out, ' · ')
end

--- vim.ui.select with every label on one row: cut at a word to the room a picker row has
--- (a label that wraps, or is cut mid-word, is hard to read). What the person picks is
--- the item as given.
function M.select(items, opts, on_choice)
  local format = opts.format_item or tostring
  local width = M.width()
  return vim.ui.select(items, vim.tbl_extend('force', opts, {
    format_item = function(item)
      return M.cut(format(item), width)
    end,
  }), on_choice)
end

return M
