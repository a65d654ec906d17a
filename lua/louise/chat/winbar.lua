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

--- Winbar parts in the order they are dropped when the window is narrow: cost, context %,
--- mode, model, session name, agent; the turn state and the limits label stay longest
--- (the quota is what louise is for), the turn state as its icon alone at the very end. Background
--- sessions show on the right, collapsing into counts. Click handlers are plain globals:
--- `v:lua.require(…)` click targets are never invoked by Neovim.
local DROP_ORDER = { 'cost', 'context', 'mode', 'model', 'name', 'agent' }
-- A mode the person picked that approves the agent's edits (or everything) without asking
-- is worth knowing: it says so and stays longer than the model and the session name.
local DROP_ORDER_APPROVING = { 'cost', 'context', 'model', 'name', 'mode', 'agent' }
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
    require('louise.engine').send('focus', { key = key })
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

function M.winbar(state, width)
  width = width or 10000
  local s = state.status or {}
  local fields = {}
  local icon = STATUS_ICON[s.status or 'starting'] or '·'
  local turn = s.status == 'waiting_permission' and 'waiting for permission' or (s.status or 'starting')
  if present(s.parked) then
    -- A turn refused at a quota limit waits for the reset (:LouiseUnpark drops it).
    icon, turn = '⏸', s.parked
  end
  fields.turn = ('%%#LouiseStatus#%s %s%%*'):format(icon, esc(turn))
  if present(s.title) then
    fields.name = esc(s.title)
  end
  fields.agent = esc(state.agent)
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
  if state.below then
    -- Output arrived below while this window is scrolled up (G goes there): kept as
    -- long as the limits label.
    fields.below = '%#LouiseNotice#↓ new output below (G)%*'
  end
  local order = { 'turn', 'below', 'name', 'agent', 'limits', 'model', 'mode', 'context', 'cost' }
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
  if not fits() then
    fields.turn = ('%%#LouiseStatus#%s%%*'):format(icon)
    left = compose()
  end
  if not fits() and fields.below then
    fields.below = '%#LouiseNotice#↓ G%*'
    left = compose()
  end
  if not fits() then
    -- A window this narrow shows the turn state alone (in words when they fit).
    fields.limits, fields.below = nil, nil
    fields.turn = ('%%#LouiseStatus#%s %s%%*'):format(icon, esc(turn))
    left = compose()
    if not fits() then
      fields.turn = ('%%#LouiseStatus#%s%%*'):format(icon)
      left = compose()
    end
  end
  if right ~= '' then
    return left .. '%=' .. right .. ' '
  end
  return left
end

function M.refresh_winbar(state)
  for _, win in ipairs(chat.windows_of(state.buf)) do
    vim.wo[win].winbar = M.winbar(state, api.nvim_win_get_width(win))
  end
end

function M.set_status(key, status)
  local state = chat.chats[key]
  if not state then
    return
  end
  local before = state.status and state.status.status
  state.status = status
  chat.guard(state)
  if not chat.busy(state) then
    chat.markdown_finish(state) -- the last reply is finished: treesitter takes it over
  end
  if before ~= status.status then
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
