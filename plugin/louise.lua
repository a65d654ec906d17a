-- Cheap definitions only: commands that load louise on first use. No Python starts here.
if vim.g.loaded_louise then
  return
end
vim.g.loaded_louise = true

local function cmd(name, fn, opts)
  vim.api.nvim_create_user_command(name, fn, opts or {})
end

local function agents()
  local opts = (package.loaded.louise or {}).options or {}
  local names = { 'demo' }
  for name, _ in pairs(type(opts.agents) == 'table' and opts.agents or {}) do
    if name ~= 'demo' then
      table.insert(names, name)
    end
  end
  return names
end

local function arg(o)
  return o.args ~= '' and o.args or nil
end

cmd('LouiseChat', function(o) require('louise').chat(arg(o)) end, { nargs = '?', complete = agents, desc = 'louise: open or focus the chat' })
cmd('LouiseNew', function(o) require('louise').new(arg(o)) end, { nargs = '?', complete = agents, desc = 'louise: new session' })
cmd('LouiseSwitch', function() require('louise').switch() end, { desc = 'louise: switch session' })
cmd('LouiseCancel', function() require('louise').cancel() end, { desc = 'louise: cancel the turn' })
cmd('LouiseClose', function() require('louise').close() end, { desc = 'louise: close the session' })
cmd('LouiseLimits', function(o) require('louise').limits(arg(o)) end, { nargs = '?', complete = agents, desc = 'louise: account limits' })
cmd('LouisePermission', function() require('louise').permission() end, { desc = 'louise: show the waiting permission request' })
cmd('LouisePrompt', function(o) require('louise').prompt(o.args) end, { nargs = '+', desc = 'louise: send a prompt to the current chat' })
