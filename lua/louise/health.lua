-- :checkhealth louise. Every check is bounded by a timeout, nothing here starts louise's
-- Python process or an agent session: the interpreter runs `-m louise.nvim.health --json`
-- (or `-V`), and an agent's command at most `--version`.
local M = {}

local health = vim.health
-- The report_* names are what Neovim before 0.10 has: enough to say it is too old.
local report = {
  start = health.start or health.report_start,
  ok = health.ok or health.report_ok,
  info = health.info or health.report_info,
  warn = health.warn or health.report_warn,
  error = health.error or health.report_error,
}

local VERSION_OF_PYTHON_TIMEOUT_MS = 5000
local PROBE_TIMEOUT_MS = 15000
local VERSION_TIMEOUT_MS = 3000

--- Run commands at once, each until it ends or `timeout` ms have passed; never raises,
--- never waits longer. Each runs in its own process group (detach), so a timed-out one is
--- killed with every child it started. Returns a result per command: { code, stdout,
--- stderr }, code 124 when it timed out, -1 when it could not start.
local function run_all(commands, timeout)
  local results, procs = {}, {}
  for i, command in ipairs(commands) do
    local opts = vim.tbl_extend('force', { text = true, detach = true }, command.opts or {})
    local started, proc = pcall(vim.system, command.argv, opts, function(result)
      results[i] = results[i] or result -- from a libuv callback: only record it
    end)
    if started then
      procs[i] = proc
    else
      results[i] = { code = -1, stdout = '', stderr = tostring(proc) }
    end
  end
  vim.wait(timeout, function()
    for i = 1, #commands do
      if not results[i] then
        return false
      end
    end
    return true
  end, 20, true)
  for i, proc in pairs(procs) do
    if not results[i] then
      pcall(vim.uv.kill, -proc.pid, 'sigkill')
      results[i] = { code = 124, stdout = '', stderr = '' }
    end
  end
  return results
end

local function run(argv, opts, timeout)
  return run_all({ { argv = argv, opts = opts } }, timeout)[1]
end

local function lines(text)
  return vim.split(vim.trim(text or ''), '\n', { plain = true, trimempty = true })
end

local function last_line(text)
  local all = lines(text)
  return all[#all] or ''
end

local function failure(res, what)
  if res.code == 124 then
    return ('%s did not finish within the timeout'):format(what)
  end
  local detail = last_line(res.stderr) -- a Python traceback ends with the error itself
  detail = detail ~= '' and (': ' .. detail) or ''
  return ('%s failed (exit %s)%s'):format(what, tostring(res.code), detail)
end

-- ------------------------------------------------------------------ Neovim

local function check_neovim()
  report.start('Neovim')
  local has_version, v = pcall(vim.version)
  local text = has_version and ('%d.%d.%d'):format(v.major, v.minor, v.patch) or 'unknown'
  if vim.fn.has('nvim-0.10') == 1 then
    report.ok(('Neovim %s'):format(text))
    return true
  end
  report.error(('Neovim %s: louise needs Neovim 0.10 or newer'):format(text),
    'upgrade Neovim: https://github.com/neovim/neovim/releases')
  return false
end

-- ------------------------------------------------------------------ Python

local function rplugin_host()
  return (require('louise').options or {}).host == 'rplugin'
end

--- The interpreter louise runs in, where it was found, and how to fix it. By default that
--- of engine.python() (same order: setup{python}, $LOUISE_PYTHON, the plugin's own
--- virtualenv, python3); with setup{host = 'rplugin'}, Neovim's shared Python host.
local function interpreter()
  local root = require('louise.engine').root()
  if rplugin_host() then
    local prog = vim.fn.expand(vim.g.python3_host_prog or '')
    local fix = {
      'set g:python3_host_prog to an interpreter with louise and pynvim, e.g. '
        .. root .. '/.venv/bin/python',
      'or drop setup{host} for the default: louise starts its own interpreter',
    }
    if prog ~= '' then
      return prog, "g:python3_host_prog, as setup{host = 'rplugin'} asks", fix
    end
    return 'python3', "python3 on $PATH, Neovim's Python host (g:python3_host_prog is not set)", fix
  end
  local fix = {
    ('run the build step in the plugin directory: cd %s && python3 dev.py setup'):format(root),
    'or point louise at an interpreter that has it: '
      .. "require('louise').setup{ python = '/path/to/python' }",
  }
  local python = require('louise.engine').python()
  local opts = require('louise').options or {}
  if opts.python and opts.python ~= '' then
    return python, 'setup{python}', fix
  end
  if vim.env.LOUISE_PYTHON and vim.env.LOUISE_PYTHON ~= '' then
    return python, '$LOUISE_PYTHON', fix
  end
  if python ~= 'python3' then
    return python, "the plugin's virtualenv", fix
  end
  return python, 'python3 on $PATH: the plugin has no virtualenv yet', fix
end

--- With setup{host = 'rplugin'}: the python3 provider is on and the manifest knows louise.
local function check_rplugin_manifest()
  if vim.g.loaded_python3_provider == 0 then
    report.error("setup{host = 'rplugin'}, but Neovim's python3 provider is disabled",
      'remove `let g:loaded_python3_provider = 0` from your config')
    return
  end
  local manifest = vim.env.NVIM_RPLUGIN_MANIFEST
  if not manifest or manifest == '' then
    manifest = vim.fn.stdpath('data') .. '/rplugin.vim'
  end
  local found, text = pcall(vim.fn.readfile, manifest)
  if found and table.concat(text, '\n'):find('louise_rplugin.py', 1, true) then
    report.ok('remote plugin manifest lists louise: ' .. manifest)
  else
    report.error('remote plugin manifest does not list louise: ' .. manifest,
      'run :UpdateRemotePlugins, then restart Neovim')
  end
end

local function check_process()
  local engine = require('louise.engine')
  if rplugin_host() then
    report.info(engine.chan and "louise is running in Neovim's Python host"
      or "louise starts in Neovim's Python host on the first :Louise command")
  elseif engine.chan then
    report.info(('Python process: running (pid %s, started %d time(s) in this Neovim)'):format(
      tostring(engine.pid or '?'), engine.starts))
  elseif engine.starts > 0 then
    local first = math.max(1, #engine.stderr - 4)
    local last = table.concat(vim.list_slice(engine.stderr, first), '\n')
    report.warn('Python process: exited; it restarts on the next :Louise command'
      .. (last ~= '' and ('. Its last stderr lines:\n' .. last) or ''))
  else
    report.info('Python process: not started yet (it starts on the first :Louise command)')
  end
end

--- `python -m louise.nvim.health --json` with the engine part of setup{} on stdin: one
--- JSON object (see louise/nvim/health.py), or nil and the run's result.
local function probe(python, input)
  -- -P: a `louise/` package in the current directory must not run (as for the engine); a
  -- Python too old for -P fails here and bare_version() below says which version it is.
  local res = run({ python, '-P', '-m', 'louise.nvim.health', '--json' }, { stdin = input },
    PROBE_TIMEOUT_MS)
  local json = last_line(res.stdout) -- the probe prints its JSON last
  local decoded, result = pcall(vim.json.decode, json, { luanil = { object = true } })
  if res.code ~= 0 or not decoded or type(result) ~= 'table' or type(result.python) ~= 'table' then
    return nil, res
  end
  return result, res
end

--- The interpreter's version when louise cannot run in it at all (`python -V`).
local function bare_version(exe)
  local res = run({ exe, '-V' }, {}, VERSION_OF_PYTHON_TIMEOUT_MS)
  return ((res.stdout or '') .. (res.stderr or '')):match('Python (%d+%.%d+[%.%d]*)'), res
end

local function new_enough(version)
  local major, minor = tostring(version):match('^(%d+)%.(%d+)')
  major, minor = tonumber(major), tonumber(minor)
  return major and (major > 3 or (major == 3 and minor >= 11))
end

--- The interpreter, its version and the louise package. Returns the probe's report when
--- louise runs in that interpreter.
local function check_python(input)
  report.start('Python')
  local python, origin, fix = interpreter()
  local exe = vim.fn.exepath(python)
  if exe == '' then
    report.error(('interpreter %s (from %s) is not an executable'):format(python, origin), fix)
    return nil
  end
  local result, res = probe(exe, input)
  local too_old = 'Python %s at %s (from %s): louise needs Python 3.11 or newer'
  if not result then
    local version, version_res = bare_version(exe)
    if not version then
      report.error(failure(version_res, ('%s -V'):format(exe)), fix)
    elseif not new_enough(version) then
      report.error(too_old:format(version, exe, origin), fix)
    else
      report.ok(('Python %s: %s (from %s)'):format(version, exe, origin))
      report.error(failure(res, 'import louise'), fix)
    end
    return nil
  end
  local py = result.python
  if not new_enough(py.version) then
    report.error(too_old:format(py.version, py.executable, origin), fix)
    return nil
  end
  report.ok(('Python %s: %s (from %s)'):format(py.version, py.executable, origin))
  report.ok(('louise %s: %s'):format(py.louise, py.louise_file))
  if rplugin_host() then
    check_rplugin_manifest()
  end
  return result, fix
end

-- ------------------------------------------------------------------ configuration

local function report_config(cfg)
  report.start('Configuration')
  -- The editor options, checked as setup() checks them (lua/louise/options.lua); the
  -- engine's are checked by the Python side below.
  local _, problems = require('louise.options').validate(require('louise').raw_options)
  for _, problem in ipairs(problems) do
    local say = problem.level == 'error' and report.error or report.warn
    say(problem.text, problem.hint)
  end
  for _, warning in ipairs(cfg.warnings or {}) do
    report.warn(warning.text, warning.hint ~= '' and warning.hint or nil)
  end
  if #cfg.problems > 0 then
    for _, problem in ipairs(cfg.problems) do
      report.error(problem.text, problem.hint ~= '' and problem.hint or nil)
    end
    report.info('until this is fixed, louise offers only the bundled demo agent')
  elseif cfg.from_setup then
    report.ok('the engine options of setup{} are valid '
      .. '(config.toml is not read while setup{} has any)')
  elseif cfg.file_exists then
    report.ok(('config file is valid: %s'):format(cfg.file))
  else
    report.ok(('no config file at %s: defaults (the bundled demo agent)'):format(cfg.file))
  end
  if not cfg.from_setup and vim.env.LOUISE_CONFIG and vim.env.LOUISE_CONFIG ~= '' then
    report.info('the config file comes from $LOUISE_CONFIG')
  end
end

-- ------------------------------------------------------------------ agents

--- What `<command> --version` said, for the report.
local function version_text(command, res)
  if res.code == 124 then
    return ('no answer to --version within %d s'):format(VERSION_TIMEOUT_MS / 1000)
  end
  local first = lines(res.stdout)[1] or lines(res.stderr)[1]
  if res.code ~= 0 or not (first and first:match('%d')) then
    return 'reports no version'
  end
  first = #first > 80 and (first:sub(1, 77) .. '...') or first
  return ('%s --version: %s'):format(vim.fn.fnamemodify(command, ':t'), first)
end

--- Whether this Neovim has a working session of the agent (then it is signed in); louise
--- starts no agent for :checkhealth, so otherwise it cannot know.
local function signed_in(name)
  local loaded = package.loaded['louise.chat']
  for _, state in pairs(loaded and loaded.chats or {}) do
    local status = state.agent == name and type(state.status) == 'table' and state.status.status
    if status and status ~= 'starting' and status ~= 'error' and status ~= 'closed' then
      return true
    end
  end
  return false
end

local function report_agents(agents)
  report.start('Agents')
  -- Ask every found command for its version at once, so the wait is one timeout at most.
  local commands, index = {}, {}
  for i, agent in ipairs(agents) do
    if agent.resolved and not agent.builtin then
      table.insert(commands, { argv = { agent.resolved, '--version' } })
      index[i] = #commands
    end
  end
  local versions = run_all(commands, VERSION_TIMEOUT_MS)
  for i, agent in ipairs(agents) do
    local name = agent.name .. (agent.default and ' (default)' or '')
    if agent.builtin then
      report.ok(('%s: the bundled demo agent'):format(name))
    elseif not agent.resolved then
      local where = agent.command:find('/', 1, true) and 'is not an executable file'
        or 'is not found on $PATH'
      local install = type(agent.install) == 'string' and agent.install or 'install it'
      report.error(('%s: command %q %s'):format(name, agent.command, where),
        ('%s, or set agents.%s.command to its full path'):format(install, agent.name))
    else
      local version = version_text(agent.command, versions[index[i]])
      report.ok(('%s: %s (%s)'):format(name, agent.resolved, version))
      if signed_in(agent.name) then
        report.ok(('%s: signed in (a session of it works in this Neovim)'):format(agent.name))
      else
        report.info(('%s: sign-in not checked (:checkhealth starts no agent); louise asks when'
          .. ' the agent needs it, and :LouiseSignIn %s signs in now'):format(agent.name, agent.name))
      end
    end
  end
end

-- ------------------------------------------------------------------ state

local function report_state(state, cache)
  report.start('State')
  local dir = state.path
  if vim.env.LOUISE_STATE_DIR and vim.env.LOUISE_STATE_DIR ~= '' then
    dir = dir .. ' ($LOUISE_STATE_DIR)'
  end
  local fix = 'make it writable, or point $LOUISE_STATE_DIR at a writable directory'
  if state.exists and state.writable then
    report.ok('state directory is writable: ' .. dir)
  elseif state.exists then
    local why = state.error and (': ' .. state.error) or ''
    report.error(('state directory is not writable: %s%s'):format(dir, why), fix)
  elseif state.writable then
    report.ok(('state directory %s does not exist yet; it is created on first use'):format(dir))
  else
    local why = 'state directory %s cannot be created: %s is not writable'
    report.error(why:format(dir, state.parent or '?'), fix)
  end
  if cache.status == 'ok' then
    local count = #(cache.agents or {})
    report.ok(('limits cache is readable: %s (%d agent(s) recorded)'):format(cache.path, count))
    for _, line in ipairs(cache.warnings or {}) do
      report.warn(line)
    end
  elseif cache.status == 'missing' then
    report.ok(('limits cache not created yet: %s'):format(cache.path))
  else
    for _, line in ipairs(cache.warnings or {}) do
      report.warn(line)
    end
  end
end

-- ------------------------------------------------------------------ entry

function M.check()
  if not check_neovim() then
    return
  end
  local encoded, input = pcall(vim.json.encode, { opts = require('louise').engine_opts() })
  local result, fix = check_python(encoded and input or '{}')
  if not result then
    return
  end
  if result.engine_error then
    local why = 'the Neovim side of louise cannot be imported: ' .. result.engine_error
    report.error(why, fix)
    return
  end
  report.ok('pynvim ' .. result.pynvim)
  check_process()
  if not encoded then
    report.start('Configuration')
    report.error('setup{}: a value cannot be passed to the Python side: ' .. tostring(input),
      'engine options take only strings, numbers, booleans and tables of them')
    return
  end
  report_config(result.config)
  if result.agents then
    report_agents(result.agents)
  end
  report_state(result.state, result.cache)
end

return M
