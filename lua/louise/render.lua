-- Applies one frame's batch from the engine: one call per frame, whatever the stream.
local M = { frames = 0 }

local levels = {
  error = vim.log.levels.ERROR,
  warn = vim.log.levels.WARN,
  info = vim.log.levels.INFO,
}

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

function M.apply(batch)
  M.frames = M.frames + 1
  local chat = require('louise.chat')
  if present(batch.notify) then
    for _, item in ipairs(batch.notify) do
      vim.notify(item[1], levels[item[2]] or vim.log.levels.INFO)
    end
  end
  if present(batch.open) then
    for _, item in ipairs(batch.open) do
      chat.open(item.key, item.agent, item.focus)
    end
  end
  if present(batch.chats) then
    for key, ops in pairs(batch.chats) do
      chat.apply_ops(key, ops)
    end
  end
  if present(batch.status) then
    for key, status in pairs(batch.status) do
      chat.set_status(key, status)
    end
  end
  if present(batch.limits) then
    require('louise.limits').update(batch.limits)
  end
  if present(batch.queue) then
    require('louise.permission').set_queue(batch.queue)
  end
  if present(batch.permission_close) then
    require('louise.permission').close(batch.permission_close)
  end
  if present(batch.permission) then
    require('louise.permission').show(batch.permission)
  end
  if present(batch.closed) then
    for _, key in ipairs(batch.closed) do
      chat.closed(key)
    end
  end
  if present(batch.pick_session) then
    chat.pick(batch.pick_session)
  end
  if present(batch.limits_detail) then
    require('louise.limits').show_detail(batch.limits_detail)
  end
  if present(batch.fs_conflict) then
    require('louise.fs').conflict(batch.fs_conflict)
  end
  if present(batch.term) then
    require('louise.terminal').update(batch.term)
  end
  if present(batch.pick_agent) then
    local req = batch.pick_agent
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
  if present(batch.pick_resume) then
    chat.pick_resume(batch.pick_resume)
  end
  if present(batch.pick_mode) then
    chat.pick_mode(batch.pick_mode)
  end
  if present(batch.pick_option) then
    chat.pick_option(batch.pick_option)
  end
  if present(batch.show_text) then
    chat.show_text(batch.show_text)
  end
  if present(batch.permissions_list) then
    require('louise.permission').list(batch.permissions_list)
  end
  if present(batch.pong) then
    M.pong = batch.pong
  end
end

return M
