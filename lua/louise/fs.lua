-- Agents' file access through Neovim's buffers: a loaded buffer wins over the disk.
local M = {}
local api = vim.api

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

--- Whether Vim itself sees the file changed under a buffer with unsaved edits. The
--- FileChangedShell autocommand stands in for Vim's own question, so nothing waits for
--- a key inside this RPC call.
local function conflict_on_disk(buf)
  local reason
  local id = api.nvim_create_autocmd('FileChangedShell', {
    buffer = buf,
    callback = function()
      reason = vim.v.fcs_reason
      vim.v.fcs_choice = ''
    end,
  })
  pcall(vim.cmd, 'checktime ' .. buf)
  pcall(api.nvim_del_autocmd, id)
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
  local lines, ff, eol = split_content(buf, content)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].fileformat = ff
  vim.bo[buf].eol = eol
  vim.bo[buf].fixeol = eol
  if save then
    local write = vim.bo[buf].readonly and 'silent keepalt write' or 'silent keepalt write!'
    api.nvim_buf_call(buf, function()
      vim.cmd(write)
    end)
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

-- Conflicts wait in line: one question on screen at a time (two vim.ui.select calls at
-- once would replace one another in most picker plugins, and the first write would
-- then wait forever). Each is asked outside the frame that brought it, so a person
-- taking their time never holds the engine's frames up.
local waiting = {}
local asking = false

local function answer(req, choice)
  require('louise.engine').send('fs_conflict_answer', { id = req.id, choice = choice })
end

local function ask_next()
  local req = table.remove(waiting, 1)
  if not req then
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
    answer(req, choice)
    vim.schedule(ask_next)
  end
  local text = require('louise.text')
  local reason = CHOICES[req.reason] and req.reason or 'modified'
  local ok, err = pcall(vim.ui.select, CHOICES[reason], {
    prompt = ('louise: %s wants to write %s, %s'):format(text.line(req.agent), text.line(req.path),
      WHY[reason]),
    format_item = function(item)
      return item.text
    end,
  }, function(choice)
    finish(choice and choice.id or 'refuse')
  end)
  if not ok then -- the picker failed: keep the person's edits
    vim.notify('louise: could not ask about ' .. text.line(req.path) .. ' (refused): ' .. tostring(err), vim.log.levels.ERROR)
    finish('refuse')
  end
end

--- The agent wants to write a file whose buffer has unsaved edits, or whose file changed
--- on disk since the buffer read it: the person chooses.
function M.conflict(req)
  table.insert(waiting, req)
  if not asking then
    asking = true
    vim.schedule(ask_next)
  end
end

return M
