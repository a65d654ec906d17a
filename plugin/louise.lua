-- Cheap definitions only: commands that load louise on first use. No Python starts here.
if vim.g.loaded_louise then
  return
end
vim.g.loaded_louise = true

local function cmd(name, fn, opts)
  vim.api.nvim_create_user_command(name, fn, opts or {})
end

--- Agent names to complete: the configured ones; the bundled demo agent only while no
--- real agent is configured or it is the default (typed in full, it still works).
local function agents()
  local opts = (package.loaded.louise or {}).options or {}
  local names = {}
  for name, _ in pairs(type(opts.agents) == 'table' and opts.agents or {}) do
    if name ~= 'demo' then
      table.insert(names, name)
    end
  end
  table.sort(names)
  if #names == 0 or opts.default_agent == 'demo' then
    table.insert(names, 'demo')
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
cmd('LouiseUnpark', function() require('louise').unpark() end, { desc = 'louise: do not send the parked prompt again' })
cmd('LouiseClose', function(o) require('louise').close(o.bang) end, { bang = true, desc = 'louise: close the session (asks when it is working; ! does not)' })
cmd('LouiseLimits', function(o) require('louise').limits(arg(o)) end, { nargs = '?', complete = agents, desc = 'louise: account limits' })
cmd('LouisePermission', function() require('louise').permission() end, { desc = 'louise: show the waiting permission request' })
cmd('LouisePrompt', function(o) require('louise').prompt(o.args) end, { nargs = '+', desc = 'louise: send a prompt to the current chat' })
cmd('LouiseRename', function(o) require('louise').rename(arg(o)) end, { nargs = '*', desc = 'louise: name this session (no name: asks)' })
cmd('LouiseResume', function(o) require('louise').resume(o.bang, arg(o)) end, { bang = true, nargs = '?', complete = agents, desc = "louise: resume, fork or delete a session of any agent (! every directory)" })
cmd('LouiseMode', function() require('louise').mode() end, { desc = 'louise: pick the mode' })
cmd('LouiseQueue', function() require('louise').queue() end, { desc = 'louise: edit, remove, send now or steer a queued prompt' })
cmd('LouiseModel', function() require('louise').model() end, { desc = 'louise: pick the model' })
cmd('LouiseOptions', function() require('louise').options_picker() end, { desc = 'louise: pick config options (model, …)' })
cmd('LouiseAdd', function(o)
  local range = o.range > 0 and { o.line1, o.line2 } or nil
  local kind, rest = o.args:match('^(%S+)%s*(.-)$')
  require('louise').add(kind or (range and 'selection' or 'buffer'), range, rest ~= '' and rest or nil)
end, { nargs = '*', range = true, complete = function(lead, line)
  if line:match('^%S+%s+image%s') or line:match('^%S+%s+file%s') then
    return vim.fn.getcompletion(lead, 'file')
  end
  return { 'buffer', 'file', 'selection', 'diagnostics', 'image' }
end, desc = 'louise: add context (or an image) to the next prompt' })
cmd('LouiseDrop', function(o) require('louise').drop(arg(o), o.bang) end, { nargs = '?', bang = true, desc = 'louise: take queued context off the next prompt (! all)' })
cmd('LouiseExport', function(o) require('louise').export(arg(o)) end, { nargs = '?', complete = 'file', desc = 'louise: export this session as Markdown' })
cmd('LouiseLog', function(o) require('louise').log(arg(o)) end, { nargs = '?', complete = agents, desc = "louise: an agent's stderr and protocol log (running or not)" })
cmd('LouisePermissions', function() require('louise').permissions() end, { desc = 'louise: remembered permission choices' })
cmd('LouiseSignIn', function(o) require('louise').sign_in(arg(o)) end, { nargs = '?', complete = agents, desc = "louise: sign in to the agent (its methods in a picker)" })
cmd('LouiseLogout', function(o) require('louise').logout(arg(o)) end, { nargs = '?', complete = agents, desc = 'louise: log out of the agent' })
cmd('LouiseReview', function(o) require('louise').review(arg(o)) end, { nargs = '?', desc = "louise: review what a turn changed (default: the newest)" })
cmd('LouiseUndo', function(o) require('louise').undo(arg(o)) end, { nargs = '?', desc = "louise: restore the files as before a turn (asks first)" })
cmd('LouiseToggle', function() require('louise').toggle() end, { desc = 'louise: hide or show the chat' })
cmd('LouiseNotices', function() require('louise.notice').open() end, { desc = "louise: what louise said lately, in full" })
cmd('LouiseTerminal', function() require('louise').terminal() end, { desc = "louise: open the chat's latest agent terminal" })
