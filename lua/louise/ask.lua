-- Questions the engine waits on (louise/nvim/questions.py): sign-in methods, running a
-- sign-in command in a terminal, an agent's elicitation (form or URL). One question on
-- screen at a time, in arrival order, each after the frame that brought it (a person
-- taking their time never holds frames up). Every answer goes back as the `answer`
-- command; dismissing a question answers nil, which the engine reads as declined.
local text = require('louise.text')

local M = { queue = {}, busy = false, terminals = {} }

local api = vim.api
local MAX_QUEUE = 64

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

local function send(id, value)
  require('louise.engine').send('answer', { id = id, value = value })
end

local HANDLERS = {}

local function next_question()
  if M.busy then
    return
  end
  local item = table.remove(M.queue, 1)
  if not item then
    return
  end
  M.busy = true
  local done = false
  local function finish(value, keep_open)
    if done then
      return
    end
    done = true
    if not keep_open then
      send(item.id, value)
    end
    M.busy = false
    vim.schedule(next_question)
  end
  local handler = HANDLERS[item.kind]
  local ok, err = pcall(handler or function()
    error(('unknown question %s'):format(tostring(item.kind)), 0)
  end, item, finish)
  if not ok then
    vim.notify('louise: could not ask: ' .. tostring(err), vim.log.levels.ERROR)
    finish(nil)
  end
end

--- A question from a frame; shown after the frame.
function M.show(item)
  if #M.queue >= MAX_QUEUE then
    send(item.id, nil)
    return
  end
  table.insert(M.queue, item)
  vim.schedule(next_question)
end

-- ------------------------------------------------------------------ sign-in

HANDLERS.signin_method = function(item, finish)
  local methods = item.methods or {}
  local prompt = ('louise: sign in to %s'):format(text.line(item.agent))
  vim.ui.select(methods, {
    prompt = prompt,
    format_item = function(method)
      local how = method.kind == 'terminal' and ' (runs in a terminal)' or ''
      local description = present(method.description) and method.description ~= ''
        and (' — ' .. text.line(method.description)) or ''
      return text.line(method.name) .. how .. description
    end,
  }, function(choice)
    finish(choice and choice.id or nil)
  end)
end

--- Run argv (no shell) in a Neovim terminal below; `on_exit(code)` when it ends.
local function run_in_terminal(item, on_exit)
  vim.cmd('botright 15split')
  local buf = api.nvim_create_buf(false, true)
  api.nvim_win_set_buf(0, buf)
  local opts = {
    env = present(item.env) and item.env or nil,
    cwd = present(item.cwd) and item.cwd or nil,
    on_exit = function(_, code)
      vim.schedule(function()
        on_exit(code)
      end)
    end,
  }
  local ok, job
  if vim.fn.has('nvim-0.11') == 1 then
    opts.term = true
    ok, job = pcall(vim.fn.jobstart, item.argv, opts)
  else
    ok, job = pcall(vim.fn.termopen, item.argv, opts)
  end
  if not ok or type(job) ~= 'number' or job <= 0 then
    pcall(api.nvim_buf_delete, buf, { force = true })
    return nil, ok and ('could not start it (%s)'):format(tostring(job)) or tostring(job)
  end
  pcall(api.nvim_buf_set_name, buf, ('louise-signin://%s#%d'):format(item.agent, buf))
  M.terminals[item.id] = { buf = buf, job = job }
  vim.cmd('startinsert')
  return buf
end

HANDLERS.signin_terminal = function(item, finish)
  -- The command comes from the agent (its args and env on louise's configured command):
  -- shown whole, run only when the person says so.
  local command = text.line(item.command)
  vim.ui.select({ 'run', 'cancel' }, {
    prompt = ('louise: to sign in to %s (%s), run in a terminal: %s'):format(
      text.line(item.agent), text.line(item.method), command),
    format_item = function(choice)
      return choice == 'run' and 'Run it in a terminal' or 'Cancel'
    end,
  }, function(choice)
    if choice ~= 'run' then
      finish(nil)
      return
    end
    local buf, err = run_in_terminal(item, function(code)
      M.terminals[item.id] = nil
      send(item.id, code)
      if code ~= 0 then
        vim.notify(('louise: the sign-in command ended with status %d'):format(code),
          vim.log.levels.WARN)
      end
    end)
    if not buf then
      vim.notify('louise: ' .. err, vim.log.levels.ERROR)
      finish(nil)
      return
    end
    finish(nil, true) -- answered by the terminal's exit; the next question may show
  end)
end

return M
