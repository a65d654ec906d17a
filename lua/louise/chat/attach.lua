-- Richer prompts: `@path` mentions of files become attachments (the file goes to the
-- agent as a link, or embedded when it takes embedded context), and images from a file or
-- the clipboard (when the agent takes images). Every attachment is a context chip, shown
-- in the prompt's winbar and removable with :LouiseDrop.
local M = {}

local uv = vim.uv or vim.loop
local MAX_MENTIONS = 20
local MAX_IMAGE_BYTES = 10 * 1024 * 1024
local CLIPBOARD_TIMEOUT_MS = 3000

local function regular_file(path)
  local stat = uv.fs_stat(path)
  return stat ~= nil and stat.type == 'file'
end

--- The absolute path of an `@path` mention that names a regular file, else nil.
function M.resolve(word, cwd)
  local path = word:gsub('[.,;:!?)%]]+$', '') -- trailing punctuation is the sentence's
  if path == '' then
    return nil
  end
  if path:sub(1, 1) ~= '/' and path:sub(1, 1) ~= '~' then
    path = (cwd or vim.fn.getcwd()) .. '/' .. path
  end
  path = vim.fs.normalize(path) -- `~` expanded; never a glob
  if path:find('/%.%./') or path:sub(-3) == '/..' then
    path = vim.fn.resolve(vim.fn.fnamemodify(path, ':p'))
  end
  return regular_file(path) and path or nil
end

M.MAX_PICKED_FILES = 5000 -- files :LouiseAdd file offers
M.MAX_DEPTH = 12
M.MAX_WALK_MS = 150 -- the walk blocks Neovim: a huge tree is cut short, and says so
-- Directories nobody attaches from (and that can hold a great many files).
local SKIPPED_DIRS = { node_modules = true, __pycache__ = true, target = true, dist = true,
  build = true, venv = true }

--- The workspace's files for :LouiseAdd file, relative to `cwd`: hidden and dependency
--- directories skipped, at most `max` files (M.MAX_DEPTH levels, M.MAX_WALK_MS); the
--- second value is true when the walk stopped at a bound.
function M.workspace_files(cwd, max)
  max = max or M.MAX_PICKED_FILES
  local files, cut = {}, false
  local deadline = uv.hrtime() + M.MAX_WALK_MS * 1e6
  local ok = pcall(function()
    for name, kind in vim.fs.dir(cwd, { depth = M.MAX_DEPTH, skip = function(dir)
      if uv.hrtime() > deadline then
        cut = true -- no deeper: a tree of directories without files ends too
        return false
      end
      local base = vim.fs.basename(dir)
      return base:sub(1, 1) ~= '.' and not SKIPPED_DIRS[base]
    end }) do
      if kind == 'file' and vim.fs.basename(name):sub(1, 1) ~= '.' then
        if #files >= max or (#files % 64 == 0 and uv.hrtime() > deadline) then
          cut = true
          break
        end
        table.insert(files, name)
      end
    end
  end)
  if not ok then
    return files, cut
  end
  table.sort(files)
  return files, cut
end

--- Chips for the files the prompt mentions with `@path` (not already attached).
function M.mentions(prompt, existing, cwd)
  local seen = {}
  for _, chip in ipairs(existing or {}) do
    if chip.path then
      seen[chip.path] = true
    end
  end
  local chips = {}
  for word in prompt:gmatch('%f[%S]@(%S+)') do
    if #chips >= MAX_MENTIONS then
      break
    end
    local path = M.resolve(word, cwd)
    if path and not seen[path] then
      seen[path] = true
      table.insert(chips, { kind = 'file', path = path, mention = true })
    end
  end
  return chips
end

-- Clipboard readers for images, tried in order (argv, no shell).
M.CLIPBOARD = {
  { 'wl-paste', '--no-newline', '--type', 'image/png' },
  { 'xclip', '-selection', 'clipboard', '-t', 'image/png', '-o' },
  { 'pngpaste', '-' },
}

--- The clipboard's image saved to a private temporary file: its path, or nil and why.
function M.clipboard_image()
  local tried = {}
  for _, argv in ipairs(M.CLIPBOARD) do
    if vim.fn.executable(argv[1]) == 1 then
      table.insert(tried, argv[1])
      local ok, result = pcall(function()
        return vim.system(argv, { text = false }):wait(CLIPBOARD_TIMEOUT_MS)
      end)
      local data = ok and result.code == 0 and result.stdout or ''
      if #data > MAX_IMAGE_BYTES then
        return nil, 'the clipboard image is larger than 10 MiB'
      end
      if #data > 8 and data:sub(1, 8) == '\137PNG\r\n\26\n' then
        local path = vim.fn.tempname() .. '.png'
        local fd = uv.fs_open(path, 'w', tonumber('600', 8))
        if not fd then
          return nil, 'cannot write a temporary file'
        end
        uv.fs_write(fd, data)
        uv.fs_close(fd)
        return path
      end
    end
  end
  if #tried == 0 then
    return nil, 'no clipboard tool found (wl-paste, xclip or pngpaste)'
  end
  return nil, 'the clipboard holds no image (' .. table.concat(tried, ', ') .. ')'
end

--- An image chip from `path` (expanded), or from the clipboard without one.
function M.image_chip(path)
  if path and path ~= '' then
    local full = vim.fs.normalize(vim.fn.fnamemodify(vim.fn.expand(path), ':p'))
    if not regular_file(full) then
      return nil, ('no such file: %s'):format(path)
    end
    return { kind = 'image', path = full }
  end
  local saved, why = M.clipboard_image()
  if not saved then
    return nil, why
  end
  return { kind = 'image', path = saved, clipboard = true, name = 'clipboard image' }
end

return M
