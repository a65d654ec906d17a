-- Applies one frame's batch from the engine: one call per frame, whatever the stream.
--
-- Each key of the batch has one handler (the keys are the engine's outbox slots, see
-- louise/nvim/outbox.py); they run in the order below (windows open before their chats
-- are filled). Every handler runs under xpcall, and every item of a list or map under its
-- own: a failing one is reported once, the rest still apply, transcripts are read-only
-- again, and the answer names what failed so the engine sends a full render.
local M = { frames = 0, errors = {}, reported = {} }

local MAX_ERRORS = 50
local MAX_REPORTED = 200

local levels = {
  error = vim.log.levels.ERROR,
  warn = vim.log.levels.WARN,
  info = vim.log.levels.INFO,
}

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

local function chat()
  return require('louise.chat')
end

--- Run fn on every item, each on its own; raise the first error after all of them ran.
local function isolated(run)
  return function(fn)
    return function(collection)
      local first = nil
      run(collection, function(...)
        local ok, err = xpcall(fn, debug.traceback, ...)
        if not ok and not first then
          first = err
        end
      end)
      if first then
        error(first, 0)
      end
    end
  end
end

local each = isolated(function(list, call)
  for _, item in ipairs(list) do
    call(item)
  end
end)

local each_pair = isolated(function(map, call)
  for key, value in pairs(map) do
    call(key, value)
  end
end)

local set_statuses = each_pair(function(key, status)
  chat().set_status(key, status)
  require('louise.hooks').status(key, status)
end)

local HANDLERS = {
  -- The frame's notices: one message (louise/notice.lua: never a hit-enter prompt).
  { 'notify', function(items)
    local notices = {}
    for _, item in ipairs(items) do
      table.insert(notices, { item[1], levels[item[2]] or vim.log.levels.INFO, item[3] })
    end
    require('louise.notice').show(notices)
  end },
  { 'open', each(function(item)
    chat().open(item.key, item.agent, item.focus, item.pending, true) -- an answer
  end) },
  { 'chats', each_pair(function(key, ops)
    chat().apply_ops(key, ops)
  end) },
  { 'status', function(statuses)
    if next(statuses) ~= nil then -- the engine sends the slot empty on most frames
      require('louise.chat.winbar').deferred(set_statuses, statuses)
    end
  end },
  -- Per agent, whether a sign-in to it is under way (its chats say so, not `ready`).
  { 'signin', function(agents)
    require('louise.chat.winbar').set_signing_in(agents)
  end },
  { 'limits', function(labels)
    require('louise.limits').update(labels)
    require('louise.hooks').limits(labels)
  end },
  { 'permission_count', function(count)
    require('louise.permission').set_queue(count)
  end },
  -- A state: the request waiting for the person, or false for none.
  { 'permission', function(req)
    if req then
      require('louise.permission').show(req)
      require('louise.hooks').permission_waits(req)
    else
      require('louise.permission').settle()
      require('louise.hooks').permission_settled()
    end
  end },
  { 'closed', each(function(key)
    chat().closed(key)
    require('louise.hooks').closed(key)
    local terminals = package.loaded['louise.terminal']
    if terminals then -- loaded once a chat had a terminal
      terminals.release_chat(key)
    end
  end) },
  { 'term', function(terms)
    require('louise.terminal').update(terms)
  end },
  { 'reload', function(paths)
    require('louise.fs').reload(paths)
  end },
  { 'fs_conflict', each(function(req)
    require('louise.fs').conflict(req)
  end) },
  { 'ask', each(function(item)
    require('louise.ask').show(item)
  end) },
  { 'prompt_queue', function(queues)
    require('louise.chat.queue').update(queues)
  end },
  { 'limits_detail', function(detail)
    require('louise.limits').show_detail(detail)
  end },
  { 'picker', function(picker)
    chat().show_picker(picker)
  end },
  { 'show_text', function(view)
    chat().show_text(view)
  end },
  { 'review', function(data)
    require('louise.review').show(data)
  end },
  { 'undo', function(data)
    require('louise.review').undo(data)
  end },
  { 'permissions_list', function(rules)
    require('louise.permission').list(rules)
  end },
  { 'pong', function(pid)
    M.pong = pid
  end },
}

--- What failed, told once: one notification per frame, naming only errors not told yet
--- (every error is kept in M.errors, bounded).
local function report(failures)
  local fresh = {}
  for _, failure in ipairs(failures) do
    local name, err = failure[1], failure[2]
    table.insert(M.errors, { frame = M.frames, handler = name, error = err })
    if #M.errors > MAX_ERRORS then
      table.remove(M.errors, 1)
    end
    local first_line = tostring(err):match('^[^\n]*')
    local id = name .. ': ' .. first_line
    if not M.reported[id] then
      M.reported[id] = true
      M.reported_count = (M.reported_count or 0) + 1
      if M.reported_count > MAX_REPORTED then
        M.reported, M.reported_count = { [id] = true }, 1
      end
      table.insert(fresh, id)
    end
  end
  if #fresh > 0 then
    local message = 'louise: could not show part of an update; it is being redrawn ('
      .. table.concat(fresh, '; ')
      .. "; details: :lua =require('louise.render').errors)"
    vim.schedule(function()
      require('louise.notice').notify(message, vim.log.levels.ERROR)
    end)
  end
end

--- Apply one frame. Returns nil, or { failed = { handler names } } for the engine.
function M.apply(batch)
  M.frames = M.frames + 1
  local failures = nil
  for _, handler in ipairs(HANDLERS) do
    local value = batch[handler[1]]
    if present(value) then
      local ok, err = xpcall(handler[2], debug.traceback, value)
      if not ok then
        failures = failures or {}
        table.insert(failures, { handler[1], err })
      end
    end
  end
  if not failures then
    return nil
  end
  pcall(function()
    if package.loaded['louise.chat.buffer'] then
      chat().lock_all()
    end
  end)
  report(failures)
  local names = {}
  for _, failure in ipairs(failures) do
    table.insert(names, failure[1])
  end
  return { failed = names }
end

return M
