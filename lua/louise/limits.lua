-- Account limits in front of people: the statusline component (O(1), no RPC ever: the
-- Python side pushes rendered labels here), and the :LouiseLimits float.
local M = { labels = {}, redraw_pending = false }

local api = vim.api
local HL = {
  ok = 'LouiseLimitsOk',
  active = 'LouiseLimitsActive',
  warning = 'LouiseLimitsWarning',
  error = 'LouiseLimitsError',
  neutral = 'LouiseLimitsNeutral',
}

--- The group of a level; on a bar ('StatusLine' or 'WinBar'), its variant made readable
--- on that bar's background (louise.highlights).
function M.hl(level, bar)
  local group = HL[level] or HL.neutral
  return bar and (group .. bar) or group
end

-- Labels arrive at most once per engine frame (~16 ms) already; coalesce whatever
-- arrives within one event-loop turn into one redraw.
local function throttle_redraw()
  if M.redraw_pending then
    return
  end
  M.redraw_pending = true
  vim.schedule(function()
    M.redraw_pending = false
    pcall(vim.cmd, 'redrawstatus!')
    require('louise.chat').refresh_all_winbars()
  end)
end

--- Labels pushed by the engine: { [agent] = { text, level } }.
function M.update(labels)
  for agent, value in pairs(labels) do
    M.labels[agent] = value
  end
  throttle_redraw()
end

function M.label_for(agent)
  return M.labels[agent]
end

local function esc(text)
  return (text:gsub('%%', '%%%%'))
end

--- The statusline component. opts.agent: a named agent; opts.all: every agent;
--- default: the current chat's agent, else the configured default agent.
function M.statusline(opts)
  opts = opts or {}
  local agents = {}
  if opts.all then
    for agent, _ in pairs(M.labels) do
      table.insert(agents, agent)
    end
    table.sort(agents)
  else
    local agent = opts.agent
    if not agent then
      local chat = require('louise.chat').current()
      agent = chat and chat.agent or (require('louise').options or {}).default_agent or 'demo'
    end
    agents = { agent }
  end
  local parts = {}
  for _, agent in ipairs(agents) do
    local label = M.labels[agent]
    if label and label[1] ~= '' then
      local text = opts.all and (agent .. ': ' .. label[1]:gsub('^limits ', '')) or label[1]
      if opts.plain then
        table.insert(parts, text)
      else
        table.insert(parts, ('%%#%s#%s%%*'):format(M.hl(label[2], 'StatusLine'), esc(text)))
      end
    end
  end
  return table.concat(parts, ' ')
end

function M.click()
  require('louise').limits()
end

-- ------------------------------------------------------------------ detail float

local function bar(used)
  local filled = math.floor(used / 10 + 0.5)
  return string.rep('█', filled) .. string.rep('░', 10 - filled)
end

function M.show_detail(detail)
  local lines = {}
  for _, line in ipairs(detail.lines or {}) do
    table.insert(lines, line)
  end
  if detail.windows and #detail.windows > 0 then
    table.insert(lines, '')
    for _, w in ipairs(detail.windows) do
      table.insert(lines, ('%s %s %3d%% used · %s'):format(bar(w.used), w.duration, math.floor(w.used + 0.5), w.bucket))
    end
  end
  table.insert(lines, '')
  table.insert(lines, 'r refresh · q close')
  require('louise.float').show(M, lines, { title = ' limits · ' .. detail.agent .. ' ', filetype = 'markdown', min_width = 30 })
  local agent = detail.agent
  vim.keymap.set('n', 'q', function()
    pcall(api.nvim_win_close, M.win, true)
  end, { buffer = M.buf, nowait = true, silent = true })
  vim.keymap.set('n', 'r', function()
    require('louise.engine').send('limits', { agent = agent, refresh = true })
  end, { buffer = M.buf, nowait = true, silent = true })
end

return M
