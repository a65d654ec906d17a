-- louise: an ACP client with account limits. Public Lua API.
--   require('louise').setup{ agents = {...}, default_agent = '...', ... }
--   require('louise').statusline()      -- for %{%v:lua.require'louise'.statusline()%}
--   require('louise').lualine           -- a ready lualine component
local M = { options = {}, problems = {} }

--- Configure louise. Every editor option is checked here, with its field path: a bad one
--- is reported at once (louise.notice) and its default used instead. Returns true, or false
--- and the problems ({ path, text, hint, level }).
function M.setup(opts)
  local options = require('louise.options')
  local checked, problems = options.validate(opts)
  M.options = checked
  M.raw_options = opts
  M.problems = problems
  local message, level = options.message(problems)
  if message then
    require('louise.notice').notify(message, level) -- one line: never a hit-enter prompt
  end
  require('louise.highlights').setup()
  require('louise.hooks') -- follows focus from now on (setup{ notify })
  local louiselm = require('louise.louiselm')
  M.louiselm = louiselm.is_louiselm(opts)
  if M.louiselm then
    louiselm.define_commands()
  end
  if M.options.keymaps and M.louiselm then
    louiselm.define_keymaps() -- LouiseLM's <leader>l maps, as its config asked for
  elseif M.options.keymaps then
    local function map(lhs, rhs, desc)
      if vim.fn.maparg(lhs, 'n') == '' then -- never overwrite a user's mapping
        vim.keymap.set('n', lhs, rhs, { desc = desc })
      end
    end
    map('<leader>ac', M.chat, 'louise: chat')
    map('<leader>an', M.new, 'louise: new session')
    map('<leader>as', M.switch, 'louise: switch session')
    map('<leader>al', M.limits, 'louise: account limits')
  end
  if M.options.start_engine == 'idle' then
    M.start_engine_when_idle()
  end
  if #problems > 0 then
    return false, problems
  end
  return true
end

-- After VimEnter, how long Neovim is left to itself (the first screen, other plugins'
-- deferred work) before louise's Python process is started.
M.IDLE_START_DELAY_MS = 100

--- setup{ start_engine = 'idle' }: start the Python process (no agent) once Neovim is idle
--- after startup, so the first :LouiseChat does not wait for Python to load louise.
--- jobstart() returns at once; nothing here ever blocks the editor. The default host
--- only: the shared remote-plugin host (host = 'rplugin') starts synchronously.
function M.start_engine_when_idle()
  local function start()
    if M.options.start_engine ~= 'idle' or M.options.host == 'rplugin'
        or vim.v.exiting ~= vim.NIL then
      return -- setup{} was called again without it, or Neovim is on its way out
    end
    require('louise.engine').start()
  end
  local function later()
    vim.defer_fn(start, M.IDLE_START_DELAY_MS)
  end
  if vim.v.vim_did_enter == 1 then
    later()
  else
    vim.api.nvim_create_autocmd('VimEnter', {
      group = vim.api.nvim_create_augroup('louise_start_engine', { clear = true }),
      once = true,
      callback = later,
    })
  end
end

--- What the Python side asks for at start: the engine part of setup{} (and `alerts`,
--- which the engine applies).
function M.engine_opts()
  local out = {}
  local options = require('louise.options')
  for key, value in pairs(M.options) do
    if key == 'alerts' or vim.tbl_contains(options.ENGINE_KEYS, key)
        or vim.tbl_contains(options.LOUISELM_KEYS, key) then
      out[key] = value
    end
  end
  if M.options.host == 'auto' then
    -- The engine's [host] section: agents launched through the session host.
    out.host = { mode = 'auto', via = M.options.host_via }
  end
  return out
end

local function engine()
  require('louise.highlights').setup()
  return require('louise.engine')
end

local function current_key()
  local chat = require('louise.chat').current()
  if not chat then
    require('louise.notice').notify('louise: no chat here; :LouiseChat opens one', vim.log.levels.WARN)
    return nil
  end
  return chat.key
end

--- :LouiseChat [agent]: the chat is on screen at once; when a session has to start, a
--- placeholder stands for it until the agent is ready (chat/starting.lua).
function M.chat(agent)
  -- The Python process first (on first use): its start (~0.1 s of imports) runs beside the
  -- placeholder's Lua below (its modules loaded, its windows made), not after it.
  if not require('louise.engine').start('chat', { agent = agent }) then
    return -- it could not start (and said why): no placeholder would ever be answered
  end
  local e = engine()
  local starting = require('louise.chat.starting')
  local chat = require('louise.chat')
  local from = chat.here() -- before the chat is focused here
  local what = starting.wanted(agent)
  if what == 'skip' then
    return
  end
  local pending = what == 'placeholder' and starting.begin(agent) or nil
  e.send('chat', { agent = agent, cwd = vim.fn.getcwd(), pending = pending }) -- asks from
  -- here: the placeholder's prompt, which the chat the engine opens may take
  if what == 'plain' then
    -- The chat is focused here already: its answer focuses nothing (unless it is a picker's
    -- and nothing moved).
    local here = chat.here()
    chat.ask(here.win == from.win and here.buf == from.buf and from or false)
  end
end

--- :LouiseToggle: hide the chat (this one, else the last) or show it again.
function M.toggle()
  require('louise.highlights').setup()
  require('louise.chat.placement').toggle()
end

function M.new(agent)
  local e = engine()
  local from = require('louise.chat').here() -- before its placeholder is focused
  local pending = require('louise.chat.starting').begin(agent)
  e.send('new', { agent = agent, cwd = vim.fn.getcwd(), pending = pending })
  require('louise.chat').ask(from)
end

function M.cancel()
  local key = current_key()
  if key then
    engine().send('cancel', { key = key })
  end
end

--- :LouiseUnpark: the chat's prompt parked at a quota limit is not sent again at the
--- reset (the queue behind it goes on).
function M.unpark()
  local key = current_key()
  if key then
    engine().send('unpark', { key = key })
  end
end

--- :LouiseClose[!]: end the chat's session. A session that works or waits for a
--- permission is closed only after asking (or with !).
function M.close(force)
  local key = current_key()
  if not key then
    return
  end
  local chat = require('louise.chat')
  local state = chat.chats[key]
  if not force and state and chat.busy(state) then
    local what = state.status.status == 'waiting_permission' and 'waiting for your permission'
      or 'working'
    require('louise.chat.picker_text').select({ 'Close it', 'Keep it' }, {
      prompt = ('louise: %s is %s; close it?'):format(chat.name(state), what),
    }, function(choice)
      if choice == 'Close it' then
        engine().send('close', { key = key })
      end
    end)
    return
  end
  engine().send('close', { key = key })
end

function M.switch()
  engine().send('switch', {})
end

function M.limits(agent)
  if agent == nil then
    local chat = require('louise.chat').current()
    agent = chat and chat.agent or nil
  end
  engine().send('limits', { agent = agent, refresh = true })
end

function M.permission()
  require('louise.permission').reopen()
end

function M.prompt(text)
  local key = current_key()
  if key then
    engine().send('prompt', { key = key, text = text })
    local chat = require('louise.chat')
    chat.scroll_to_end(chat.chats[key])
  end
end

--- :LouiseRename [name]: without a name, asked for (vim.ui.input, the current name given).
function M.rename(name)
  local key = current_key()
  if not key then
    return
  end
  if name and name ~= '' then
    return engine().send('rename', { key = key, name = name })
  end
  local state = require('louise.chat').chats[key]
  local title = state and state.status and state.status.title
  vim.ui.input({ prompt = 'louise: name this session: ',
    default = type(title) == 'string' and title or '' }, function(answer)
    if answer ~= nil then -- dismissed: unchanged; an empty answer clears the name
      engine().send('rename', { key = key, name = answer })
    end
  end)
end

--- :LouiseResume[!] [agent]: the sessions of [agent], else of every configured agent.
function M.resume(all, agent)
  -- A picker with a preview (telescope, fzf-lua, snacks) gets each session's last exchange.
  local preview = require('louise.chat.picker_preview').backend() ~= 'select'
  engine().send('resume', { agent = agent, cwd = vim.fn.getcwd(), all = all, preview = preview })
end

function M.mode()
  local key = current_key()
  if key then
    engine().send('modes', { key = key })
  end
end

function M.queue()
  require('louise.chat.queue').pick()
end

function M.model()
  local key = current_key()
  if key then
    engine().send('models', { key = key })
  end
end

function M.options_picker()
  local key = current_key()
  if key then
    engine().send('options', { key = key })
  end
end

function M.add(kind, range, arg)
  require('louise.chat').add(kind, range, arg)
end

function M.drop(which, all)
  require('louise.chat').drop(which, all)
end

function M.export(path)
  local key = current_key()
  if key then
    engine().send('export', { key = key, path = path })
  end
end

--- :LouiseLog [agent]: an agent's log (the current chat's without one), running or not.
function M.log(agent)
  local chat = agent == nil and require('louise.chat').current() or nil
  engine().send('log', { key = chat and chat.key or nil, agent = agent })
end

function M.permissions()
  engine().send('permissions', {})
end

--- The agent of the current chat, else the default one.
local function chat_agent(agent)
  if agent == nil then
    local chat = require('louise.chat').current()
    agent = chat and chat.agent or nil
  end
  return agent
end

--- :LouiseSignIn [agent]: pick one of the agent's sign-in methods.
function M.sign_in(agent)
  engine().send('sign_in', { agent = chat_agent(agent) })
end

--- :LouiseLogout [agent]: log out of the agent (where it supports it).
function M.logout(agent)
  engine().send('logout', { agent = chat_agent(agent) })
end

--- :LouiseReview [turn]: what the chat's turn (default: its newest) changed.
function M.review(turn)
  local key = current_key()
  if key then
    engine().send('review', { key = key, turn = tonumber(turn) })
  end
end

--- :LouiseUndo [turn]: the workspace's files back as before that turn (asks first).
function M.undo(turn)
  local key = current_key()
  if key then
    engine().send('undo_plan', { key = key, turn = tonumber(turn) })
  end
end

function M.terminal()
  require('louise.terminal').open_latest()
end

--- A permission request the person hid with <Esc> (nil when none): still waiting.
local function permission_waiting()
  local permission = package.loaded['louise.permission']
  return permission and permission.waiting_label() or nil
end

function M.statusline(opts)
  local line = require('louise.limits').statusline(opts)
  local waiting = permission_waiting()
  if not waiting then
    return line
  end
  local shown = '! ' .. waiting .. ' (:LouisePermission)'
  if not (opts and opts.plain) then
    shown = '%#LouiseLimitsWarningStatusLine#' .. shown .. '%*'
  end
  return line == '' and shown or (shown .. ' ' .. line)
end

M.lualine = {
  function()
    return M.statusline()
  end,
  cond = function()
    return next(require('louise.limits').labels) ~= nil or permission_waiting() ~= nil
  end,
}

return M
