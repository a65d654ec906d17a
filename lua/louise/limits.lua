-- Account limits in front of people: the statusline component (O(1), no RPC ever: the
-- Python side pushes rendered labels here), and the :LouiseLimits float.
local M = { labels = {}, redraw_pending = false }

local api = vim.api
local level_group = require('louise.highlights').level_group

--- The group of a level; on a bar ('StatusLine' or 'WinBar'), its variant made readable
--- on that bar's background (louise.highlights).
function M.hl(level, bar)
  local group = level_group(level)
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
  -- `current`: only in the current window's statusline (one label on screen, not one per
  -- window). While a statusline is drawn, the window drawn is the current one and
  -- g:actual_curwin the one the cursor is in (:h 'statusline').
  if opts.current then
    local actual = tonumber(vim.g.actual_curwin)
    if actual ~= nil and actual ~= vim.api.nvim_get_current_win() then
      return ''
    end
  end
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

local function close_view()
  if M.win and api.nvim_win_is_valid(M.win) then
    pcall(api.nvim_win_close, M.win, true)
  end
end

local function view_keymaps(buf)
  local function map(lhs, fn)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, silent = true })
  end
  map('q', close_view)
  map('<Esc>', close_view)
  map('r', function()
    require('louise.engine').send('limits', { agent = M.agent, refresh = true, from_view = true })
  end)
  map('s', function()
    if M.live then
      require('louise.notice').notify('louise: ' .. M.agent .. ' already runs; r refreshes', vim.log.levels.INFO)
      return
    end
    close_view()
    require('louise').chat(M.agent) -- its session reads the limits once it is ready
  end)
  api.nvim_create_autocmd('WinClosed', {
    buffer = buf,
    callback = function()
      require('louise.engine').send('limits_closed', { agent = M.agent })
    end,
  })
end

--- The limits view (`louise://limits/<agent>`, filetype louise_limits): opened by
--- :LouiseLimits at once with the state known then, and updated in place while it is open
--- (a refresh, a pushed update, a turn's end). detail.open: the person asked to see it.
function M.show_detail(detail)
  local open = M.win and api.nvim_win_is_valid(M.win)
  if not detail.open and not (open and M.agent == detail.agent) then
    return -- a live update for a view that is closed (or shows another agent)
  end
  M.agent, M.live = detail.agent, detail.live
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
  -- The keys once, in the footer (it stays in sight however long the text).
  local keys = 'r refresh · q close'
  if not detail.live then
    table.insert(lines, '')
    table.insert(lines, ('No live session of %s: its limits are as last read.'):format(detail.agent))
    keys = 's start a session · q close'
  end
  local fresh_buf = not (M.buf and api.nvim_buf_is_valid(M.buf))
  require('louise.float').show(M, lines, {
    title = ' limits · ' .. detail.agent .. ' ',
    footer = ' ' .. keys .. ' ',
    filetype = 'louise_limits',
    min_width = 30,
    enter = detail.open == true,
  })
  pcall(api.nvim_buf_set_name, M.buf, 'louise://limits/' .. detail.agent)
  if fresh_buf then
    view_keymaps(M.buf)
    pcall(vim.treesitter.start, M.buf, 'markdown')
  end
end

return M
