-- The louise Python process: started on first use with jobstart(rpc = true), never
-- blocking the editor; commands go out as notifications, queued until it is ready;
-- restarted on the next use if it dies.
local M = { chan = nil, ready = false, queue = {}, stderr = {}, pid = nil, starts = 0 }

local MAX_STDERR_LINES = 400
local MAX_QUEUE = 256
-- Quitting: the Python side's whole exit (transcripts and the limits cache written first,
-- then the agents closed and stopped within what is left; louise/nvim/host.py's
-- EXIT_BUDGET_SECONDS is the same budget), asked for on VimLeavePre so that Neovim's own
-- SIGTERM, and its SIGKILL 2 s later, never cut it off. Neovim waits at most the budget
-- and the margin for the process to exit.
M.EXIT_BUDGET_MS = 300
M.EXIT_MARGIN_MS = 150

local function plugin_root()
  local src = debug.getinfo(1, 'S').source:sub(2)
  return vim.fn.fnamemodify(src, ':p:h:h:h')
end

--- The interpreter: setup{python=…}, $LOUISE_PYTHON, the plugin's own .venv, python3.
function M.python()
  local opts = require('louise').options or {}
  if opts.python and opts.python ~= '' then
    return opts.python
  end
  local env = vim.env.LOUISE_PYTHON
  if env and env ~= '' then
    return env
  end
  local venv = plugin_root() .. '/.venv/bin/python'
  if vim.uv.fs_stat(venv) then
    return venv
  end
  return 'python3'
end

function M.root()
  return plugin_root()
end

--- VimLeavePre: ask the Python side to stop within the exit budget and wait for it (at
--- most the budget and the margin), so quitting takes no longer and loses nothing.
function M.stop_for_exit()
  local chan = M.chan
  if not chan or chan <= 0 then
    return
  end
  if (require('louise').options or {}).host == 'rplugin' then
    -- The shared host is not louise's job: it answers once the engine is down (bounded
    -- by the budget on its side).
    pcall(vim.rpcrequest, chan, 'louise_stop', M.EXIT_BUDGET_MS)
    return
  end
  pcall(vim.rpcnotify, chan, 'louise_stop', M.EXIT_BUDGET_MS)
  pcall(vim.fn.jobwait, { chan }, M.EXIT_BUDGET_MS + M.EXIT_MARGIN_MS)
end

-- A first command's agent named to the new process beyond this (JSON) is not guessed at.
local MAX_EARLY_HINT = 64 * 1024

--- What the Python process may start first thing, before its modules load, for the
--- command that starts it (louise/nvim/early_agent.py): the agent a chat or a new session
--- asks for and setup{}'s agents, as JSON; nil for any other command or through the
--- session host. A speculation: the engine takes that process only when the configuration
--- it validates starts exactly the same, else it is stopped.
function M.early_agent(command, args)
  if command ~= 'chat' and command ~= 'new' then
    return nil
  end
  local louise = require('louise')
  local opts = louise.options or {}
  if opts.host == 'auto' or opts.host == 'rplugin' then
    return nil
  end
  local engine_opts = louise.engine_opts()
  local setup = false
  for _, key in ipairs(require('louise.options').ENGINE_KEYS) do
    if engine_opts[key] ~= nil then
      setup = true
    end
  end
  local agent = type(args) == 'table' and args.agent or nil
  local ok, json = pcall(vim.json.encode, {
    agent = type(agent) == 'string' and agent or nil,
    setup = setup,
    agents = setup and engine_opts.agents or nil,
    default_agent = setup and engine_opts.default_agent or nil,
  })
  if not ok or #json > MAX_EARLY_HINT then
    return nil
  end
  return json
end

--- Start the Python process (once). `command` and `args`: the command it is started for
--- (its agent may be started early, see early_agent).
function M.start(command, args)
  if M.chan then
    return M.chan
  end
  vim.api.nvim_create_autocmd('VimLeavePre', {
    group = vim.api.nvim_create_augroup('louise_engine_exit', { clear = true }),
    callback = function()
      M.stop_for_exit()
    end,
  })
  if (require('louise').options or {}).host == 'rplugin' then
    -- Classic remote plugin: the shared Python host; needs :UpdateRemotePlugins.
    -- The manifest defines the function lazily (FuncUndefined), so just call it.
    local ok = pcall(vim.fn.LouiseRpluginStart)
    if not ok then
      require('louise.notice').notify('louise: setup{host = "rplugin"} needs :UpdateRemotePlugins and a restart (the default host needs neither)', vim.log.levels.ERROR)
      return nil
    end
    M.ready = false
    M.chan = -1 -- the real channel arrives with on_ready
    return M.chan
  end
  M.ready = false
  M.stderr = {}
  M.starts = M.starts + 1
  local python = M.python()
  local early = M.early_agent(command, args)
  -- -P (safe path): the current directory, a repository the person opened, is not on
  -- the import path, so a `louise/` package in it can never run instead of ours.
  local ok, chan = pcall(vim.fn.jobstart, { python, '-P', '-m', 'louise.nvim' }, {
    rpc = true,
    -- Always set: one inherited from Neovim's own environment never names an agent.
    env = { LOUISE_EARLY_AGENT = early or '' },
    on_stderr = function(_, data)
      for _, line in ipairs(data) do
        if line ~= '' then
          table.insert(M.stderr, line)
        end
      end
      while #M.stderr > MAX_STDERR_LINES do
        table.remove(M.stderr, 1)
      end
    end,
    on_exit = function(_, code)
      M.chan, M.ready, M.pid = nil, false, nil
      if vim.v.exiting ~= vim.NIL then
        return
      end
      vim.schedule(function()
        local tail = table.concat(vim.list_slice(M.stderr, math.max(1, #M.stderr - 20)), '\n')
        local chat = require('louise.chat')
        local open = chat.engine_died()
        -- Restart at once when chats are open, and reattach them (session/load or
        -- resume where the agent can); bounded so a crash loop cannot spin.
        local now = vim.uv.now()
        M.recent_exits = vim.tbl_filter(function(t)
          return now - t < 60000
        end, M.recent_exits or {})
        table.insert(M.recent_exits, now)
        local restart = open > 0 and #M.recent_exits <= 3
        M.last_exit = { code = code, tail = tail }
        -- One line (a long one stops the editor at a hit-enter prompt); its stderr tail
        -- is in :LouiseLog.
        local how = code >= 128 and ('was stopped by signal %d'):format(code - 128)
          or code == 0 and 'stopped' or ('exited (status %d)'):format(code)
        require('louise.notice').notify(
          ('louise: the Python side %s; %s (:LouiseLog shows its last stderr lines)'):format(
            how,
            restart and 'restarting it and reattaching your chats' or 'it restarts on the next command'
          ),
          vim.log.levels.ERROR
        )
        if restart then
          chat.reattach_all()
        end
      end)
    end,
  })
  if not ok or chan <= 0 then
    require('louise.notice').notify(
      ('louise: could not start %s -m louise.nvim (%s). Run the build step (python3 dev.py setup) or set setup{python = …}; see :checkhealth louise.'):format(
        python,
        ok and tostring(chan) or chan
      ),
      vim.log.levels.ERROR
    )
    return nil
  end
  M.chan = chan
  return chan
end

function M.on_ready(pid, chan)
  M.ready = true
  M.pid = pid
  if chan and chan ~= vim.NIL then
    M.chan = chan
  end
  local queued = M.queue
  M.queue = {}
  for _, item in ipairs(queued) do
    vim.rpcnotify(M.chan, 'louise', item[1], item[2])
  end
end

-- The commands the engine answers by opening a chat (focused: see chat.ask).
local ASKS_FOR_A_CHAT = { chat = true, new = true, focus = true, load = true, fork = true }

--- Send a command to the engine (a notification: Neovim never waits on Python).
function M.send(command, args)
  args = args or vim.empty_dict()
  if not M.start(command, args) then
    return false
  end
  if ASKS_FOR_A_CHAT[command] then
    require('louise.chat').ask()
  end
  if M.ready then
    vim.rpcnotify(M.chan, 'louise', command, args)
  elseif #M.queue < MAX_QUEUE then
    table.insert(M.queue, { command, args })
  end
  return true
end

function M.stop()
  if M.chan then
    pcall(vim.fn.jobstop, M.chan)
    M.chan, M.ready = nil, false
  end
end

return M
