-- Permission prompts: a float showing who asks, what it will touch, and every option the
-- agent offered, on number keys. q/<Esc> answers cancelled; nothing answers allow by
-- default. `d` opens the diff of every file in a tab. Closing the float by moving away
-- does not answer: :LouisePermission brings it back.
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

function M.hide()
  if M.win and api.nvim_win_is_valid(M.win) then
    pcall(api.nvim_win_close, M.win, true)
  end
  M.win = nil
end

local MAX_COMMAND_LINES = 12

--- `value` as lines under `first` then `rest` prefixes, at most `limit` of them.
local function add_lines(out, first, rest, value, limit)
  local lines = text.lines(value)
  for i, line in ipairs(lines) do
    if limit and i > limit then
      table.insert(out, ('%s… %d more lines'):format(rest, #lines - limit))
      return
    end
    table.insert(out, (i == 1 and first or rest) .. line)
  end
end

--- The float's lines. Every agent string goes through louise.text: a title or command
--- with newlines (a heredoc) shows as several lines, control characters as pictures.
local function lines_for(req)
  local out = {}
  local total = math.max(req.total or 1, M.queue or 0)
  table.insert(out, ('Permission %d of %d · %s'):format(req.position or 1, total, text.line(req.agent)))
  local title = present(req.title) and req.title ~= '' and req.title or '(untitled)'
  add_lines(out, text.line(req.kind) .. ': ', '    ', title, MAX_COMMAND_LINES)
  if present(req.command) then
    add_lines(out, '  $ ', '    ', req.command, MAX_COMMAND_LINES)
  end
  for _, path in ipairs(req.paths or {}) do
    table.insert(out, '  ' .. text.line(path))
  end
  if req.diff and #req.diff > 0 then
    table.insert(out, '')
    local shown = 0
    for _, line in ipairs(req.diff) do
      if shown >= 12 then
        table.insert(out, ('    … %d more lines: press d for the full diff'):format(#req.diff - shown))
        break
      end
      table.insert(out, text.line(line))
      shown = shown + 1
    end
  end
  table.insert(out, '')
  for i, opt in ipairs(req.options or {}) do
    table.insert(out, ('  %d  %s %s'):format(i, ICONS[opt.kind] or '?', text.line(opt.name)))
  end
  local hint = '  q cancel'
  if req.diffs and #req.diffs > 0 then
    hint = '  d diff · ' .. hint:sub(3)
  end
  table.insert(out, hint)
  return out
end

function M.render()
  local req = M.current
  if not req then
    return
  end
  require('louise.float').show(M, lines_for(req), { title = ' louise ', filetype = 'louise_permission' })
  vim.wo[M.win].winhighlight = 'NormalFloat:LouisePermission'
  M.keymaps()
end

function M.keymaps()
  local buf = M.buf
  local function map(lhs, fn)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, silent = true })
  end
  for i = 1, 9 do
    map(tostring(i), function()
      local req = M.current
      if req and req.options[i] then
        answer(req.options[i].id)
      end
    end)
  end
  map('q', function()
    answer(nil)
  end)
  map('<Esc>', function()
    answer(nil)
  end)
  map('d', function()
    M.diff()
  end)
end

--- The request waiting for the person (the engine's state for this frame).
function M.show(req)
  M.current = req
  M.render()
end

--- No request waits any more (answered, cancelled, the agent exited, $/cancel_request):
--- the float closes by itself.
function M.settle()
  M.current = nil
  M.hide()
end

function M.set_queue(count)
  M.queue = count
  if M.current and M.win and api.nvim_win_is_valid(M.win) then
    M.render() -- the "1 of N" indicator follows the queue
  end
end

function M.reopen()
  if M.current then
    M.render()
  else
    vim.notify('louise: no permission request is waiting', vim.log.levels.INFO)
  end
end

-- ------------------------------------------------------------------ diff review

local function current_text(path)
  local buf = vim.fn.bufnr(path)
  if buf > 0 and api.nvim_buf_is_loaded(buf) then
    return api.nvim_buf_get_lines(buf, 0, -1, false) -- unsaved edits included
  end
  if vim.uv.fs_stat(path) then
    return vim.fn.readfile(path)
  end
  return {}
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

--- Every file of the request, side by side in one tab: current (with unsaved edits) vs
--- proposed. ]f / [f move between files; the option keys answer from here too.
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
    local exists = vim.uv.fs_stat(d.path) ~= nil or vim.fn.bufnr(d.path) > 0
    local old, new, label
    if d.mode == 'replace' then
      -- Derived from an Edit tool's raw input: apply it to the current text.
      old = current_text(d.path)
      local text = table.concat(old, '\n')
      local from = present(d.old_string) and d.old_string or ''
      local at = from ~= '' and text:find(from, 1, true) or nil
      if at then
        text = text:sub(1, at - 1) .. (d.new_string or '') .. text:sub(at + #from)
      end
      new = vim.split(text, '\n', { plain = true })
      label = at and '' or ' (old text not found in the current file)'
    elseif d.mode == 'delete' then
      old, new, label = current_text(d.path), {}, ' (deleted)'
    elseif d.mode == 'write' then
      old = current_text(d.path)
      new = vim.split(present(d.new) and d.new or '', '\n', { plain = true })
      label = exists and '' or ' (new file)'
    else
      old = present(d.old) and current_text(d.path) or {}
      new = vim.split(present(d.new) and d.new or '', '\n', { plain = true })
      label = present(d.old) and '' or ' (new file)'
    end
    if #new > 0 and new[#new] == '' then
      table.remove(new) -- a final newline is not an extra empty line
    end
    vim.cmd('diffoff!')
    vim.cmd('silent! only')
    local short = vim.fn.fnamemodify(d.path, ':~:.') -- relative to the cwd where it can be
    local left = scratch(old, ('louise-current://%d/%s'):format(i, short), ft)
    api.nvim_win_set_buf(0, left)
    vim.cmd('diffthis')
    vim.cmd('vertical rightbelow split')
    local right = scratch(new, ('louise-proposed://%d/%s%s'):format(i, short, label), ft)
    api.nvim_win_set_buf(0, right)
    vim.cmd('diffthis')
    vim.wo.winbar = ('%%#LouiseStatus# proposed %d/%d%s · 1-%d answer · ]f [f files · q back'):format(
      i, #req.diffs, label, #req.options)
    for _, buf in ipairs({ left, right }) do
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
        M.render()
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
    vim.cmd('topleft split')
    api.nvim_win_set_buf(0, buf)
  end
end

return M
