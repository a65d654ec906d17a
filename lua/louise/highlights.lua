-- Highlight groups, linked to diagnostic/comment groups so any colorscheme works.
--
-- The limits label also shows on bars with their own background (the statusline, the
-- winbar), where a diagnostic colour meant for the editor's background can be unreadable
-- (Neovim's default scheme: DiagnosticWarn on the light StatusLine is 1.3:1). For those,
-- `LouiseLimits<Level>StatusLine` and `LouiseLimits<Level>WinBar` take the level's colour
-- and, when it is not readable there, darken or lighten it until it reaches a contrast of
-- 4.5:1 (WCAG AA) with the bar's background. They follow colorscheme changes; a group
-- you set yourself is left alone.
local M = { done = false, derived = {} }

local api = vim.api

local LINKS = {
  LouiseLimitsOk = 'DiagnosticOk',
  LouiseLimitsActive = 'DiagnosticInfo',
  LouiseLimitsWarning = 'DiagnosticWarn',
  LouiseLimitsError = 'DiagnosticError',
  LouiseLimitsNeutral = 'Comment',
  LouiseUser = 'Title',
  LouiseAgent = 'Identifier',
  LouiseThought = 'Comment',
  LouiseTool = 'Special',
  LouiseNotice = 'DiagnosticWarn',
  LouisePlan = 'Function',
  LouiseStatus = 'StatusLine',
  LouiseNeutral = 'Comment',
  LouisePermission = 'NormalFloat',
  LouiseTerminal = 'Comment',
  LouiseReviewAdd = 'DiffAdd',
  LouiseReviewDelete = 'DiffDelete',
  LouiseReviewFile = 'Title',
  LouiseReviewHunk = 'Special',
  LouiseReviewNote = 'DiagnosticWarn',
  LouiseReviewComment = 'DiagnosticInfo',
}

M.LEVELS = { 'Ok', 'Active', 'Warning', 'Error', 'Neutral' }

local function capitalized(name)
  return name:sub(1, 1):upper() .. name:sub(2)
end

--- The group of a limits level ('ok', 'active', 'warning', 'error', 'neutral').
function M.level_group(level)
  local group = 'LouiseLimits' .. capitalized(tostring(level))
  return LINKS[group] and group or 'LouiseLimitsNeutral'
end

--- The group of a transcript block's kind ('user', 'agent', 'tool', …), if it has one; a
--- turn's token count ('usage') is neutral.
function M.kind_group(kind)
  local group = kind == 'usage' and 'LouiseNeutral' or 'Louise' .. capitalized(tostring(kind))
  return LINKS[group] and group or nil
end
M.BARS = { 'StatusLine', 'WinBar' }
M.MIN_CONTRAST = 4.5

-- ------------------------------------------------------------------ contrast (WCAG 2)

local function channels(rgb)
  return math.floor(rgb / 65536) % 256, math.floor(rgb / 256) % 256, rgb % 256
end

local function luminance(rgb)
  local r, g, b = channels(rgb)
  local function lin(c)
    c = c / 255
    return c <= 0.03928 and c / 12.92 or ((c + 0.055) / 1.055) ^ 2.4
  end
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
end

function M.contrast(a, b)
  local la, lb = luminance(a), luminance(b)
  if la < lb then
    la, lb = lb, la
  end
  return (la + 0.05) / (lb + 0.05)
end

local function mix(rgb, target, t)
  local r, g, b = channels(rgb)
  local tr, tg, tb = channels(target)
  local function m(x, y)
    return math.floor(x + (y - x) * t + 0.5)
  end
  return m(r, tr) * 65536 + m(g, tg) * 256 + m(b, tb)
end

--- `fg`, moved towards black or white (whichever the background allows more contrast
--- with) just far enough to be readable on `bg`.
function M.readable(fg, bg)
  if M.contrast(fg, bg) >= M.MIN_CONTRAST then
    return fg
  end
  local target = M.contrast(0x000000, bg) >= M.contrast(0xffffff, bg) and 0x000000 or 0xffffff
  for step = 1, 20 do
    local candidate = mix(fg, target, step / 20)
    if M.contrast(candidate, bg) >= M.MIN_CONTRAST then
      return candidate
    end
  end
  return target
end

-- ------------------------------------------------------------------ groups

local function resolved(name)
  local ok, hl = pcall(api.nvim_get_hl, 0, { name = name, link = false })
  return ok and hl or {}
end

--- The background and foreground a bar is drawn with (reverse applied; Normal's, then
--- the 'background' option's guess, where the bar sets none).
local function bar_colours(bar)
  local hl = resolved(bar)
  local normal = resolved('Normal')
  local fg, bg = hl.fg, hl.bg
  if hl.reverse then
    fg, bg = bg or normal.bg, fg or normal.fg
  end
  bg = bg or normal.bg or (vim.o.background == 'light' and 0xffffff or 0x000000)
  fg = fg or normal.fg or (vim.o.background == 'light' and 0x000000 or 0xffffff)
  return fg, bg
end

local function same(a, b)
  return vim.deep_equal(a, b)
end

local function derive()
  for _, bar in ipairs(M.BARS) do
    local bar_fg, bar_bg = bar_colours(bar)
    for _, level in ipairs(M.LEVELS) do
      local name = ('LouiseLimits%s%s'):format(level, bar)
      local current = resolved(name)
      local previous = M.derived[name]
      -- Set by the person (not what we set last): theirs to keep.
      if not (next(current) ~= nil and not same(current, previous)) then
        local base = resolved('LouiseLimits' .. level)
        local spec = {
          fg = M.readable(base.fg or bar_fg, bar_bg),
          bg = bar_bg,
          bold = base.bold,
          italic = base.italic,
          ctermfg = base.ctermfg,
        }
        api.nvim_set_hl(0, name, spec)
        M.derived[name] = resolved(name)
      end
    end
  end
end

local function apply()
  for group, target in pairs(LINKS) do
    api.nvim_set_hl(0, group, { link = target, default = true })
  end
  derive()
end

function M.setup()
  if M.done then
    return
  end
  M.done = true
  apply()
  pcall(vim.treesitter.language.register, 'markdown', 'louise')
  pcall(vim.treesitter.language.register, 'markdown', 'louise_limits')
  local group = api.nvim_create_augroup('louise_highlights', { clear = true })
  api.nvim_create_autocmd('ColorScheme', { group = group, callback = apply })
  api.nvim_create_autocmd('OptionSet', { group = group, pattern = 'background', callback = apply })
end

return M
