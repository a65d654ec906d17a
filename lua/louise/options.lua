-- The editor options of setup{} (those only the Lua side reads): defaults, and validation
-- with field paths. A bad value is reported at setup() and replaced by its default, so a
-- typo never leaves louise half-working; the engine options go to the Python side, which
-- validates them whole (louise/config/).
local M = {}

-- The keys of config.toml that setup{} passes to the engine (louise/nvim/engine_options.py's
-- ENGINE_KEYS).
M.ENGINE_KEYS = { 'agents', 'default_agent', 'permissions', 'fs', 'terminal', 'request_timeout',
  'prompt_idle_timeout', 'mcp_servers', 'checkpoints', 'limits', 'context' }
-- LouiseLM's top-level settings: passed on too, so that the engine names each once, with
-- why louise ignores it (louise/config/louiselm.py LOUISELM_TOP_KEYS, :help louise-migrating).
M.LOUISELM_KEYS = { 'skills', 'attention', 'beads', 'capture', 'workflows' }

M.defaults = {
  layout = 'right',
  width = 80,
  prompt_height = 6,
  fold_thoughts = true,
  markdown = true,
  keymaps = false,
  alerts = true,
  send_on_enter = false,
  picker = 'auto',
  winbar = { others = 'active' },
  notify = false,
  start_engine = 'first_use',
}

local function integer(min)
  return function(v)
    if type(v) ~= 'number' or v ~= math.floor(v) or v < min then
      return ('expected a number (whole, at least %d)'):format(min)
    end
  end
end

--- A size: a whole number of at least `min` (columns or lines), or a fraction of the
--- editor in (0, 1).
local function size(min)
  return function(v)
    if type(v) ~= 'number' or v <= 0 or (v >= 1 and (v ~= math.floor(v) or v < min)) then
      return ('expected a number (whole, at least %d, or a fraction of the editor in (0, 1))')
        :format(min)
    end
  end
end

local function boolean(v)
  if type(v) ~= 'boolean' then
    return 'expected true or false'
  end
end

local function one_of(values)
  return function(v)
    if not vim.tbl_contains(values, v) then
      return 'expected ' .. table.concat(vim.tbl_map(function(x)
        return ('%q'):format(x)
      end, values), ' or ')
    end
  end
end

local function percent(v)
  if type(v) ~= 'number' or v <= 0 or v > 100 then
    return 'expected a percentage left in (0, 100]'
  end
end

--- Each editor option: a check returning a problem (or nil), a hint, and for tables the
--- checks of their fields.
M.SCHEMA = {
  python = { check = function(v)
    if type(v) ~= 'string' or v == '' then
      return 'expected the path of a Python interpreter'
    end
  end, hint = "e.g. python = '~/.venvs/louise/bin/python'" },
  layout = { check = one_of({ 'right', 'left', 'bottom', 'float', 'tab' }),
    hint = "layout = 'right' (a column on the right), 'left', 'bottom', 'float' or 'tab'" },
  width = { check = size(20), hint = 'columns, or a fraction of the editor: width = 80, width = 0.4' },
  height = { check = size(5),
    hint = "lines, or a fraction of the editor (layout 'bottom' and 'float'): height = 0.4" },
  prompt_height = { check = integer(1), hint = 'a number of lines, e.g. prompt_height = 6' },
  fold_thoughts = { check = boolean, hint = 'fold_thoughts = true' },
  markdown = { check = boolean, hint = 'markdown = true' },
  keymaps = { check = boolean, hint = 'keymaps = true' },
  send_on_enter = { check = boolean, hint = 'send_on_enter = true' },
  picker = { check = one_of({ 'auto', 'telescope', 'fzf-lua', 'snacks', 'select' }),
    hint = "picker = 'select' (always vim.ui.select), or 'telescope', 'fzf-lua', 'snacks'"
      .. " (a transcript preview); 'auto' (the default) takes the first installed" },
  host = { check = one_of({ 'rplugin', 'auto' }),
    hint = "host = 'auto' (agents run in the session host, `louise serve`, and outlive Neovim),"
      .. " 'rplugin', or leave it out" },
  host_via = { check = function(v)
    if type(v) ~= 'string' or vim.trim(v) == '' then
      return 'expected a command, e.g. "ssh devbox louise serve --stdio"'
    end
  end, hint = "host_via = 'ssh devbox louise serve --stdio' (with host = 'auto')" },
  start_engine = { check = one_of({ 'first_use', 'idle' }),
    hint = "start_engine = 'idle' (start louise's Python process once Neovim is idle after"
      .. " startup), or 'first_use' (the default)" },
  alerts = {
    check = function(v)
      if type(v) ~= 'boolean' and type(v) ~= 'table' then
        return 'expected true, false or a table'
      end
    end,
    hint = 'alerts = false, or alerts = { warning = 20, error = 10 } (percent left)',
    fields = { warning = percent, error = percent },
  },
  notify = {
    check = function(v)
      if type(v) ~= 'boolean' and type(v) ~= 'table' then
        return 'expected true, false or a table'
      end
    end,
    hint = "notify = true, or notify = { turn_end = true, permission = true, bell = true,"
      .. " command = { 'notify-send', 'louise' } }",
    fields = {
      turn_end = boolean,
      permission = boolean,
      bell = boolean,
      command = function(v)
        if type(v) ~= 'table' or #v == 0 or #v ~= vim.tbl_count(v) then
          return 'expected a list of strings (the command and its arguments)'
        end
        for _, part in ipairs(v) do
          if type(part) ~= 'string' or part == '' then
            return 'expected a list of strings (the command and its arguments)'
          end
        end
      end,
    },
  },
  winbar = {
    check = function(v)
      if type(v) ~= 'table' then
        return 'expected a table'
      end
    end,
    hint = "winbar = { others = 'all' }",
    fields = { others = one_of({ 'active', 'all' }) },
  },
}

local function describe(v)
  if type(v) == 'string' then
    return ('%q'):format(v)
  end
  return vim.inspect(v)
end

local function closest(key, candidates)
  local best, best_d = nil, 3
  for _, c in ipairs(candidates) do
    -- Levenshtein distance (option names are short).
    local a, b = key, c
    local prev = {}
    for j = 0, #b do
      prev[j] = j
    end
    for i = 1, #a do
      local cur = { [0] = i }
      for j = 1, #b do
        local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
        cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      end
      prev = cur
    end
    local d = prev[#b]
    if d < best_d then
      best, best_d = c, d
    end
  end
  return best
end

--- Validate `opts` (setup{}'s table). Returns the options to use (defaults in place of
--- bad values) and the problems, each { path, text, hint, level }.
function M.validate(opts)
  local problems = {}
  local out = vim.deepcopy(M.defaults)
  if opts ~= nil and type(opts) ~= 'table' then
    table.insert(problems, { path = '', text = 'setup{}: expected a table, got ' .. describe(opts),
      hint = 'require("louise").setup { … }', level = 'error' })
    return out, problems
  end
  local known = {}
  for _, key in ipairs(M.ENGINE_KEYS) do
    known[key] = true
  end
  for _, key in ipairs(M.LOUISELM_KEYS) do
    known[key] = true
  end
  for key, _ in pairs(M.SCHEMA) do
    known[key] = true
  end
  for key, value in pairs(opts or {}) do
    local spec = M.SCHEMA[key]
    if spec then
      local why = spec.check(value)
      if why then
        table.insert(problems, {
          path = key,
          text = ('setup{}: %s: %s, got %s (using the default)'):format(key, why, describe(value)),
          hint = spec.hint,
          level = 'error',
        })
      elseif type(value) == 'table' and spec.fields then
        local merged = type(out[key]) == 'table' and out[key] or {}
        for field, fvalue in pairs(value) do
          local check = spec.fields[field]
          local fwhy = check and check(fvalue)
          if not check then
            local guess = closest(tostring(field), vim.tbl_keys(spec.fields))
            table.insert(problems, {
              path = key .. '.' .. tostring(field),
              text = ('setup{}: %s.%s: unknown setting (ignored)'):format(key, tostring(field)),
              hint = guess and ("did you mean '%s'?"):format(guess) or spec.hint,
              level = 'warn',
            })
          elseif fwhy then
            table.insert(problems, {
              path = key .. '.' .. tostring(field),
              text = ('setup{}: %s.%s: %s, got %s (using the default)'):format(key, tostring(field), fwhy,
                describe(fvalue)),
              hint = spec.hint,
              level = 'error',
            })
          else
            merged[field] = fvalue
          end
        end
        out[key] = merged
      else
        out[key] = value
      end
    elseif known[key] then
      out[key] = value -- an engine option: validated by the Python side
    else
      local names = vim.list_extend(vim.tbl_keys(M.SCHEMA), vim.deepcopy(M.ENGINE_KEYS))
      local guess = type(key) == 'string' and closest(key, names) or nil
      table.insert(problems, {
        path = tostring(key),
        text = ('setup{}: %s: unknown option (ignored)'):format(tostring(key)),
        hint = guess and ("did you mean '%s'?"):format(guess) or ('options: ' .. table.concat(
          (function()
            table.sort(names)
            return names
          end)(), ', ')),
        level = 'warn',
      })
    end
  end
  return out, problems
end

--- One message for the problems of a setup{} call (nil when there are none).
function M.message(problems)
  if #problems == 0 then
    return nil, nil
  end
  local lines = { 'louise: setup{} has problems (see :checkhealth louise):' }
  local level = vim.log.levels.WARN
  for _, p in ipairs(problems) do
    table.insert(lines, '  ' .. p.text .. (p.hint and p.hint ~= '' and ('; hint: ' .. p.hint) or ''))
    if p.level == 'error' then
      level = vim.log.levels.ERROR
    end
  end
  return table.concat(lines, '\n'), level
end

return M
