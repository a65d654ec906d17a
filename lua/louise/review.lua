-- :LouiseReview: a turn's changes as a unified view (signs and highlights), one hunk at a
-- time: keep it, revert it, revert its whole file, or comment on it (comments go to the
-- agent as the next prompt). :LouiseUndo: what an undo would do, confirmed once.
--
-- The engine sends the review (louise/nvim/review.py, batch key `review`) and does every
-- revert (the checkpoint store writes the files; buffers follow as they follow an
-- agent's writes). Nothing here touches a file.
local M = { views = {} } -- "key#seq" -> view state

local api = vim.api
local text = require('louise.text')
local notice = require('louise.notice')
local ns = api.nvim_create_namespace('louise_review')

local HELP = 'r revert hunk · R revert file · k keep · c comment · S send comments · '
  .. ']c [c next/previous · <CR> open · q close'
local STATE_TEXT = { reverted = '· reverted', changed = '· changed since the turn' }

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

local function engine()
  return require('louise.engine')
end

--- The view's buffer lines and what each row is (a file's header or a hunk's line).
local function layout(view)
  local data = view.data
  local lines, rows, marks = {}, {}, {}
  local function add(line, row, hl)
    table.insert(lines, line)
    rows[#lines] = row
    if hl then
      marks[#lines] = hl
    end
  end
  add(text.line(('louise review · turn %d of %s · %s'):format(data.turn, data.agent,
    data.summary)), nil, 'LouiseReviewFile')
  if present(data.prompt) and data.prompt ~= '' then
    add(text.line('» ' .. data.prompt), nil, 'Comment')
  end
  for _, note in ipairs(data.notes or {}) do
    add(text.line('! ' .. note), nil, 'LouiseReviewNote')
  end
  add(HELP, nil, 'Comment')
  for f, file in ipairs(data.files or {}) do
    add('', nil)
    add(text.line(('%s %s (+%d −%d)'):format(file.status, file.path, file.added, file.removed)),
      { file = f }, 'LouiseReviewFile')
    if present(file.note) and file.note ~= '' then
      add(text.line('  ' .. file.note), { file = f }, 'LouiseReviewNote')
    end
    for _, hunk in ipairs(file.hunks or {}) do
      for i, line in ipairs(hunk.lines) do
        local mark = line:sub(1, 1)
        local hl = i == 1 and 'LouiseReviewHunk' or (mark == '+' and 'LouiseReviewAdd')
          or (mark == '-' and 'LouiseReviewDelete') or nil
        add(text.line(line), { file = f, hunk = hunk.index, first = i == 1 }, hl)
      end
    end
  end
  return lines, rows, marks
end

local function hunk_of(view, file, index)
  for _, hunk in ipairs(file.hunks or {}) do
    if hunk.index == index then
      return hunk
    end
  end
  return nil
end

--- The file and hunk under the cursor (the hunk may be nil: a file's header).
local function here(view)
  local row = api.nvim_win_get_cursor(0)[1]
  local at = view.rows[row]
  if not at then
    return nil
  end
  local file = view.data.files[at.file]
  return file, at.hunk and hunk_of(view, file, at.hunk) or nil
end

local function key_of(file, hunk)
  return file.path .. '#' .. tostring(hunk.index)
end

local function decorate(view)
  local buf = view.buf
  api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for row, hl in pairs(view.marks) do
    api.nvim_buf_set_extmark(buf, ns, row - 1, 0, { line_hl_group = hl, priority = 60 })
  end
  for row, at in pairs(view.rows) do
    if at.first then
      local file = view.data.files[at.file]
      local hunk = hunk_of(view, file, at.hunk)
      local tags = {}
      if STATE_TEXT[hunk.state] then
        table.insert(tags, STATE_TEXT[hunk.state])
      elseif view.kept[key_of(file, hunk)] then
        table.insert(tags, '· kept')
      end
      local virt_lines = {}
      for _, comment in ipairs(view.comments) do
        if comment.path == file.path and comment.hunk == hunk.index then
          table.insert(virt_lines, { { text.line('  💬 ' .. comment.text), 'LouiseReviewComment' } })
        end
      end
      api.nvim_buf_set_extmark(buf, ns, row - 1, 0, {
        virt_text = #tags > 0 and { { table.concat(tags, ' '), 'LouiseReviewNote' } } or nil,
        sign_text = hunk.state == 'applied' and (view.kept[key_of(file, hunk)] and '✓' or '±')
          or (hunk.state == 'reverted' and '↶' or '!'),
        sign_hl_group = 'LouiseReviewHunk',
        virt_lines = #virt_lines > 0 and virt_lines or nil,
      })
    end
  end
end

local function render(view)
  local lines, rows, marks = layout(view)
  view.rows, view.marks = rows, marks
  vim.bo[view.buf].modifiable = true
  api.nvim_buf_set_lines(view.buf, 0, -1, false, lines)
  vim.bo[view.buf].modifiable = false
  vim.bo[view.buf].modified = false
  decorate(view)
end

--- Move to the next (1) or previous (-1) hunk.
local function jump(view, step)
  local row = api.nvim_win_get_cursor(0)[1]
  local count = api.nvim_buf_line_count(view.buf)
  local at = row + step
  while at >= 1 and at <= count do
    local where = view.rows[at]
    if where and where.first then
      api.nvim_win_set_cursor(0, { at, 0 })
      return true
    end
    at = at + step
  end
  return false
end

local function revert_hunk(view)
  local file, hunk = here(view)
  if not hunk then
    notice.notify('louise: put the cursor on a hunk', vim.log.levels.INFO)
    return
  end
  engine().send('review_revert', { key = view.data.key, seq = view.data.seq, path = file.path,
    hunk = hunk.index })
end

local function revert_file(view)
  local file = here(view)
  if not file then
    return
  end
  require('louise.chat.picker_text').select({ { id = 'revert', text = 'Revert the whole file' }, { id = 'keep', text = 'Keep it' } }, {
    prompt = ('louise: take back every change the turn made to %s?'):format(text.line(file.path)),
    format_item = function(item)
      return item.text
    end,
  }, function(choice)
    if choice and choice.id == 'revert' then
      engine().send('review_revert_file', { key = view.data.key, seq = view.data.seq, path = file.path })
    end
  end)
end

local function keep(view)
  local file, hunk = here(view)
  if hunk then
    view.kept[key_of(file, hunk)] = true
    decorate(view)
    jump(view, 1)
  end
end

local function comment(view)
  local file, hunk = here(view)
  if not hunk then
    notice.notify('louise: put the cursor on a hunk to comment on it', vim.log.levels.INFO)
    return
  end
  vim.ui.input({ prompt = ('Comment on %s:%d: '):format(text.line(file.path), hunk.line) }, function(input)
    if not input or input:match('^%s*$') then
      return
    end
    local quote = {}
    for i, line in ipairs(hunk.lines) do
      local mark = line:sub(1, 1)
      if i > 1 and (mark == '+' or mark == '-') then
        table.insert(quote, line)
      end
    end
    table.insert(view.comments, { path = file.path, line = hunk.line, hunk = hunk.index,
      quote = quote, text = input })
    if api.nvim_buf_is_valid(view.buf) then
      decorate(view)
    end
  end)
end

local function send_comments(view)
  if #view.comments == 0 then
    notice.notify('louise: no comments to send (c comments on a hunk)', vim.log.levels.INFO)
    return
  end
  engine().send('review_comments', { key = view.data.key, seq = view.data.seq, comments = view.comments })
  notice.notify(('louise: %d comment(s) sent to %s as the next prompt'):format(#view.comments,
    text.line(view.data.agent)), vim.log.levels.INFO)
  view.comments = {}
  decorate(view)
end

--- <CR>: the file at the hunk's line, in another window.
local function open_file(view)
  local file, hunk = here(view)
  if not file then
    return
  end
  local path = view.data.cwd .. '/' .. file.path
  vim.cmd('tabprevious')
  vim.cmd('edit ' .. vim.fn.fnameescape(path))
  if hunk then
    pcall(api.nvim_win_set_cursor, 0, { hunk.line, 0 })
  end
end

local function keymaps(view)
  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, function()
      fn(view)
    end, { buffer = view.buf, nowait = true, silent = true, desc = 'louise: ' .. desc })
  end
  map('r', revert_hunk, 'revert the hunk under the cursor')
  map('R', revert_file, 'revert the whole file under the cursor')
  map('k', keep, 'keep the hunk (mark it reviewed)')
  map('c', comment, 'comment on the hunk (sent with S)')
  map('S', send_comments, 'send the comments to the agent as the next prompt')
  map(']c', function(v) jump(v, 1) end, 'next hunk')
  map('[c', function(v) jump(v, -1) end, 'previous hunk')
  map('<CR>', open_file, 'open the file at the hunk')
  map('q', function(v)
    if #v.comments > 0 and not v.warned then
      v.warned = true
      notice.notify('louise: unsent comments (S sends them; q again closes)', vim.log.levels.WARN)
      return
    end
    pcall(vim.cmd, 'tabclose')
  end, 'close the review')
end

--- Show (or refresh) a review from the engine.
function M.show(data)
  local id = data.key .. '#' .. tostring(data.seq)
  local view = M.views[id]
  local fresh = not view or not api.nvim_buf_is_valid(view.buf)
  if fresh then
    local buf = api.nvim_create_buf(false, true)
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'wipe'
    vim.bo[buf].swapfile = false
    vim.bo[buf].filetype = 'louise_review'
    pcall(api.nvim_buf_set_name, buf, ('louise-review://%s/%d'):format(data.key, data.turn))
    view = { buf = buf, kept = {}, comments = {} }
    M.views[id] = view
    api.nvim_create_autocmd('BufWipeout', { buffer = buf, once = true, callback = function()
      M.views[id] = nil
    end })
    keymaps(view)
  end
  view.data = data
  render(view)
  local win = vim.fn.bufwinid(view.buf)
  if win == -1 then
    vim.cmd('tabnew')
    local scratch = api.nvim_get_current_buf()
    api.nvim_win_set_buf(0, view.buf)
    if scratch ~= view.buf and api.nvim_buf_is_valid(scratch) then
      pcall(api.nvim_buf_delete, scratch, { force = true })
    end
    vim.wo.signcolumn = 'yes'
    vim.wo.wrap = false
    win = api.nvim_get_current_win()
    vim.t.louise_label = ('louise: review turn %d'):format(data.turn) -- louise.tabline
    require('louise.tabline').install()
  end
  if fresh then
    api.nvim_win_call(win, function()
      api.nvim_win_set_cursor(0, { 1, 0 })
      jump(view, 1)
    end)
  end
end

--- The view of a review (tests, statusline).
function M.view(key, seq)
  return M.views[key .. '#' .. tostring(seq)]
end

-- ------------------------------------------------------------------ undo

local function choose(prompt, items, done)
  require('louise.chat.picker_text').select(items, {
    prompt = prompt,
    format_item = function(item)
      return item.text
    end,
  }, function(choice)
    done(choice and choice.id or nil)
  end)
end

--- The engine's undo: a plan to confirm, or one done (then: tell the agent?).
function M.undo(data)
  if data.done then
    local agent = text.line(data.agent)
    choose(('louise: %s still remembers what it did. Tell it?'):format(agent), {
      { id = 'tell', text = ('Tell %s: "%s"'):format(agent, text.line(data.tell)) },
      { id = 'no', text = "Don't tell it" },
    }, function(choice)
      if choice == 'tell' then
        engine().send('prompt', { key = data.key, text = data.tell })
      end
    end)
    return
  end
  local lines = text.list(data.lines or {})
  if data.nothing then
    notice.notify('louise: nothing to restore\n' .. table.concat(lines, '\n'), vim.log.levels.WARN)
    return
  end
  choose('louise: undo?\n' .. table.concat(lines, '\n'), {
    { id = 'undo', text = ('Undo: restore %d file(s)'):format(#data.expect) },
    { id = 'cancel', text = 'Cancel' },
  }, function(choice)
    if choice == 'undo' then
      engine().send('undo', { key = data.key, seq = data.seq, expect = data.expect })
    end
  end)
end

return M
