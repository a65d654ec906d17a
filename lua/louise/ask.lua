-- Questions the engine waits on (louise/nvim/questions.py): sign-in methods, running a
-- sign-in command in a terminal, an agent's elicitation (form or URL). One question on
-- screen at a time, in arrival order, each after the frame that brought it (a person
-- taking their time never holds frames up). Every answer goes back as the `answer`
-- command; dismissing a question answers nil, which the engine reads as declined.
local text = require('louise.text')
local notice = require('louise.notice')

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
    notice.notify('louise: could not ask: ' .. tostring(err), vim.log.levels.ERROR)
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
  require('louise.chat.picker_text').select(methods, {
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

--- A read-only scratch view below, `q` closes it (a question's whole text).
local function show_whole(name, lines)
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  text.write(buf, 0, -1, lines)
  pcall(api.nvim_buf_set_name, buf, ('%s#%d'):format(name, buf))
  vim.cmd('botright 12split')
  api.nvim_win_set_buf(0, buf)
  vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = buf, nowait = true, silent = true,
    desc = 'louise: close this view' })
end

HANDLERS.signin_terminal = function(item, finish)
  -- The command comes from the agent (its args and env on louise's configured command):
  -- what runs first, then the variables it adds; shortened where long (the text says
  -- so, and "Show the whole command" shows it all); run only when the person says so.
  local command = text.line(item.command)
  local choices = { 'run', 'cancel' }
  if present(item.whole) and #item.whole > 0 then
    choices = { 'run', 'show', 'cancel' }
  end
  local function ask()
    require('louise.chat.picker_text').select(choices, {
      prompt = ('louise: to sign in to %s (%s), run in a terminal: %s'):format(
        text.line(item.agent), text.line(item.method), command),
      format_item = function(choice)
        if choice == 'run' then return 'Run it in a terminal' end
        if choice == 'show' then return 'Show the whole command' end
        return 'Cancel'
      end,
    }, function(choice)
      if choice == 'show' then
        show_whole(('louise-signin-command://%s'):format(text.line(item.agent)), item.whole)
        vim.schedule(ask)
        return
      end
      if choice ~= 'run' then
        finish(nil)
        return
      end
      local buf, err = run_in_terminal(item, function(code)
        M.terminals[item.id] = nil
        send(item.id, code)
        if code ~= 0 then
          notice.notify(('louise: the sign-in command ended with status %d'):format(code),
            vim.log.levels.WARN)
        end
      end)
      if not buf then
        notice.notify('louise: ' .. err, vim.log.levels.ERROR)
        finish(nil)
        return
      end
      finish(nil, true) -- answered by the terminal's exit; the next question may show
    end)
  end
  ask()
end

-- ------------------------------------------------------------------ elicitation

local function shown_value(field, value)
  if value == nil or value == vim.NIL then
    return '—'
  end
  if field.kind == 'boolean' then
    return value and 'yes' or 'no'
  end
  if field.kind == 'choice' then
    for _, c in ipairs(field.choices or {}) do
      if c.value == value then
        return text.line(c.title)
      end
    end
  end
  if field.kind == 'multi' and type(value) == 'table' then
    return #value == 0 and '—' or text.line(table.concat(value, ', '))
  end
  return text.line(tostring(value))
end

local function field_prompt(item, field)
  local label = text.line(field.title) .. (field.required and ' (required)' or '')
  local about = present(field.description) and field.description ~= ''
    and (' — ' .. text.line(field.description)) or ''
  return ('louise: %s asks · %s%s'):format(text.line(item.agent), label, about)
end

--- What is wrong with a typed answer, checked as it is typed (the engine checks again at
--- Send): a required field left blank, a number that is not one or out of its range.
local function typed_problem(field, input)
  if input == '' then
    return field.required and 'an answer is required' or nil
  end
  if field.kind == 'number' or field.kind == 'integer' then
    local n = tonumber(input)
    if n == nil or (field.kind == 'integer' and n ~= math.floor(n)) then
      return field.kind == 'integer' and 'a whole number, please' or 'a number, please'
    end
    if present(field.min) and n < field.min then
      return ('at least %s'):format(field.min)
    end
    if present(field.max) and n > field.max then
      return ('at most %s'):format(field.max)
    end
  elseif present(field.min_length) and vim.fn.strchars(input) < field.min_length then
    return ('at least %d characters'):format(field.min_length)
  elseif present(field.max_length) and vim.fn.strchars(input) > field.max_length then
    return ('at most %d characters'):format(field.max_length)
  end
  return nil
end

--- Ask one field; `done(value)` with the new value, or `done(nil, true)` when dismissed.
--- `problem`: why the last answer was not taken (asked again, saying so).
local function ask_field(item, field, current, done, problem)
  local prompt = field_prompt(item, field)
  if problem then
    prompt = prompt .. ' (' .. problem .. ')'
  end
  if field.kind == 'boolean' then
    require('louise.chat.picker_text').select({ true, false }, {
      prompt = prompt,
      format_item = function(v) return v and 'yes' or 'no' end,
    }, function(choice)
      if choice == nil then done(nil, true) else done(choice) end
    end)
  elseif field.kind == 'choice' then
    local items = vim.deepcopy(field.choices or {})
    if not field.required then
      table.insert(items, { value = vim.NIL, title = '(no answer)' })
    end
    require('louise.chat.picker_text').select(items, {
      prompt = prompt,
      format_item = function(c)
        return (c.value == current and '● ' or '  ') .. text.line(c.title)
      end,
    }, function(choice)
      if choice == nil then done(nil, true) else done(choice.value) end
    end)
  elseif field.kind == 'multi' then
    local chosen = {}
    for _, v in ipairs(type(current) == 'table' and current or {}) do
      chosen[v] = true
    end
    local function step()
      local items = { { done = true } }
      vim.list_extend(items, field.choices or {})
      require('louise.chat.picker_text').select(items, {
        prompt = prompt .. ' (pick to toggle)',
        format_item = function(c)
          if c.done then return '✓ done' end
          return (chosen[c.value] and '[x] ' or '[ ] ') .. text.line(c.title)
        end,
      }, function(choice)
        if choice == nil then
          done(nil, true)
        elseif choice.done then
          local out = {}
          for _, c in ipairs(field.choices or {}) do
            if chosen[c.value] then table.insert(out, c.value) end
          end
          done(out)
        else
          chosen[choice.value] = not chosen[choice.value] or nil
          vim.schedule(step)
        end
      end)
    end
    step()
  else
    local default = current
    if default == nil or default == vim.NIL then
      default = ''
    end
    vim.ui.input({ prompt = prompt .. ': ', default = tostring(default) }, function(input)
      local why = input ~= nil and typed_problem(field, input) or nil
      if why then -- asked again at once, not only when Send is refused
        vim.schedule(function() ask_field(item, field, current, done, why) end)
      elseif input == nil then
        done(nil, true)
      elseif field.kind == 'number' or field.kind == 'integer' then
        done(input == '' and vim.NIL or (tonumber(input) or input))
      else
        done(input == '' and vim.NIL or input)
      end
    end)
  end
end

HANDLERS.elicitation_form = function(item, finish)
  local fields = item.fields or {}
  local answers = {}
  for _, field in ipairs(fields) do
    local previous = present(item.answers) and item.answers[field.name]
    if previous ~= nil and previous ~= vim.NIL then
      answers[field.name] = previous
    elseif present(field.default) then
      answers[field.name] = field.default
    end
  end
  -- Fields holding the agent's default, which the person has not answered themselves:
  -- the summary says so ("no (default)"), so a default is never taken for an answer.
  local defaulted = {}
  for _, field in ipairs(fields) do
    if present(field.default) and answers[field.name] == field.default
        and not (present(item.answers) and item.answers[field.name] ~= nil) then
      defaulted[field.name] = true
    end
  end
  local function content()
    local out = vim.empty_dict()
    for name, value in pairs(answers) do
      if value ~= vim.NIL then out[name] = value end
    end
    return out
  end
  local review
  local function edit(index, continue)
    local field = fields[index]
    if not field then
      return review()
    end
    ask_field(item, field, answers[field.name], function(value, dismissed)
      if dismissed then
        return vim.schedule(review)
      end
      answers[field.name] = value
      defaulted[field.name] = nil
      vim.schedule(function() continue(index + 1, continue) end)
    end)
  end
  review = function()
    local summary = {}
    for _, field in ipairs(fields) do
      table.insert(summary, text.line(field.title) .. ' = ' .. shown_value(field, answers[field.name])
        .. (defaulted[field.name] and ' (default)' or ''))
    end
    local problems = present(item.problems) and #item.problems > 0
      and (' · fix: ' .. text.line(table.concat(item.problems, '; '))) or ''
    local choices = { 'send', 'edit', 'decline', 'cancel' }
    -- Not cut to the row: "Send" shows every answer that goes, whole.
    vim.ui.select(choices, {
      prompt = ('louise: %s asks: %s%s'):format(text.line(item.agent), text.line(item.message), problems),
      format_item = function(choice)
        if choice == 'send' then return 'Send: ' .. table.concat(summary, ', ') end
        if choice == 'edit' then return 'Change an answer' end
        if choice == 'decline' then return 'Decline (answer nothing)' end
        return 'Cancel'
      end,
    }, function(choice)
      if choice == 'send' then
        finish({ action = 'accept', content = content() })
      elseif choice == 'edit' then
        require('louise.chat.picker_text').select(fields, {
          prompt = 'louise: change which answer?',
          format_item = function(field)
            return text.line(field.title) .. ' = ' .. shown_value(field, answers[field.name])
          end,
        }, function(field)
          if field == nil then
            return vim.schedule(review)
          end
          ask_field(item, field, answers[field.name], function(value, dismissed)
            if not dismissed then
              answers[field.name] = value
              defaulted[field.name] = nil
            end
            vim.schedule(review)
          end)
        end)
      elseif choice == 'decline' then
        finish({ action = 'decline' })
      else
        finish({ action = 'cancel' })
      end
    end)
  end
  if present(item.problems) and #item.problems > 0 then
    review() -- asked again: straight to the review, with what to fix
  else
    edit(1, edit)
  end
end

HANDLERS.elicitation_url = function(item, finish)
  -- Where it goes first: the host a browser opens and the warnings, then the agent's
  -- message and the address (shortened where long: "Show the whole address" shows it
  -- all). Nothing opens, nothing is fetched, before the person picks "Open".
  local warnings = present(item.warnings) and #item.warnings > 0
    and (' ⚠ ' .. text.line(table.concat(item.warnings, '; '))) or ''
  local shown_url = present(item.shown_url) and item.shown_url or item.url
  local choices = { 'open', 'decline', 'cancel' }
  if present(item.whole) and #item.whole > 0 then
    choices = { 'open', 'show', 'decline', 'cancel' }
  end
  local function ask()
    require('louise.chat.picker_text').select(choices, {
      prompt = ('louise: %s asks you to visit %s%s: %s — %s'):format(text.line(item.agent),
        text.line(item.host), warnings, text.line(item.message), text.line(shown_url)),
      format_item = function(choice)
        if choice == 'open' then return 'Open ' .. text.line(item.host) .. ' in the browser' end
        if choice == 'show' then return 'Show the whole address' end
        if choice == 'decline' then return 'Decline' end
        return 'Cancel'
      end,
    }, function(choice)
      if choice == 'show' then
        show_whole(('louise-visit://%s'):format(text.line(item.host)), item.whole)
        vim.schedule(ask)
        return
      end
      if choice ~= 'open' then
        finish(choice or 'cancel')
        return
      end
      local ok, err = pcall(vim.ui.open, item.url)
      if not ok then
        notice.notify('louise: could not open the page: ' .. tostring(err), vim.log.levels.ERROR)
        finish('cancel')
        return
      end
      notice.notify(('louise: opened %s; %s is waiting for it to finish'):format(
        text.line(item.host), text.line(item.agent)), vim.log.levels.INFO)
      finish('accept')
    end)
  end
  ask()
end

return M
