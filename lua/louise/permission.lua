-- Permission prompts: a float showing who asks, what it will touch, and every option the
-- agent offered, on number keys. q/<Esc> refuses this once: the agent's own `reject_once`
-- option (`cancelled` is for a cancelled turn, and agents treat it as one), `cancelled`
-- only when the agent offers no such option; nothing answers allow by default. `d` opens
-- the diff of every file in a tab. Closing the float by moving away does not answer:
-- :LouisePermission brings it back.
local M = { current = nil, win = nil, buf = nil, queue = 0 }

local api = vim.api
local text = require('louise.text')
local ICONS = { allow_once = '✓', allow_always = '✓✓', reject_once = '✗', reject_always = '✗✗' }

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

local function answer(option)
  local req = M.current
  if not req then
    return
  end
  M.current = nil
  M.hide()
  require('louise.engine').send('permission_answer', { id = req.id, option = option or vim.NIL })
end

--- The option that refuses this once without remembering anything, or nil (then the
--- answer is `cancelled`).
local function refusal(req)
  for _, opt in ipairs(req.options or {}) do
    if opt.kind == 'reject_once' then
      return opt
    end
  end
  return nil
end

function M.hide()
  if M.win and api.nvim_win_is_valid(M.win) then
    pcall(api.nvim_win_close, M.win, true)
  end
  M.win = nil
end

local MAX_COMMAND_LINES = 12
-- Keys that answer are ignored this long after a request opens: a count or a word being
-- typed as the float takes focus (the `1` of `10j`) must not pick an option.
M.GRACE_MS = 600
M.ignored = 0

--- `value` as lines under `first` then `rest` prefixes.
local function prefixed(first, rest, value)
  local out = {}
  for i, line in ipairs(text.lines(value)) do
    table.insert(out, (i == 1 and first or rest) .. line)
  end
  return out
end

--- At most `limit` of `lines`, the last one saying how many more there are.
local function clip(lines, limit, more)
  if #lines <= limit then
    return lines
  end
  if limit <= 0 then
    return {}
  end
  local out = vim.list_slice(lines, 1, limit - 1)
  table.insert(out, more(#lines - limit + 1))
  return out
end

--- The session a request belongs to, as the chat shows it (its name, else agent and n).
local function session_name(req)
  local ok, chat = pcall(require, 'louise.chat')
  local state = ok and present(req.session) and chat.chats[req.session] or nil
  if not state then
    return nil
  end
  local title = state.status and state.status.title
  if present(title) and title ~= '' then
    return text.line(title)
  end
  return ('%s %d'):format(text.line(state.agent), state.n)
end

--- The float's lines, fitted to `room` lines: the header, the option lines and the keys
--- always show; the diff preview shrinks first, then the paths, the command and the
--- title. Every agent string goes through louise.text: a title or command with newlines (a
--- heredoc) shows as several lines, control characters as pictures. Returns the lines and
--- the row of the first option.
local function lines_for(req, room)
  local total = math.max(req.total or 1, M.queue or 0)
  local head = ('Permission %d of %d · %s'):format(req.position or 1, total, text.line(req.agent))
  local name = session_name(req)
  if name then
    head = head .. ' · ' .. name
  end
  local title = present(req.title) and req.title ~= '' and req.title or '(untitled)'
  local title_lines = prefixed(text.line(req.kind) .. ': ', '    ', title)
  local command = present(req.command) and prefixed('  $ ', '    ', req.command) or {}
  local paths = {}
  for _, path in ipairs(req.paths or {}) do
    table.insert(paths, '  ' .. text.line(vim.fn.fnamemodify(path, ':~:.')))
  end
  local diff = {}
  for _, line in ipairs(req.diff or {}) do
    table.insert(diff, text.line(line))
  end
  local options = {}
  for i, opt in ipairs(req.options or {}) do
    table.insert(options, ('  %d  %s %s'):format(i, ICONS[opt.kind] or '?', text.line(opt.name)))
  end
  local hint = refusal(req) and '  q refuse' or '  q cancel'
  if req.diffs and #req.diffs > 0 then
    hint = '  d diff ·' .. hint
  end
  -- What always shows: header, a blank line, the options and the keys.
  local left = math.max(room - (1 + 1 + #options + 1), 0)
  local want_title = math.min(#title_lines, MAX_COMMAND_LINES)
  local want_command = math.min(#command, MAX_COMMAND_LINES)
  -- Shares, most important first: one title line, up to 3 command lines, one path, then
  -- the rest in the same order; the diff gets what remains (with its blank line).
  local n_title = math.min(want_title, math.max(left, 1))
  left = left - n_title
  local n_command = math.min(want_command, 3, math.max(left, 0))
  left = left - n_command
  local n_paths = math.min(#paths, 1, math.max(left, 0))
  left = left - n_paths
  local grow = math.min(want_title - n_title, left)
  n_title, left = n_title + grow, left - grow
  grow = math.min(want_command - n_command, left)
  n_command, left = n_command + grow, left - grow
  grow = math.min(#paths - n_paths, left)
  n_paths, left = n_paths + grow, left - grow
  local n_diff = #diff > 0 and math.min(#diff, left - 1) or 0
  if n_diff < 2 and n_diff < #diff then
    n_diff = 0 -- too little room for a useful preview: `d` shows the diff
  end
  local out = { head }
  vim.list_extend(out, clip(title_lines, n_title, function(n)
    return ('    … %d more lines'):format(n)
  end))
  vim.list_extend(out, clip(command, n_command, function(n)
    return ('    … %d more lines'):format(n)
  end))
  vim.list_extend(out, clip(paths, n_paths, function(n)
    return ('  … %d more paths'):format(n)
  end))
  if n_diff > 0 then
    table.insert(out, '')
    vim.list_extend(out, clip(diff, n_diff, function(n)
      return ('    … %d more lines: press d for the full diff'):format(n)
    end))
  end
  table.insert(out, '')
  local first_option = #out + 1
  vim.list_extend(out, options)
  table.insert(out, hint)
  return out, first_option
end

--- Room for the float: the editor's lines less the command line, the border and a
--- statusline.
local function room()
  return math.max(vim.o.lines - vim.o.cmdheight - 3, 3)
end

--- Show the current request; `focus` puts the cursor in the float (a new request, or
--- :LouisePermission).
function M.render(focus)
  local req = M.current
  if not req then
    return
  end
  local lines, first_option = lines_for(req, room())
  local shown = M.win and api.nvim_win_is_valid(M.win)
  require('louise.float').show(M, lines, {
    title = ' louise ',
    filetype = 'louise_permission',
    enter = focus or not shown,
    max_height = room(),
  })
  vim.wo[M.win].winhighlight = 'NormalFloat:LouisePermission'
  if focus or not shown then
    pcall(api.nvim_win_set_cursor, M.win, { first_option, 0 })
  end
  M.keymaps()
end

--- A key that answers: ignored (and said so) when it comes right after the request opened.
local function guarded(fn)
  return function()
    if M.opened_at and vim.uv.now() - M.opened_at < M.GRACE_MS then
      M.ignored = M.ignored + 1
      vim.notify('louise: key ignored: the permission request had just opened; press it again',
        vim.log.levels.WARN)
      return
    end
    fn()
  end
end

function M.keymaps()
  local buf = M.buf
  local function map(lhs, fn)
    vim.keymap.set('n', lhs, guarded(fn), { buffer = buf, nowait = true, silent = true })
  end
  for i = 1, 9 do
    map(tostring(i), function()
      local req = M.current
      if req and req.options[i] then
        answer(req.options[i].id)
      end
    end)
  end
  local function refuse()
    local req = M.current
    local option = req and refusal(req)
    answer(option and option.id or nil)
  end
  map('q', refuse)
  map('<Esc>', refuse)
  map('d', function()
    M.diff()
  end)
end

--- The request waiting for the person (the engine's state for this frame).
function M.show(req)
  local new = not M.current or M.current.id ~= req.id
  M.current = req
  if new then
    M.opened_at = vim.uv.now()
    if api.nvim_get_mode().mode:sub(1, 1) == 'i' then
      vim.cmd('stopinsert') -- typing goes on in the float only as Normal-mode keys
    end
  end
  M.render(new)
end

--- No request waits any more (answered, cancelled, the agent exited, $/cancel_request):
--- the float closes by itself.
function M.settle()
  M.current = nil
  M.hide()
end

vim.api.nvim_create_autocmd('VimResized', {
  group = vim.api.nvim_create_augroup('louise_permission_resize', { clear = true }),
  callback = function()
    if M.current and M.win and api.nvim_win_is_valid(M.win) then
      M.render(false) -- refit: the options stay visible
    end
  end,
})

function M.set_queue(count)
  M.queue = count
  if M.current and M.win and api.nvim_win_is_valid(M.win) then
    M.render(false) -- the "1 of N" indicator follows the queue
  end
end

function M.reopen()
  if M.current then
    M.render(true)
  else
    vim.notify('louise: no permission request is waiting', vim.log.levels.INFO)
  end
end

-- ------------------------------------------------------------------ diff review

--- A text as buffer lines: a final newline is not an extra empty line.
local function text_lines(value)
  local lines = vim.split(present(value) and value or '', '\n', { plain = true })
  if #lines > 0 and lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

local function scratch(lines, name, ft)
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  text.write(buf, 0, -1, lines)
  pcall(api.nvim_buf_set_name, buf, name)
  if ft and ft ~= '' then
    vim.bo[buf].filetype = ft
  end
  return buf
end

-- Side by side (Neovim's diff mode) up to this many (lines x changes); past it one
-- unified diff from vim.diff (xdiff: 30,000 lines with 4,000 changes in ~30 ms).
M.MAX_SIDE_BY_SIDE_COST = 2000000

--- An upper bound of (lines x changes) that needs no diff: every line could be a change.
function M.side_by_side_cost(old, new)
  return (#old + #new) * math.max(#old, #new)
end

--- Every file of the request, side by side in one tab: current (with unsaved edits) vs
--- proposed. ]f / [f move between files; the option keys answer from here too. A big file
--- with many changes is shown as one unified diff instead (see MAX_SIDE_BY_SIDE_COST).
function M.diff()
  local req = M.current
  if not req or not req.diffs or #req.diffs == 0 then
    vim.notify('louise: this request carries no diff', vim.log.levels.INFO)
    return
  end
  M.hide()
  vim.cmd('tabnew')
  local tab = api.nvim_get_current_tabpage()
  local index = 1
  local function show_file(i)
    local d = req.diffs[i]
    local ft = vim.filetype.match({ filename = d.path }) or ''
    -- The engine put the edit onto the file as it is now (the buffer, unsaved edits
    -- included, else the disk): whole files, or the agent's snippet and why.
    local old, new = text_lines(d.old), text_lines(d.new)
    local label = ''
    if d.mode == 'new' then
      label = ' (new file)'
    elseif d.mode == 'delete' then
      label = ' (deleted)'
    elseif d.whole == false then
      label = ' (snippet)'
    end
    vim.cmd('diffoff!')
    vim.cmd('silent! only')
    local short = vim.fn.fnamemodify(d.path, ':~:.') -- relative to the cwd where it can be
    local now = d.mode == 'new' and ' · the file does not exist yet'
      or (d.mode == 'delete' and ' · to be deleted' or '')
    if present(d.note) then
      now = now .. ' · ' .. (text.line(d.note):gsub('%%', '%%%%'))
    end
    local keys = ('%d/%d%s · 1-%d answer · ]f [f files · q back'):format(
      i, #req.diffs, label, #req.options)
    local shown
    local old_text, new_text = table.concat(old, '\n') .. '\n', table.concat(new, '\n') .. '\n'
    local hunks = M.side_by_side_cost(old, new) > M.MAX_SIDE_BY_SIDE_COST
        and vim.diff(old_text, new_text, { result_type = 'indices' })
      or nil
    if hunks and (#old + #new) * #hunks > M.MAX_SIDE_BY_SIDE_COST then
      -- Neovim's diff mode costs about (lines x changes) to set up (30,000 lines with
      -- 4,000 changes: half a second, bench/diff_preview.py): one unified diff instead.
      local text = vim.diff(old_text, new_text, { result_type = 'unified', ctxlen = 3 })
      local lines = vim.split(text, '\n', { plain = true })
      if lines[#lines] == '' then
        table.remove(lines)
      end
      local whole = scratch(lines, ('louise-diff://%d/%s%s'):format(i, short, label), 'diff')
      api.nvim_win_set_buf(0, whole)
      vim.wo.winbar = ('%%#LouiseStatus# %s: %d changes in %d lines, as one unified diff%s · %s'):format(
        short:gsub('%%', '%%%%'), #hunks, math.max(#old, #new), now, keys)
      shown = { whole }
    else
      local left = scratch(old, ('louise-current://%d/%s'):format(i, short), ft)
      api.nvim_win_set_buf(0, left)
      vim.cmd('diffthis')
      vim.wo.winbar = ('%%#LouiseStatus# current %s%s'):format(short:gsub('%%', '%%%%'), now)
      vim.cmd('vertical rightbelow split')
      local right = scratch(new, ('louise-proposed://%d/%s%s'):format(i, short, label), ft)
      api.nvim_win_set_buf(0, right)
      vim.cmd('diffthis')
      vim.wo.winbar = ('%%#LouiseStatus# proposed %s'):format(keys)
      shown = { left, right }
    end

    for _, buf in ipairs(shown) do
      local function map(lhs, fn)
        vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, silent = true })
      end
      for n = 1, 9 do
        map(tostring(n), function()
          if req.options[n] and M.current == req then
            pcall(vim.cmd, 'tabclose')
            answer(req.options[n].id)
          end
        end)
      end
      map(']f', function()
        index = index % #req.diffs + 1
        show_file(index)
      end)
      map('[f', function()
        index = (index - 2) % #req.diffs + 1
        show_file(index)
      end)
      map('q', function()
        if api.nvim_tabpage_is_valid(tab) then
          pcall(vim.cmd, 'tabclose')
        end
        M.render(true)
      end)
    end
  end
  show_file(index)
end

-- ------------------------------------------------------------------ remembered rules

--- :LouisePermissions — remembered "always" choices; dd (or x) revokes the one under
--- the cursor, r reloads, q closes.
function M.list(rules)
  local lines = { 'Remembered permission choices · dd revoke · r reload · q close', '' }
  local ids = {}
  if #rules == 0 then
    table.insert(lines, '(none: "always" choices you make appear here)')
  end
  for _, r in ipairs(rules) do
    table.insert(lines, ('%-6s %-8s %s'):format(r.decision, r.kind, r.target))
    table.insert(ids, { row = #lines, id = r.id })
    local agent = r.agent
    local ok, argv = pcall(vim.json.decode, agent)
    if ok and type(argv) == 'table' then
      agent = table.concat(argv, ' ')
    end
    table.insert(lines, ('       in %s · agent %s'):format(r.workspace, agent))
  end
  local buf = M.rules_buf
  if not (buf and api.nvim_buf_is_valid(buf)) then
    buf = api.nvim_create_buf(false, true)
    M.rules_buf = buf
    vim.bo[buf].bufhidden = 'hide'
    pcall(api.nvim_buf_set_name, buf, 'louise://permissions')
    local function revoke()
      local row = api.nvim_win_get_cursor(0)[1]
      for _, entry in ipairs(M.rule_rows or {}) do
        if entry.row == row or entry.row + 1 == row then
          require('louise.engine').send('revoke', { id = entry.id })
          return
        end
      end
    end
    vim.keymap.set('n', 'dd', revoke, { buffer = buf, nowait = true, silent = true })
    vim.keymap.set('n', 'x', revoke, { buffer = buf, nowait = true, silent = true })
    vim.keymap.set('n', 'r', function()
      require('louise.engine').send('permissions', {})
    end, { buffer = buf, nowait = true, silent = true })
    vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = buf, nowait = true, silent = true })
  end
  M.rule_rows = ids
  text.write(buf, 0, -1, vim.tbl_map(text.line, lines)) -- one to one: rows are counted
  if #vim.fn.win_findbuf(buf) == 0 then
    require('louise.chat.placement').side_split() -- readable: at least 40 columns
    api.nvim_win_set_buf(0, buf)
  end
end

return M
