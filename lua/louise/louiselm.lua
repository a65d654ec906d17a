-- A LouiseLM user's habits kept: its `:Louiselm…` command names (each says once what
-- louise calls it) and, with `keymaps = true`, its `<leader>l` maps. Only for a setup{}
-- written for LouiseLM (:help louise-migrating): nobody else gets a second set of names.
local M = { noted = {} }

-- LouiseLM's setup{} keys louise does not have itself (options.lua's LOUISELM_KEYS, and
-- the per-agent ones of louise/config/louiselm.py): one of them marks a LouiseLM setup{}.
local AGENT_KEYS = { 'skills', 'latest', 'version', 'upgrade', 'transcript_layout',
  'capabilities', 'auto' }

--- Whether setup{} was written for LouiseLM: a setting only LouiseLM has, or an agent's
--- `provider` as LouiseLM's routes or prefix map (louise's own is a string).
function M.is_louiselm(opts)
  if type(opts) ~= 'table' then
    return false
  end
  for _, key in ipairs(require('louise.options').LOUISELM_KEYS) do
    if opts[key] ~= nil then
      return true
    end
  end
  for _, agent in pairs(type(opts.agents) == 'table' and opts.agents or {}) do
    if type(agent) == 'table' then
      for _, key in ipairs(AGENT_KEYS) do
        if agent[key] ~= nil then
          return true
        end
      end
      if type(agent.provider) == 'table' then
        return true
      end
    end
  end
  return false
end

local function louise()
  return require('louise')
end

local function arg(o)
  return o.args ~= '' and o.args or nil
end

-- LouiseLM's command (and its older spelling) -> louise's name and what it does.
M.COMMANDS = {
  { 'LouiselmChat', 'LouiseChat', function(o) louise().chat(arg(o)) end, { nargs = '?' } },
  { 'LouiselmSessionNew', 'LouiseNew', function(o) louise().new(arg(o)) end, { nargs = '?' },
    'LouiselmNewSession' },
  { 'LouiselmSessionSwitch', 'LouiseSwitch', function() louise().switch() end, {},
    'LouiselmSwitchSession' },
  { 'LouiselmSessionRename', 'LouiseRename', function(o)
    if o.args ~= '' then
      louise().rename(o.args)
    else
      vim.ui.input({ prompt = 'Name this session: ' }, function(name)
        if name and name ~= '' then
          louise().rename(name)
        end
      end)
    end
  end, { nargs = '*' }, 'LouiselmRenameSession' },
  { 'LouiselmSessionClose', 'LouiseClose', function(o) louise().close(o.bang) end,
    { bang = true }, 'LouiselmCloseSession' },
  { 'LouiselmSessionOptions', 'LouiseOptions', function() louise().options_picker() end, {} },
  { 'LouiselmResume', 'LouiseResume', function(o) louise().resume(o.bang, arg(o)) end,
    { bang = true, nargs = '?' } },
  { 'LouiselmCancel', 'LouiseCancel', function() louise().cancel() end, {} },
  { 'LouiselmPermissions', 'LouisePermissions', function() louise().permissions() end, {} },
  { 'LouiselmMentionBuffer', 'LouiseAdd buffer', function() louise().add('buffer') end, {} },
  { 'LouiselmPickFile', 'LouiseAdd file', function(o) louise().add('file', nil, arg(o)) end,
    { nargs = '?', complete = 'file' } },
  { 'LouiselmSendSelection', 'LouiseAdd selection', function(o)
    louise().add('selection', o.range > 0 and { o.line1, o.line2 } or nil)
  end, { range = true } },
  { 'LouiselmDiagnostics', 'LouiseAdd diagnostics', function() louise().add('diagnostics') end,
    {} },
  { 'LouiselmToMarkdown', 'LouiseExport', function(o) louise().export(arg(o)) end,
    { nargs = '?', complete = 'file' } },
  { 'LouiselmLimits', 'LouiseLimits', function(o) louise().limits(arg(o)) end, { nargs = '?' } },
}

--- Say once per name (a session of Neovim) what louise calls a LouiseLM command.
function M.note(old, new)
  if M.noted[old] then
    return
  end
  M.noted[old] = true
  require('louise.notice').notify(('louise: :%s is :%s in louise (this note once)'):format(old, new),
    vim.log.levels.INFO)
end

--- Define the `:Louiselm…` commands (setup{} of a LouiseLM config).
function M.define_commands()
  for _, spec in ipairs(M.COMMANDS) do
    local name, new, fn, opts, older = spec[1], spec[2], spec[3], spec[4], spec[5]
    for _, old in ipairs({ name, older }) do
      vim.api.nvim_create_user_command(old, function(o)
        M.note(old, new)
        fn(o)
      end, vim.tbl_extend('force', opts, { desc = ('louise: :%s (LouiseLM name)'):format(new) }))
    end
  end
end

-- LouiseLM's default maps (its help's table): lhs, modes, louise's command.
M.KEYMAPS = {
  { '<leader>lc', 'n', 'LouiselmChat' },
  { '<leader>lsn', 'n', 'LouiselmSessionNew' },
  { '<leader>lsw', 'n', 'LouiselmSessionSwitch' },
  { '<leader>lsr', 'n', 'LouiselmSessionRename' },
  { '<leader>lsx', 'n', 'LouiselmSessionClose' },
  { '<leader>lso', 'n', 'LouiselmSessionOptions' },
  { '<leader>lr', 'n', 'LouiselmResume' },
  { '<leader>lR', 'n', 'LouiselmResume!' },
  { '<leader>lC', 'n', 'LouiselmCancel' },
  { '<leader>lp', 'n', 'LouiselmPermissions' },
  { '<leader>lb', 'n', 'LouiselmMentionBuffer' },
  { '<leader>lf', 'n', 'LouiselmPickFile' },
  { '<leader>ls', 'x', 'LouiselmSendSelection' },
  { '<leader>ld', 'n', 'LouiselmDiagnostics' },
  { '<leader>lm', 'n', 'LouiselmToMarkdown' },
  { '<leader>lL', 'n', 'LouiselmLimits' },
}

local function louise_name(command)
  local bare = command:gsub('!$', '')
  for _, spec in ipairs(M.COMMANDS) do
    if spec[1] == bare then
      return spec[2] .. (command:sub(-1) == '!' and '!' or '')
    end
  end
  return command
end

--- LouiseLM's `<leader>l` maps, each only where the person has no mapping of their own;
--- they run louise's command directly (no note: the keys are the same as before).
function M.define_keymaps()
  for _, map in ipairs(M.KEYMAPS) do
    local lhs, mode, command = map[1], map[2], map[3]
    if vim.fn.maparg(lhs, mode) == '' then
      local rhs = mode == 'x' and (':' .. louise_name(command) .. '<cr>')
        or ('<cmd>' .. louise_name(command) .. '<cr>')
      vim.keymap.set(mode, lhs, rhs, { silent = true, desc = 'louise: :' .. louise_name(command) })
    end
  end
end

return M
