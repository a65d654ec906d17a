-- Hooks for configs and other plugins: `User LouiseTurnEnd`, `User LouisePermission` and
-- `User LouiseLimits` autocommands (with their facts in `data`), and the optional
-- notification (and bell) when a turn ends or a permission waits while Neovim is
-- unfocused (setup{ notify = … }).
--
-- The renderer calls these while it applies a frame; the autocommands run after it
-- (vim.schedule), so a slow or failing handler never holds up the engine's frame.
local M = {
  focused = true, -- until FocusLost: a terminal without focus events never notifies
  turns = {}, -- [key] = turns done already told (a status repeats; a turn ends once)
  permission = nil, -- the id of the request already told
  labels = {}, -- [agent] = 'text\0level' already told
}

local notice = require('louise.notice')
local MAX_MESSAGE = 300

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

local function str(value)
  return present(value) and tostring(value) or nil
end

-- A handler's error is Neovim's to report (as for any autocommand; the others still run).
local function fire(pattern, data)
  vim.schedule(function()
    local ok, err = pcall(vim.api.nvim_exec_autocmds, 'User',
      { pattern = pattern, data = data, modeline = false })
    if not ok then
      notice.notify(('louise: User %s: %s'):format(pattern, tostring(err):match('^[^\n]*')),
        vim.log.levels.WARN)
    end
  end)
end

--- setup{ notify = … } as a table (false when off).
local function notify_options()
  local value = (require('louise').options or {}).notify
  if value == true then
    return { turn_end = true, permission = true, bell = true }
  elseif type(value) ~= 'table' then
    return false
  end
  -- A table turns notifying on: what it leaves out is on too (command: none).
  return { turn_end = value.turn_end ~= false, permission = value.permission ~= false,
    bell = value.bell ~= false, command = value.command }
end

--- The terminal's bell: written to Neovim's stderr, which is the terminal of a TUI (as
--- Neovim's own OSC 52 clipboard does).
function M.bell()
  pcall(vim.api.nvim_chan_send, 2, '\a')
end

local function run_command(argv, message)
  local command = vim.list_extend(vim.deepcopy(argv), { message })
  local ok, err = pcall(vim.system, command, { text = true, detach = true }, function(done)
    if done.code ~= 0 then
      vim.schedule(function()
        notice.notify(('louise: the notify command %s exited with status %d'):format(
          argv[1], done.code), vim.log.levels.WARN)
      end)
    end
  end)
  if not ok then
    notice.notify(('louise: the notify command %s could not run: %s'):format(argv[1],
      tostring(err):match('^[^\n]*')), vim.log.levels.WARN)
  end
end

--- Tell the person, who is elsewhere: a notification, the bell, the notify command.
local function tell(what, message)
  local opts = notify_options()
  if M.focused or not opts or not opts[what] then
    return
  end
  message = require('louise.text').line(message):sub(1, MAX_MESSAGE)
  vim.schedule(function()
    notice.notify(message, vim.log.levels.INFO)
    if opts.bell then
      M.bell()
    end
    if type(opts.command) == 'table' and #opts.command > 0 then
      run_command(opts.command, message)
    end
  end)
end

--- A chat's status (each frame's): a turn that ended since the last one told.
function M.status(key, status)
  local done = tonumber(status.turns_done) or 0
  local told = M.turns[key]
  M.turns[key] = math.max(done, told or 0)
  if told == nil or done <= told then
    return -- the first status of a chat (a resumed one has turns already) or no news
  end
  local data = {
    key = key,
    agent = str(status.agent),
    title = str(status.title),
    turn = done,
    status = str(status.status),
    stop_reason = str(status.stop_reason),
    error = str(status.error),
  }
  fire('LouiseTurnEnd', data)
  local name = data.title and (data.agent .. ' · ' .. data.title) or data.agent or key
  local how = data.error and ('failed: ' .. data.error)
    or (data.stop_reason and data.stop_reason ~= 'end_turn' and ('ended: ' .. data.stop_reason))
    or 'done'
  tell('turn_end', ('louise: %s: turn %d %s'):format(name, done, how))
end

--- A chat went away: its turns are no longer counted.
function M.closed(key)
  M.turns[key] = nil
end

--- The permission request waiting for the person (each frame's state): told once.
function M.permission_waits(req)
  if M.permission == req.id then
    return
  end
  M.permission = req.id
  local options = {}
  for _, option in ipairs(req.options or {}) do
    table.insert(options, { id = str(option.id), name = str(option.name), kind = str(option.kind) })
  end
  fire('LouisePermission', {
    id = req.id,
    key = str(req.session),
    agent = str(req.agent),
    title = str(req.title),
    kind = str(req.kind),
    paths = present(req.paths) and req.paths or {},
    command = str(req.command),
    options = options,
    position = req.position,
    total = req.total,
  })
  tell('permission', ('louise: %s asks: %s'):format(str(req.agent) or 'an agent',
    str(req.title) or str(req.kind) or 'a permission'))
end

--- No request waits any more.
function M.permission_settled()
  M.permission = nil
end

--- Limits labels pushed by the engine ({ [agent] = { text, level } }): each agent whose
--- label changed, told.
function M.limits(labels)
  for agent, value in pairs(labels) do
    local text, level = str(value[1]) or '', str(value[2]) or 'neutral'
    local seen = text .. '\0' .. level
    if M.labels[agent] ~= seen then
      M.labels[agent] = seen
      fire('LouiseLimits', { agent = agent, label = text, level = level })
    end
  end
end

local group = vim.api.nvim_create_augroup('louise_hooks_focus', { clear = true })
vim.api.nvim_create_autocmd('FocusLost', {
  group = group,
  callback = function()
    M.focused = false
  end,
})
vim.api.nvim_create_autocmd('FocusGained', {
  group = group,
  callback = function()
    M.focused = true
  end,
})

return M
