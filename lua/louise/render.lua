-- Applies one frame's batch from the engine: one call per frame, whatever the stream.
-- Each key of the batch has one handler; they run in the order below (windows open
-- before their chats are filled, the permission closes before a new one shows).
local M = { frames = 0 }

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

local function each(fn)
  return function(list)
    for _, item in ipairs(list) do
      fn(item)
    end
  end
end

local function each_pair(fn)
  return function(map)
    for key, value in pairs(map) do
      fn(key, value)
    end
  end
end

local function pick_agent(req)
  vim.ui.select(req.agents, {
    prompt = 'louise: agent',
    format_item = function(name)
      return name == req.default and (name .. ' (default)') or name
    end,
  }, function(choice)
    if choice then
      require('louise.engine').send('chat', { agent = choice, cwd = present(req.cwd) and req.cwd or nil })
    end
  end)
end

local HANDLERS = {
  { 'notify', each(function(item)
    vim.notify(item[1], levels[item[2]] or vim.log.levels.INFO)
  end) },
  { 'open', each(function(item)
    chat().open(item.key, item.agent, item.focus)
  end) },
  { 'chats', each_pair(function(key, ops)
    chat().apply_ops(key, ops)
  end) },
  { 'status', each_pair(function(key, status)
    chat().set_status(key, status)
  end) },
  { 'limits', function(labels)
    require('louise.limits').update(labels)
  end },
  { 'queue', function(count)
    require('louise.permission').set_queue(count)
  end },
  { 'permission_close', function(id)
    require('louise.permission').close(id)
  end },
  { 'permission', function(req)
    require('louise.permission').show(req)
  end },
  { 'closed', each(function(key)
    chat().closed(key)
  end) },
  { 'term', function(terms)
    require('louise.terminal').update(terms)
  end },
  { 'fs_conflict', function(req)
    require('louise.fs').conflict(req)
  end },
  { 'limits_detail', function(detail)
    require('louise.limits').show_detail(detail)
  end },
  { 'pick_session', function(items)
    chat().pick(items)
  end },
  { 'pick_agent', pick_agent },
  { 'pick_resume', function(items)
    chat().pick_resume(items)
  end },
  { 'pick_mode', function(req)
    chat().pick_mode(req)
  end },
  { 'pick_option', function(req)
    chat().pick_option(req)
  end },
  { 'show_text', function(view)
    chat().show_text(view)
  end },
  { 'permissions_list', function(rules)
    require('louise.permission').list(rules)
  end },
  { 'pong', function(pid)
    M.pong = pid
  end },
}

function M.apply(batch)
  M.frames = M.frames + 1
  for _, handler in ipairs(HANDLERS) do
    local value = batch[handler[1]]
    if present(value) then
      handler[2](value)
    end
  end
end

return M
