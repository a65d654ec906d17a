-- The chat's winbar: turn state, session name, agent, limits label, model, mode, context
-- use and cost, with the background sessions on the right. Agent strings are shown on
-- one line (louise.text) with every % doubled.
local chat = require('louise.chat')
local text = require('louise.text')

local M = {}

local api = vim.api
local present = chat.present
local STATUS_ICON = {
  starting = '…',
  ready = '●',
  prompting = '…',
  waiting_permission = '!',
  cancelling = '⊘',
  closing = '◌',
  error = '✗',
  closed = '○',
}
M.STATUS_ICON = STATUS_ICON

local function esc(value)
  return (text.line(value):gsub('%%', '%%%%'))
end

--- Winbar parts in the order they are dropped when the window is narrow: the limits first
--- (the statusline shows them), then cost, context %, mode, model, session name, agent,
--- the agent's note; the turn state stays in words (`working 12s`, `waiting for
--- permission`) whatever the width. Background sessions show on the right, collapsing
--- into counts. Click handlers are plain globals: `v:lua.require(…)` click targets are
--- never invoked by Neovim.
local DROP_ORDER = { 'limits', 'cost', 'context', 'mode', 'model', 'name', 'agent', 'note' }
-- A mode the person picked that approves the agent's edits (or everything) without asking
-- is worth knowing: it says so and stays longer than the model and the session name.
local DROP_ORDER_APPROVING = { 'limits', 'cost', 'context', 'model', 'name', 'mode', 'agent', 'note' }
-- The turn state in words; starting and working count the seconds (M.since).
local TURN_WORDS = {
  ready = 'ready',
  prompting = 'working',
  waiting_permission = 'waiting for permission',
  cancelling = 'cancelling',
  closing = 'closing',
  error = 'error',
  closed = 'closed',
}
local COUNTED = { starting = true, prompting = true, waiting_permission = true, cancelling = true }
M.COUNTED = COUNTED
local MAX_NOTE_WIDTH = 60
-- States that are the turn's own (a sign-in waiting for another chat does not hide them).
local TURN_BUSY = { prompting = true, waiting_permission = true, cancelling = true }
M.SIGNIN_WORDS = 'waiting for sign-in · :LouiseSignIn'
-- Agent -> true while a sign-in to it is under way (the engine's `signin` slot).
M.signing_in = {}
local BG_ICON = { prompting = '…', cancelling = '…', waiting_permission = '!', error = '✗' }

local function display_width(bar)
  -- Width of a winbar string without its %#…#, %*, %@…@, %X items and with %% as one.
  local plain = bar:gsub('%%#[^#]*#', ''):gsub('%%%*', ''):gsub('%%%d*@[^@]*@', ''):gsub('%%X', ''):gsub('%%%%', '%%')
  return vim.fn.strdisplaywidth(plain)
end

--- The other sessions worth showing: those that need a look (working, waiting, failed,
--- finished unseen), and with setup{winbar = {others = 'all'}} the idle ones too (`·`).
local function background(state)
  local items, counts = {}, {}
  local all = (chat.options().winbar or {}).others == 'all'
  for key, other in pairs(chat.chats) do
    if key ~= state.key and api.nvim_buf_is_valid(other.buf) then
      local st = other.status and other.status.status or 'starting'
      local icon = BG_ICON[st] or (other.unseen and '●' or nil) or (all and '·' or nil)
      if icon then
        local name = (present(other.status and other.status.title) and other.status.title) or (other.agent .. ' ' .. other.n)
        table.insert(items, { icon = icon, name = name, key = key, n = other.n })
        counts[icon] = (counts[icon] or 0) + 1
      end
    end
  end
  table.sort(items, function(a, b)
    return a.n < b.n
  end)
  return items, counts
end

function M.click_session(minwid)
  local key = chat.click_targets[minwid]
  if key then
    chat.send_later('focus', { key = key })
  end
end

_G.__louise_session_click = function(minwid)
  M.click_session(minwid)
end
_G.__louise_switch_click = function()
  require('louise').switch()
end
_G.__louise_limits_click = function()
  require('louise.limits').click()
end

--- How long `ms` is, as a person reads it: `12s`, `3m 05s`, `1h 02m`.
function M.elapsed(ms)
  local secs = math.max(0, math.floor(ms / 1000))
  if secs < 60 then
    return secs .. 's'
  end
  local mins = math.floor(secs / 60)
  if mins < 60 then
    return ('%dm %02ds'):format(mins, secs % 60)
  end
  return ('%dh %02dm'):format(math.floor(mins / 60), mins % 60)
end

--- The turn state in words: `starting claude · 3s`, `working 12s`, `ready`, …
function M.turn_words(state, now)
  local st = (state.status or {}).status or 'starting'
  if COUNTED[st] and state.since == nil then
    state.since = now or vim.uv.now()
  end
  local took = state.since and M.elapsed((now or vim.uv.now()) - state.since) or nil
  if M.signing_in[state.agent] and not TURN_BUSY[st] then
    -- Not `ready` (nor `starting`): nothing happens until the person signs in.
    return M.SIGNIN_WORDS
  end
  if st == 'starting' then
    return ('starting %s · %s'):format(state.agent, took)
  end
  local words = TURN_WORDS[st] or st
  if st == 'prompting' or st == 'cancelling' then
    return words .. ' ' .. took
  end
  return words
end

--- Whether the window shows the transcript's last line (no RPC: Neovim's own botline).
local function tail_shown(win, buf)
  if not win or not api.nvim_win_is_valid(win) then
    return false
  end
  return vim.fn.line('w$', win) >= api.nvim_buf_line_count(buf)
end

function M.winbar(state, width, win)
  width = width or 10000
  local s = state.status or {}
  local fields = {}
  local icon = STATUS_ICON[s.status or 'starting'] or '·'
  local turn = M.turn_words(state)
  if present(s.parked) then
    -- A turn refused at a quota limit waits for the reset (:LouiseUnpark drops it).
    icon, turn = '⏸', s.parked
  end
  fields.turn = ('%%#LouiseStatus#%s %s%%*'):format(icon, esc(turn))
  if present(s.title) then
    fields.name = esc(s.title)
  end
  if (s.status or 'starting') ~= 'starting' then -- starting names the agent already
    fields.agent = esc(state.agent)
  end
  if present(s.note) and COUNTED[s.status or ''] then
    -- The agent's own word on the wait (codex's "Reconnecting... 2/5"), as it came.
    local note = text.line(s.note)
    if vim.fn.strdisplaywidth(note) > MAX_NOTE_WIDTH then
      note = vim.fn.strcharpart(note, 0, MAX_NOTE_WIDTH - 1) .. '…'
    end
    fields.note = ('%%#LouiseNotice#%s%%*'):format((note:gsub('%%', '%%%%')))
  end
  local label = require('louise.limits').label_for(state.agent)
  if label and label[1] ~= '' then
    fields.limits = ('%%@v:lua.__louise_limits_click@%%#%s#%s%%*%%X'):format(
      require('louise.limits').hl(label[2], 'WinBar'), esc(label[1]))
  end
  if present(s.model) then
    fields.model = esc(s.model)
  end
  if present(s.mode) then
    fields.mode = esc(s.mode)
    if present(s.approves) then
      fields.mode = ('%%#LouiseNotice#%s: %s allowed%%*'):format(fields.mode, esc(s.approves))
    end
  end
  local drop_order = present(s.approves) and DROP_ORDER_APPROVING or DROP_ORDER
  if present(s.context) then
    fields.context = ('ctx %d%%%%%s'):format(s.context, s.context_stale and ' stale' or '')
  end
  if present(s.cost) then
    fields.cost = esc(s.cost)
  end
  if state.below and (win == nil or not tail_shown(win, state.buf)) then
    -- Output arrived below while this window is scrolled up and its tail is really off
    -- screen (G goes there).
    fields.below = '%#LouiseNotice#↓ new output below (G)%*'
  end
  local order = { 'turn', 'note', 'below', 'name', 'agent', 'limits', 'model', 'mode', 'context', 'cost' }
  local function compose()
    local parts = {}
    for _, f in ipairs(order) do
      if fields[f] then
        table.insert(parts, fields[f])
      end
    end
    return ' ' .. table.concat(parts, ' · ')
  end
  -- Background sessions: full names, else counts.
  local items, counts = background(state)
  local right_full, right_counts = '', ''
  if #items > 0 then
    local parts = {}
    for _, item in ipairs(items) do
      local id = state.n * 1000 + item.n
      chat.click_targets[id] = item.key
      table.insert(parts, ('%%%d@v:lua.__louise_session_click@%s %s%%X'):format(id, item.icon, esc(item.name)))
    end
    right_full = table.concat(parts, '  ')
    -- Compact: sessions that need the person (permission, error) stay named and
    -- clickable; working, finished and idle ones become counts.
    local c = {}
    for i, item in ipairs(items) do
      if item.icon == '!' or item.icon == '✗' then
        table.insert(c, parts[i])
      end
    end
    -- Counts open the session picker when clicked.
    for _, ic in ipairs({ '…', '●', '·' }) do
      if counts[ic] then
        table.insert(c, ('%%@v:lua.__louise_switch_click@%s%d%%X'):format(ic, counts[ic]))
      end
    end
    right_counts = table.concat(c, ' ')
  end
  local left = compose()
  local right = right_full
  local function fits()
    return display_width(left) + display_width(right) + 2 <= width
  end
  if not fits() and right ~= '' then
    right = right_counts
  end
  local i = 1
  while not fits() and i <= #drop_order do
    fields[drop_order[i]] = nil
    left = compose()
    i = i + 1
  end
  if not fits() then
    right = ''
  end
  if not fits() and fields.below then
    fields.below = '%#LouiseNotice#↓ more below%*'
    left = compose()
  end
  if not fits() then
    -- A window this narrow shows the turn state alone, in words (Neovim cuts what is
    -- wider than the window).
    fields.below = nil
    left = compose()
  end
  if right ~= '' then
    return left .. '%=' .. right .. ' '
  end
  return left
end

function M.refresh_winbar(state)
  if not state.below then
    state.below_shown = nil
  end
  for _, win in ipairs(chat.windows_of(state.buf)) do
    vim.wo[win].winbar = M.winbar(state, api.nvim_win_get_width(win), win)
  end
  if state.since ~= nil then
    M.tick_start()
  end
end

-- The seconds while a chat starts or works: one timer for every chat, running only
-- while one of them counts; each second it redraws their winbars and transcript tails.
local ticker = nil

local function counting(state)
  return api.nvim_buf_is_valid(state.buf) and state.since ~= nil
    and COUNTED[(state.status or {}).status or 'starting'] == true
end

function M.tick()
  local any = false
  for _, state in pairs(chat.chats) do
    if counting(state) then
      any = true
      for _, win in ipairs(chat.windows_of(state.buf)) do
        vim.wo[win].winbar = M.winbar(state, api.nvim_win_get_width(win), win)
      end
      require('louise.chat.view').wait_tail(state)
    end
  end
  if not any and ticker then
    ticker:stop()
    ticker:close()
    ticker = nil
  end
end

function M.tick_start()
  if ticker == nil then
    ticker = vim.uv.new_timer()
    ticker:start(1000, 1000, vim.schedule_wrap(function()
      M.tick()
    end))
  end
end

function M.set_status(key, status)
  local state = chat.chats[key]
  if not state then
    return
  end
  local before = state.status and state.status.status
  state.status = status
  if not chat.busy(state) then
    chat.markdown_finish(state) -- the last reply is finished: treesitter takes it over
  end
  if before ~= status.status then
    -- The seconds count from the start, and from the start of a turn (not from a
    -- permission answered within it).
    if not COUNTED[status.status] then
      state.since = nil
    elseif before == nil then
      state.since = state.since or vim.uv.now() -- counting since the chat opened
    elseif before == 'starting' or not COUNTED[before] then
      state.since = vim.uv.now()
    end
    require('louise.chat.view').wait_tail(state)
    require('louise.chat.layout').quiet_scroll(state)
    local busy = before == 'prompting' or before == 'waiting_permission' or before == 'cancelling'
    if busy and status.status == 'ready' and #chat.windows_of(state.buf) == 0 then
      state.unseen = true -- finished while nobody was looking
    end
    if busy and not chat.busy(state) then
      chat.collect_after_turn() -- the turn's garbage, before the next turn's first frame
    end
    if M.deferring then
      M.all_due = true -- once, after every status of the frame (see M.deferred)
    else
      M.refresh_all_winbars() -- other chats show this one in the background list
    end
  elseif not (M.deferring and M.all_due) then
    M.refresh_winbar(state)
  end
end

-- Scrolled so the tail shows (or hides) again: "new output below" follows the view. (While
-- a turn runs the transcript ignores WinScrolled; the second's tick redraws it then.)
vim.api.nvim_create_autocmd('WinScrolled', {
  group = vim.api.nvim_create_augroup('louise_winbar_scroll', { clear = true }),
  callback = function()
    for id in pairs(vim.v.event) do
      local win = tonumber(id)
      if win and api.nvim_win_is_valid(win) then
        local buf = api.nvim_win_get_buf(win)
        local state = chat.by_buf[buf]
        if state and state.buf == buf and state.below then
          vim.wo[win].winbar = M.winbar(state, api.nvim_win_get_width(win), win)
        end
      end
    end
  end,
})

vim.api.nvim_create_autocmd({ 'WinResized', 'VimResized' }, {
  group = vim.api.nvim_create_augroup('louise_winbar_resize', { clear = true }),
  callback = function()
    M.refresh_all_winbars()
  end,
})

--- Run `fn` with winbar refreshes that every chat needs done once at the end (a frame
--- with many status changes redraws every winbar once, not once per change).
function M.deferred(fn, ...)
  M.deferring, M.all_due = true, false
  local ok, err = pcall(fn, ...)
  M.deferring = false
  if M.all_due then
    M.all_due = false
    M.refresh_all_winbars()
  end
  if not ok then
    error(err, 0)
  end
end

--- The engine's word on sign-ins (agent -> under way or not): the chats of each agent
--- named, placeholders too, say so.
function M.set_signing_in(agents)
  for agent, waiting in pairs(agents) do
    M.signing_in[agent] = waiting == true or nil
  end
  M.refresh_all_winbars()
  require('louise.chat.starting').redraw_all()
end

function M.refresh_all_winbars()
  for _, state in pairs(chat.chats) do
    if api.nvim_buf_is_valid(state.buf) then
      M.refresh_winbar(state)
      if state.context and #state.context > 0 then
        chat.refresh_prompt_bar(state) -- its chips fit the width
      end
    end
  end
end

return M
