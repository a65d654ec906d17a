-- The person's own saves during a turn: a checkpoint records the workspace before and
-- after each turn, so a file the person saves while an agent works would count as the
-- agent's change. While a turn runs, each save of a file (within MAX_BYTES) is copied
-- just before and just after the write and told to the engine, which keeps that change
-- out of the turn's review and undo. Writes louise makes for an agent are not the
-- person's (fs.writing).
local M = { MAX_BYTES = 2 * 1024 * 1024 }

local api = vim.api
local pending = {} -- buf -> the copy taken before the write (false: there was no file)
local group = nil

local function turn_running()
  for _, state in pairs(require('louise.chat').chats) do
    if require('louise.chat').busy(state) then
      return true
    end
  end
  return false
end

local function watched(buf)
  if vim.bo[buf].buftype ~= '' or (package.loaded['louise.fs'] or {}).writing then
    return nil
  end
  local name = api.nvim_buf_get_name(buf)
  if name == '' or not turn_running() then
    return nil
  end
  return name
end

--- A private copy of `path` (nil: too big or unreadable; false: there is no such file).
local function copy(path)
  local stat = vim.uv.fs_stat(path)
  if not stat then
    return false
  end
  if stat.type ~= 'file' or stat.size > M.MAX_BYTES then
    return nil
  end
  local target = vim.fn.tempname()
  if not vim.uv.fs_copyfile(path, target) then
    return nil
  end
  return target
end

function M.setup()
  if group then
    return
  end
  group = api.nvim_create_augroup('louise_person_saves', { clear = true })
  api.nvim_create_autocmd('BufWritePre', {
    group = group,
    callback = function(ev)
      local path = watched(ev.buf)
      pending[ev.buf] = path and { path = path, before = copy(path) } or nil
    end,
  })
  api.nvim_create_autocmd('BufWritePost', {
    group = group,
    callback = function(ev)
      local saved = pending[ev.buf]
      pending[ev.buf] = nil
      if not saved or saved.before == nil then
        return
      end
      local after = copy(saved.path)
      if not after then
        if saved.before then
          os.remove(saved.before)
        end
        return
      end
      require('louise.engine').send('person_saved', {
        path = vim.uv.fs_realpath(saved.path) or saved.path,
        before = saved.before or nil,
        after = after,
      })
    end,
  })
end

return M
