-- Agents' file access through Neovim's buffers: a loaded buffer wins over the disk.
local M = {}
local api = vim.api
local notice = require('louise.notice')

local function same(a, b)
  return a == b or (vim.uv.fs_realpath(a) or a) == b
end

--- The loaded, normal buffer showing `path` (already resolved by the engine), or nil.
function M.find(path)
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' then
      local name = api.nvim_buf_get_name(buf)
      if name ~= '' and same(name, path) then
        return buf
      end
    end
  end
  return nil
end

-- One line-ending rule for the buffer and the disk: text is what the file holds (or what
-- saving the buffer would write), byte for byte. A 'fileformat=dos' buffer reads with
-- CRLF, as the file on disk does; a write keeps the agent's line endings (all CRLF:
-- 'fileformat' dos; otherwise unix, any lone CR kept in its line).
local ENDINGS = { unix = '\n', dos = '\r\n', mac = '\r' }

local function buffer_text(buf)
  local nl = ENDINGS[vim.bo[buf].fileformat] or '\n'
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  if #lines == 1 and lines[1] == '' and api.nvim_buf_call(buf, function()
        return vim.fn.line2byte(2)
      end) == -1 then
    return '' -- an empty buffer writes an empty file
  end
  local text = table.concat(lines, nl)
  if vim.bo[buf].eol or (vim.bo[buf].fixeol and not vim.bo[buf].binary) then
    text = text .. nl
  end
  return text
end

function M.read(path)
  local buf = M.find(path)
  if not buf then
    return nil
  end
  return buffer_text(buf)
end

--- The file's bytes on disk, or nil when it is missing or unreadable.
local function disk_bytes(path, size)
  local fd = vim.uv.fs_open(path, 'r', 0)
  if not fd then
    return nil
  end
  local data = vim.uv.fs_read(fd, size, 0)
  vim.uv.fs_close(fd)
  return data
end

--- Whether the file changed on disk since this clean buffer read it: what saving it
--- would write differs from the file. (A file that is gone is not a conflict: the write
--- creates it.)
local function changed_on_disk(buf, path)
  local stat = vim.uv.fs_stat(path)
  if not stat then
    return false
  end
  local text = buffer_text(buf)
  if vim.bo[buf].bomb then
    text = '\239\187\191' .. text
  end
  if stat.size ~= #text then
    return true
  end
  return disk_bytes(path, stat.size) ~= text
end

--- `:checktime` of one buffer, Vim's own question answered by `choice(reason)` (a
--- FileChangedShell autocommand stands in for it, so nothing waits for a key inside an
--- RPC call). Returns the reason Vim gave, nil when it saw no change (or reloaded a clean
--- buffer by itself: 'autoread'). Vim then takes the file's new time as seen: the same
--- change is not reported twice.
local function checktime(buf, choice)
  local reason
  local id = api.nvim_create_autocmd('FileChangedShell', {
    buffer = buf,
    callback = function()
      reason = vim.v.fcs_reason
      vim.v.fcs_choice = choice(reason)
    end,
  })
  pcall(vim.cmd, 'checktime ' .. buf)
  pcall(api.nvim_del_autocmd, id)
  return reason
end

--- Whether Vim itself sees the file changed under a buffer with unsaved edits.
local function conflict_on_disk(buf)
  local reason = checktime(buf, function()
    return ''
  end)
  return reason == 'conflict' or reason == 'changed' or reason == 'deleted'
end

--- 'unloaded', 'clean', 'modified' (unsaved edits), 'changed' (the file changed on disk
--- since the buffer read it) or 'modified_changed' (both).
function M.state(path)
  local buf = M.find(path)
  if not buf then
    return 'unloaded'
  end
  if vim.bo[buf].modified then
    return conflict_on_disk(buf) and 'modified_changed' or 'modified'
  end
  return changed_on_disk(buf, path) and 'changed' or 'clean'
end

--- The agent's text as lines, the 'fileformat' that writes its line endings back, and
--- whether it ends with one.
local function split_content(buf, content)
  local ff = vim.bo[buf].fileformat
  if content:find('\n', 1, true) then
    local _, lf = content:gsub('\n', '')
    local _, crlf = content:gsub('\r\n', '')
    ff = lf == crlf and 'dos' or 'unix'
  end
  local lines = vim.split(content, ENDINGS[ff] or '\n', { plain = true })
  local eol = lines[#lines] == ''
  if eol then
    table.remove(lines)
  end
  return lines, ff, eol
end

--- Replace the buffer's text in one undo step; save it unless `save` is false. The
--- person has been asked about unsaved edits and a file changed on disk by now (see
--- `state`), so the save does not ask again (`write!`: Vim's "changed since reading"
--- question would wait for a key inside this RPC call); a read-only buffer still refuses.
function M.write(path, content, save)
  local buf = M.find(path)
  if not buf then
    return false
  end
  if not save then
    -- The person chose to leave the file on disk as it is: a change there is known,
    -- and must not come back as a question once the agent's tool call is done.
    checktime(buf, function()
      return ''
    end)
  end
  local lines, ff, eol = split_content(buf, content)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].fileformat = ff
  vim.bo[buf].eol = eol
  vim.bo[buf].fixeol = eol
  if save then
    local write = vim.bo[buf].readonly and 'silent keepalt write' or 'silent keepalt write!'
    M.writing = true -- the agent's write, not the person's (saves.lua)
    local ok, err = pcall(api.nvim_buf_call, buf, function()
      vim.cmd(write)
    end)
    M.writing = false
    if not ok then
      error(err, 0)
    end
  end
  return true
end

-- What the person is asked, by what stands in the way of the write.
local CHOICES = {
  modified = {
    { id = 'buffer', text = 'Apply in the buffer, do not save (your edits are replaced; u undoes)' },
    { id = 'overwrite', text = 'Overwrite your unsaved edits and save' },
    { id = 'refuse', text = 'Refuse: keep your edits (the agent is told)' },
  },
  changed = {
    { id = 'buffer', text = 'Apply in the buffer, do not save (the file on disk stays as it is)' },
    { id = 'overwrite', text = "Save the agent's text over the file's new contents" },
    { id = 'refuse', text = 'Refuse: keep the file as it is on disk (the agent is told)' },
  },
  modified_changed = {
    { id = 'buffer', text = 'Apply in the buffer, do not save (your edits are replaced; u undoes)' },
    { id = 'overwrite', text = "Overwrite your unsaved edits and the file's new contents, and save" },
    { id = 'refuse', text = 'Refuse: keep your edits and the file (the agent is told)' },
  },
}
local WHY = {
  modified = 'which has unsaved edits',
  changed = 'which changed on disk since it was read (the buffer is out of date)',
  modified_changed = 'which has unsaved edits and changed on disk too',
}

-- Questions wait in line: one on screen at a time (two vim.ui.select calls at once would
-- replace one another in most picker plugins, and the first write would then wait
-- forever). Each is asked outside the frame that brought it, so a person taking their
-- time never holds the engine's frames up. A question is { prompt, choices, default,
-- done(choice id) }; dismissing it answers `default`.
local waiting = {}
local asking = false

local function ask_next()
  local question = table.remove(waiting, 1)
  if not question then
    asking = false
    return
  end
  asking = true
  local done = false
  local function finish(choice)
    if done then
      return
    end
    done = true
    local ok, err = pcall(question.done, choice)
    if not ok then
      notice.notify('louise: ' .. tostring(err), vim.log.levels.ERROR)
    end
    vim.schedule(ask_next)
  end
  local ok, err = pcall(require('louise.chat.picker_text').select, question.choices, {
    prompt = question.prompt,
    format_item = function(item)
      return item.text
    end,
  }, function(choice)
    finish(choice and choice.id or question.default)
  end)
  if not ok then -- the picker failed: the safe answer
    notice.notify(('louise: could not ask (%s), so: %s. %s'):format(question.prompt,
      question.default, tostring(err)),
      vim.log.levels.ERROR)
    finish(question.default)
  end
end

local function ask(question)
  table.insert(waiting, question)
  if not asking then
    asking = true
    vim.schedule(ask_next)
  end
end

--- The agent wants to write a file whose buffer has unsaved edits, or whose file changed
--- on disk since the buffer read it: the person chooses.
function M.conflict(req)
  local text = require('louise.text')
  local reason = CHOICES[req.reason] and req.reason or 'modified'
  ask({
    prompt = ('louise: %s wants to write %s, %s'):format(text.line(req.agent), text.line(req.path),
      WHY[reason]),
    choices = CHOICES[reason],
    default = 'refuse',
    done = function(choice)
      require('louise.engine').send('fs_conflict_answer', { id = req.id, choice = choice })
    end,
  })
end

-- ------------------------------------------------------------------ files agents wrote

-- After the agent changed a file itself (not through fs/write_text_file), its buffer
-- follows: a clean one reloads as :checktime does (cursor, folds and undo kept); one with
-- unsaved edits is never overwritten, and never left silently behind the file either.
local CHANGED_UNDER_EDITS = {
  { id = 'mine', text = "Keep mine: the buffer keeps your edits (the file on disk has the agent's)" },
  { id = 'agent', text = "Take the agent's: reload the file (u brings your edits back)" },
  { id = 'diff', text = 'Diff both: your buffer beside the file on disk, in a new tab' },
}

--- Your buffer and the file on disk side by side in a new tab, in diff mode.
local function diff_with_disk(buf, path)
  local text = require('louise.text')
  vim.cmd('tabnew')
  local scratch = api.nvim_get_current_buf()
  api.nvim_win_set_buf(0, buf)
  if api.nvim_buf_is_valid(scratch) and scratch ~= buf then
    pcall(api.nvim_buf_delete, scratch, { force = true })
  end
  vim.cmd('diffthis')
  vim.cmd('vertical rightbelow new')
  local disk = api.nvim_get_current_buf()
  vim.bo[disk].buftype = 'nofile'
  vim.bo[disk].bufhidden = 'wipe'
  local ok, lines = pcall(vim.fn.readfile, path)
  text.write(disk, 0, -1, ok and lines or {})
  pcall(api.nvim_buf_set_name, disk, 'louise-disk://' .. vim.fn.fnamemodify(path, ':~:.'))
  vim.bo[disk].filetype = vim.bo[buf].filetype
  vim.bo[disk].modifiable = false
  vim.cmd('diffthis')
  vim.wo.winbar = '%#LouiseStatus# the file on disk (the agent\'s) · left: your buffer'
end

local function resolve_changed_under_edits(buf, path, choice)
  if not api.nvim_buf_is_valid(buf) then
    return
  end
  if choice == 'agent' then
    api.nvim_buf_call(buf, function()
      vim.cmd('silent edit!') -- 'undoreload' keeps your edits one `u` away
    end)
  elseif choice == 'diff' then
    diff_with_disk(buf, path)
  end
end

local function ask_changed_under_edits(buf, path, agent)
  local text = require('louise.text')
  ask({
    prompt = ('louise: %s changed %s on disk, and its buffer has unsaved edits'):format(
      text.line(agent or 'the agent'), text.line(vim.fn.fnamemodify(path, ':~:.'))),
    choices = CHANGED_UNDER_EDITS,
    default = 'mine',
    done = function(choice)
      resolve_changed_under_edits(buf, path, choice)
    end,
  })
end

--- What an agent's fs/read_text_file gets: the buffer's text (what the person sees) and
--- its state (see `state`). When the file changed on disk under unsaved edits, the person
--- is asked about it now (this check takes the change as seen, as Vim does).
function M.read_for_agent(path, agent)
  local buf = M.find(path)
  if not buf then
    return nil
  end
  local state = M.state(path)
  if state == 'modified_changed' then
    ask_changed_under_edits(buf, path, agent)
  end
  return { text = buffer_text(buf), state = state }
end

--- `paths`: { [path] = agent } of files agents changed (or `true` for every buffer).
function M.reload(paths)
  local targets = {}
  if paths == true then
    for _, buf in ipairs(api.nvim_list_bufs()) do
      if api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' and api.nvim_buf_get_name(buf) ~= '' then
        targets[buf] = { api.nvim_buf_get_name(buf), nil }
      end
    end
  else
    for path, agent in pairs(paths) do
      local buf = M.find(vim.uv.fs_realpath(path) or path)
      if buf then
        targets[buf] = { path, agent ~= vim.NIL and agent or nil }
      end
    end
  end
  for buf, target in pairs(targets) do
    local path, agent = target[1], target[2]
    if vim.bo[buf].modified then
      local reason = checktime(buf, function()
        return ''
      end)
      if reason == 'conflict' then
        ask_changed_under_edits(buf, path, agent)
      end
    else
      checktime(buf, function(reason)
        return reason == 'deleted' and '' or 'reload'
      end)
    end
  end
end

return M
