-- :LouiseResume — the sessions of every configured agent in one picker (an agent that
-- could not list them shows why, in its place); a pick opens the session (load, else
-- resume), or forks or deletes it where the agent supports that.
local text = require('louise.text')

local M = {}

local line = text.line
local picker_text = require('louise.chat.picker_text')

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

local function send(command, args)
  require('louise.engine').send(command, args)
end

--- What opens a chat (its load, its fork) is sent once the picker has closed.
local function send_later(command, args)
  require('louise.chat').send_later(command, args)
end

local ACTION_NAMES = {
  open = 'Open it (its history is replayed)',
  fork = 'Fork it (a new session with the same history)',
  delete = 'Delete it',
}

local function open(item, cwd)
  send_later('load', { agent = item.agent, id = item.id,
    cwd = item.cwd ~= '' and item.cwd or cwd or vim.fn.getcwd(),
    title = item.title ~= '' and item.title or nil, resume = not item.can_load })
end

local function act(item, action, cwd)
  if action == 'open' then
    open(item, cwd)
  elseif action == 'fork' then
    send_later('fork', { agent = item.agent, id = item.id,
      cwd = item.cwd ~= '' and item.cwd or cwd or vim.fn.getcwd() })
  elseif action == 'delete' then
    require('louise.chat.picker_text').select({ 'delete', 'keep' }, {
      prompt = ('louise: delete %s session "%s" for good?'):format(line(item.agent),
        line(item.title ~= '' and item.title or item.id)),
      format_item = function(choice)
        return choice == 'delete' and 'Delete it for good' or 'Keep it'
      end,
    }, function(choice)
      if choice == 'delete' then
        send('delete_session', { agent = item.agent, id = item.id })
      end
    end)
  end
end

--- One row: the current chat's session marked, the agent, its name cut at a word to
--- fit, when it was last used ("3 min ago"), its directory only when not this one.
function M.row(item, current, cwd, now, width)
  width = (width or picker_text.width()) - 2
  if item.error then
    return '  ' .. picker_text.row({ line(item.agent), '✗ ' .. line(item.error) }, 2, width)
  end
  local mark = (item.agent .. ':' .. item.id) == current and '▸ ' or '  '
  return mark .. picker_text.row({ line(item.agent), item.title ~= '' and item.title or item.id,
    picker_text.ago(item.updated, now), picker_text.path(item.cwd, cwd) }, 2, width)
end

--- The picker: data = { listings = { {agent, sessions, error, can_*} }, cwd }.
function M.pick(data)
  local items = {}
  for _, listing in ipairs(data.listings or {}) do
    if present(listing.error) then
      table.insert(items, { agent = listing.agent, error = listing.error })
    else
      for _, session in ipairs(listing.sessions or {}) do
        table.insert(items, { agent = listing.agent, id = session.id,
          title = session.title or '', cwd = session.cwd or '', updated = session.updated or '',
          preview = present(session.preview) and session.preview or nil,
          can_load = listing.can_load, can_fork = listing.can_fork,
          can_delete = listing.can_delete })
      end
    end
  end
  if #items == 0 then
    require('louise.notice').notify('louise: no agent lists sessions here (:LouiseResume! lists every directory)',
      vim.log.levels.INFO)
    return
  end
  local cwd = present(data.cwd) and data.cwd or nil
  local now = require('louise.chat').current()
  local current = now and now.key or nil
  local here = cwd or vim.fn.getcwd()
  local clock = os.time()
  local preview = require('louise.chat.picker_preview')
  preview.select(items, {
    prompt = 'louise: resume session',
    kind = 'louise_resume',
    format_item = function(item)
      return M.row(item, current, here, clock)
    end,
    preview = function(item)
      if item.error then
        return text.lines(item.error)
      end
      local shown = preview.transcript_tail(item.agent .. ':' .. item.id)
      if #shown > 0 then
        return shown -- open here: as the chat shows it
      end
      local recorded = item.preview and vim.tbl_map(line, item.preview) or {}
      return vim.list_extend({ '# ' .. line(item.title ~= '' and item.title or item.id), '',
        '- agent: ' .. line(item.agent), '- session: ' .. line(item.id),
        '- updated: ' .. picker_text.ago(item.updated, clock) .. ' (' .. line(item.updated) .. ')',
        '- directory: ' .. line(item.cwd), '' }, recorded)
    end,
  }, function(item)
    if not item then
      return
    end
    if item.error then
      require('louise.notice').notify('louise: ' .. item.error, vim.log.levels.WARN) -- it names the agent
      return
    end
    local actions = { 'open' }
    if item.can_fork then
      table.insert(actions, 'fork')
    end
    if item.can_delete then
      table.insert(actions, 'delete')
    end
    if #actions == 1 then
      return open(item, cwd)
    end
    require('louise.chat.picker_text').select(actions, {
      prompt = 'louise: ' .. line(item.title ~= '' and item.title or item.id),
      format_item = function(action)
        return ACTION_NAMES[action]
      end,
    }, function(action)
      if action then
        act(item, action, cwd)
      end
    end)
  end)
end

return M
