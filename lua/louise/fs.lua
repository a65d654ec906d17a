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

function M.read(path)
  local buf = M.find(path)
  if not buf then
    return nil
  end
  local text = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  if vim.bo[buf].eol or vim.bo[buf].fixeol then
    text = text .. '\n'
  end
  return text
end

function M.state(path)
  local buf = M.find(path)
  if not buf then
    return 'unloaded'
  end
  return vim.bo[buf].modified and 'modified' or 'clean'
end

--- Replace the buffer's text in one undo step; save it unless `save` is false.
function M.write(path, content, save)
  local buf = M.find(path)
  if not buf then
    return false
  end
  local lines = vim.split(content, '\n', { plain = true })
  local eol = lines[#lines] == ''
  if eol then
    table.remove(lines)
  end
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].eol = eol
  vim.bo[buf].fixeol = eol
  if save then
    api.nvim_buf_call(buf, function()
      vim.cmd('silent keepalt write')
    end)
  end
  return true
end

local CHOICES = {
  { id = 'buffer', text = 'Apply in the buffer, do not save (your edits are replaced; u undoes)' },
  { id = 'overwrite', text = 'Overwrite your unsaved edits and save' },
  { id = 'refuse', text = 'Refuse: keep your edits (the agent is told)' },
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
  local ok, err = pcall(vim.ui.select, CHOICES, {
    prompt = ('louise: %s wants to write %s, which has unsaved edits'):format(text.line(req.agent), text.line(req.path)),
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

--- The agent wants to write a file whose buffer has unsaved edits: the person chooses.
function M.conflict(req)
  table.insert(waiting, req)
  if not asking then
    asking = true
    vim.schedule(ask_next)
  end
end

return M
