-- Permission prompts: a float showing who asks, what it will touch, and every option the
-- agent offered, on number keys. q refuses this once: the agent's own `reject_once` option
-- (`cancelled` is for a cancelled turn, and agents treat it as one), `cancelled` only when
-- the agent offers no such option; nothing answers allow by default. <Esc> hides the float
-- and the request keeps waiting (the chat's winbar and the statusline say so):
-- :LouisePermission brings it back, as it does after moving away. `d` opens the diff of
-- every file in a tab.
local M = { current = nil, win = nil, buf = nil, queue = 0 }

local api = vim.api
local text = require('louise.text')
local fit = require('louise.permission_title')
local cut = fit.cut
local notice = require('louise.notice')
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

--- Screen rows `line` takes in a window `width` columns wide that wraps it.
local function rows_of(line, width)
  return math.max(1, math.ceil(vim.fn.strdisplaywidth(line) / math.max(width, 1)))
end

local function rows_of_all(lines, width)
  local n = 0
  for _, line in ipairs(lines) do
    n = n + rows_of(line, width)
  end
  return n
end

--- How many of `lines` (from the first) fit `budget` rows, at most `most`.
local function fitting(lines, budget, width, most)
  local n, used = 0, 0
  for i = 1, math.min(#lines, most) do
    used = used + rows_of(lines[i], width)
    if used > budget then
      break
    end
    n = i
  end
  return n
end

-- A diff preview line's highlight group, by its first character after the indent.
local DIFF_GROUPS = {
  { '^    %+%+%+ ', 'LouiseReviewFile' },
  { '^    %-%-%- ', 'LouiseReviewFile' },
  { '^    @@', 'LouiseReviewHunk' },
  { '^    %+', 'LouiseReviewAdd' },
  { '^    %-', 'LouiseReviewDelete' },
}

local function diff_group(line)
  for _, pair in ipairs(DIFF_GROUPS) do
    if line:find(pair[1]) then
      return pair[2]
    end
  end
  return nil
end

--- The float's parts, whole: each agent string through louise.text (a title or command
--- with newlines, a heredoc, shows as several lines; control characters as pictures).
local function parts_of(req)
  local total = math.max(req.total or 1, M.queue or 0)
  local head = ('Permission %d of %d · %s'):format(req.position or 1, total, text.line(req.agent))
  local name = session_name(req)
  if name then
    head = head .. ' · ' .. name
  end
  if present(req.waited) then
    head = head .. ' · ' .. text.line(req.waited)
  end
  local title = present(req.title) and req.title ~= '' and req.title or '(untitled)'
  local parts = {
    head = head,
    title = prefixed(text.line(req.kind) .. ': ', '    ', title),
    command = present(req.command) and prefixed('  $ ', '    ', req.command) or {},
    paths = {},
    diff = {},
    options = {},
  }
  for _, path in ipairs(req.paths or {}) do
    table.insert(parts.paths, '  ' .. text.line(vim.fn.fnamemodify(path, ':~:.')))
  end
  for _, line in ipairs(req.diff or {}) do
    table.insert(parts.diff, text.line(line))
  end
  for i, opt in ipairs(req.options or {}) do
    table.insert(parts.options, ('  %d  %s %s'):format(i, ICONS[opt.kind] or '?', text.line(opt.name)))
  end
  local keys = { refusal(req) and 'q refuse' or 'q cancel', '<Esc> hide' }
  if req.diffs and #req.diffs > 0 then
    table.insert(keys, 1, 'd diff')
  end
  parts.hint = '  ' .. table.concat(keys, ' · ')
  return parts
end

--- The float's width: its longest line (and a margin), within the editor.
local function width_for(parts)
  local widest = 0
  for _, list in ipairs({ { parts.head, parts.hint }, parts.title, parts.command, parts.paths,
    parts.diff, parts.options }) do
    for _, line in ipairs(list) do
      widest = math.max(widest, vim.fn.strdisplaywidth(line))
    end
  end
  return math.min(math.max(widest + 2, 20), math.max(vim.o.columns - 4, 20))
end

--- The float's lines, fitted to `room` screen rows of a window `width` columns wide, as
--- they wrap there: the header, the option lines and the keys always show; the diff
--- preview shrinks first, then the paths, the command and the title. Returns the lines,
--- the row of the first option and the preview's highlights ({ row, group }, 0-based).
local function lines_for(parts, room, width)
  local diff = {}
  for i, line in ipairs(parts.diff) do
    -- Only what could show is cut; the rest is only counted.
    diff[i] = i <= room and cut(line, width) or line
  end
  -- What always shows: header, a blank line, the options and the keys.
  local left = math.max(room - rows_of(parts.head, width) - 1 - rows_of_all(parts.options, width)
    - rows_of(parts.hint, width), 0)
  local title, command, paths = parts.title, parts.command, parts.paths
  local want_title = math.min(#title, MAX_COMMAND_LINES)
  local want_command = math.min(#command, MAX_COMMAND_LINES)
  -- Shares, most important first: one title line, up to 3 command lines, one path, then
  -- the rest in the same order; the diff gets what remains (with its blank line).
  -- At least the title's first line, and the line saying how many more follow.
  local n_title = math.max(fitting(title, left, width, 1), math.min(#title, #title > 1 and 2 or 1))
  left = left - rows_of_all(vim.list_slice(title, 1, n_title), width)
  local n_command = fitting(command, left, width, math.min(want_command, 3))
  left = left - rows_of_all(vim.list_slice(command, 1, n_command), width)
  local n_paths = fitting(paths, left, width, 1)
  left = left - rows_of_all(vim.list_slice(paths, 1, n_paths), width)
  local function grow(list, n, want)
    local more = fitting(vim.list_slice(list, n + 1, want), left, width, want - n)
    left = left - rows_of_all(vim.list_slice(list, n + 1, n + more), width)
    return n + more
  end
  n_title = grow(title, n_title, want_title)
  n_command = grow(command, n_command, want_command)
  n_paths = grow(paths, n_paths, #paths)
  local n_diff = #diff > 0 and math.min(#diff, left - 1) or 0
  if n_diff < 2 and n_diff < #diff then
    n_diff = 0 -- too little room for a useful preview: `d` shows the diff
  end
  local out = { parts.head }
  vim.list_extend(out, clip(title, n_title, function(n)
    return ('    … %d more lines'):format(n)
  end))
  vim.list_extend(out, clip(command, n_command, function(n)
    return ('    … %d more lines'):format(n)
  end))
  vim.list_extend(out, clip(paths, n_paths, function(n)
    return ('  … %d more paths'):format(n)
  end))
  local marks = {}
  if n_diff > 0 then
    table.insert(out, '')
    for _, line in ipairs(clip(diff, n_diff, function(n)
      return ('    … %d more lines: press d for the full diff'):format(n)
    end)) do
      table.insert(out, line)
      local group = diff_group(line)
      if group then
        table.insert(marks, { #out - 1, group })
      end
    end
  end
  table.insert(out, '')
  local first_option = #out + 1
  vim.list_extend(out, parts.options)
  table.insert(out, parts.hint)
  return out, first_option, marks
end

--- Room for the float: the editor's lines less the command line, the border and a
--- statusline.
local function room()
  return math.max(vim.o.lines - vim.o.cmdheight - 3, 3)
end

local ns = api.nvim_create_namespace('louise_permission')

--- Show the current request; `focus` puts the cursor in the float (a new request, or
--- :LouisePermission).
function M.render(focus)
  local req = M.current
  if not req then
    return
  end
  M.hidden = nil
  local parts = parts_of(req)
  local width = width_for(parts)
  local shown = M.win and api.nvim_win_is_valid(M.win)
  local limit = room()
  local lines, first_option, marks
  -- Fitted by the rows each line takes once wrapped; then measured where it really
  -- wraps (the person's 'linebreak', 'showbreak'…): too tall, and it is fitted again.
  for _ = 1, 3 do
    lines, first_option, marks = lines_for(parts, limit, width)
    require('louise.float').show(M, lines, {
      title = function(w)
        return fit.title(req, w)
      end,
      filetype = 'louise_permission',
      enter = focus or not shown,
      min_width = width,
      height = math.min(rows_of_all(lines, width), room()),
    })
    vim.wo[M.win].wrap = true -- a command is read whole, never cut at the edge
    local tall = api.nvim_win_text_height(M.win, {}).all
    local height = api.nvim_win_get_height(M.win)
    if tall <= height then
      break
    end
    limit = limit - (tall - height)
    shown = true
  end
  vim.wo[M.win].winhighlight = 'NormalFloat:LouisePermission'
  api.nvim_buf_clear_namespace(M.buf, ns, 0, -1)
  for _, mark in ipairs(marks) do
    api.nvim_buf_set_extmark(M.buf, ns, mark[1], 0, { end_row = mark[1], end_col = #lines[mark[1] + 1],
      hl_group = mark[2], priority = 110 })
  end
  if focus or not shown then
    pcall(api.nvim_win_set_cursor, M.win, { first_option, 0 })
  end
  -- The first line on top: the header shows whatever row the cursor is on.
  api.nvim_win_call(M.win, function()
    vim.fn.winrestview({ topline = 1 })
  end)
  M.keymaps()
end

--- A key that answers: ignored (and said so) when it comes right after the request opened.
local function guarded(fn)
  return function()
    if M.opened_at and vim.uv.now() - M.opened_at < M.GRACE_MS then
      M.ignored = M.ignored + 1
      notice.notify('louise: key ignored as the float just opened: press it again',
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
  -- <Esc> leaves, as it does everywhere in Vim: it answers nothing. Not guarded: it
  -- cannot answer, so a key typed as the float opened may as well hide it.
  vim.keymap.set('n', '<Esc>', function()
    M.hide_waiting()
  end, { buffer = buf, nowait = true, silent = true })
  map('d', function()
    M.diff()
  end)
end

--- <Esc> in the float: out of the way, still waiting (the winbar and the statusline say
--- so; :LouisePermission brings it back).
function M.hide_waiting()
  M.hide()
  M.hidden = M.current and M.current.id or nil
  pcall(vim.cmd, 'redrawstatus!')
  notice.notify('louise: the permission request waits: :LouisePermission shows it',
    vim.log.levels.INFO)
end

--- The statusline's word for a request the person hid (nil when none is hidden).
function M.waiting_label()
  if M.current and M.hidden == M.current.id then
    return 'permission waiting'
  end
  return nil
end

--- The request waiting for the person (the engine's state for this frame).
function M.show(req)
  local new = not M.current or M.current.id ~= req.id
  M.current = req
  if not new and M.hidden == req.id then
    return -- hidden with <Esc>: it stays out of the way until :LouisePermission
  end
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
  local was_hidden = M.hidden
  M.current = nil
  M.hidden = nil
  M.hide()
  if was_hidden then
    pcall(vim.cmd, 'redrawstatus!') -- the statusline's "permission waiting" goes
  end
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
    notice.notify('louise: no permission request is waiting', vim.log.levels.INFO)
  end
end

-- ------------------------------------------------------------------ diff review

local diff_tab = require('louise.permission_diff')
M.MAX_SIDE_BY_SIDE_COST = diff_tab.MAX_SIDE_BY_SIDE_COST
M.side_by_side_cost = diff_tab.side_by_side_cost

--- `d`: every file of the request side by side in a tab (louise.permission_diff); the
--- request keeps waiting there, its option keys answer it.
function M.diff()
  local req = M.current
  if not req or not req.diffs or #req.diffs == 0 then
    notice.notify('louise: this request carries no diff', vim.log.levels.INFO)
    return
  end
  M.hide()
  M.hidden = req.id -- still waiting: the diff tab's keys answer it, `q` shows the float
  diff_tab.open(req, answer, function()
    return M.current == req
  end, function()
    M.render(true)
  end)
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
