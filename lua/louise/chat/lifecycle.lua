-- A chat's life beside its frames: the quit guard while its session works, every
-- transcript read-only after a failed frame, a chat closed, every chat told when the
-- Python side died, and handed to a new one (the agent replays their history).
local chat = require('louise.chat')
local notice = require('louise.notice')

local M = {}

local api = vim.api
local present = chat.present

local BUSY = { prompting = true, waiting_permission = true, cancelling = true }

--- Whether the session works or waits for the person (closing it loses that).
function M.busy(state)
  return BUSY[state.status and state.status.status or ''] == true
end

-- Prompts a refused quit marked modified for that moment only (see ExitPre): a
-- transcript is 'nofile' and cannot hold a quit, its chat's prompt (`acwrite`) can.
M.quit_marks = {}

--- What holds quitting: each chat that works, waits for a permission or holds an unsent
--- prompt, in words (`demo 3 is still working`), and the way out the first one has.
function M.holding()
  local reasons, hint = {}, nil
  local layout = require('louise.chat.layout')
  local states = {}
  for _, state in pairs(chat.chats) do
    table.insert(states, state)
  end
  table.sort(states, function(a, b)
    return a.n < b.n
  end)
  for _, state in ipairs(states) do
    if api.nvim_buf_is_valid(state.buf) then
      local st = state.status and state.status.status
      if BUSY[st or ''] then
        local waiting = st == 'waiting_permission'
        table.insert(reasons, ('%s is %s'):format(layout.name(state),
          waiting and 'waiting for your permission' or 'still working'))
        hint = hint or (waiting and ':LouisePermission' or ':LouiseCancel')
      end
      if api.nvim_buf_is_valid(state.prompt) and vim.bo[state.prompt].modified then
        table.insert(reasons, ('%s has an unsent prompt'):format(layout.name(state)))
        hint = hint or 'send or clear it'
      end
    end
  end
  if #reasons == 0 then
    return nil
  end
  return ('louise: %s — %s, or :qa! to quit'):format(table.concat(reasons, ', '), hint)
end

-- Ex commands that quit, and whether they quit everything (else only when the window is
-- the last one).
local QUITS = {
  quit = false, xit = false, exit = false, wq = false,
  qall = true, quitall = true, wqall = true, xall = true,
}

--- Whether a typed command line would end Neovim (a bang never counts: it means it).
local function would_exit(line)
  local ok, parsed = pcall(api.nvim_parse_cmd, line, {})
  if not ok or parsed.bang then
    return false
  end
  local all = QUITS[parsed.cmd]
  if all == nil then
    return false
  end
  if all then
    return true
  end
  if #api.nvim_list_tabpages() > 1 then
    return false
  end
  local windows = 0
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_config(win).relative == '' then
      windows = windows + 1
    end
  end
  return windows <= 1
end

local group = api.nvim_create_augroup('louise_quit_guard', { clear = true })

-- `:w` or `:update` with no file name, typed in a transcript (a 'nofile' buffer: Neovim's
-- answer would be E382): what to do instead.
local function transcript_write(line)
  local state = chat.by_buf[api.nvim_get_current_buf()]
  if not state or state.buf ~= api.nvim_get_current_buf() then
    return nil
  end
  local ok, parsed = pcall(api.nvim_parse_cmd, line, {})
  if not ok or (parsed.cmd ~= 'write' and parsed.cmd ~= 'update') or #parsed.args > 0 then
    return nil
  end
  return 'louise: a transcript is not a file; :LouiseExport [path] saves it' -- fits 80 columns
end

-- A quit typed on the command line is stopped before it runs (no E37, no window taken
-- to a chat), and louise says why in one message; so is a write typed in a transcript.
api.nvim_create_autocmd('CmdlineLeave', {
  group = group,
  pattern = ':',
  callback = function()
    if vim.v.event.abort then
      return
    end
    local line = vim.fn.getcmdline()
    local message = (would_exit(line) and M.holding()) or transcript_write(line)
    if message then
      vim.cmd('let v:event.abort = v:true') -- vim.v.event is a copy: set it in place
      vim.schedule(function()
        notice.notify(message, vim.log.levels.WARN)
      end)
    end
  end,
})

-- A quit that did not come from the command line (a mapping, ZZ, another client): the
-- prompt of each chat that works is marked modified for that moment only (a prompt with
-- unsent text already is), so Neovim refuses, then the mark goes and louise says why.
api.nvim_create_autocmd('ExitPre', {
  group = group,
  callback = function()
    local message = M.holding()
    if not message then
      return
    end
    local marked = {}
    for _, state in pairs(chat.chats) do
      local prompt = state.prompt
      if api.nvim_buf_is_valid(prompt) and M.busy(state) and not vim.bo[prompt].modified then
        vim.bo[prompt].modified = true
        M.quit_marks[prompt] = true
        table.insert(marked, prompt)
      end
    end
    vim.schedule(function() -- runs only if Neovim is still there
      for _, prompt in ipairs(marked) do
        if M.quit_marks[prompt] and api.nvim_buf_is_valid(prompt) then
          vim.bo[prompt].modified = false
        end
        M.quit_marks[prompt] = nil
      end
      notice.notify(message, vim.log.levels.WARN)
    end)
  end,
})

--- Every transcript read-only (after a failed frame, whatever it left behind).
function M.lock_all()
  for _, state in pairs(chat.chats) do
    if api.nvim_buf_is_valid(state.buf) then
      vim.bo[state.buf].modifiable = false
    end
  end
end

--- A chat's (or a placeholder's) transcript and prompt buffers gone, and forgotten.
function M.wipe(state)
  require('louise.chat.markdown').detach(state.buf)
  for _, buf in ipairs({ state.buf, state.prompt }) do
    chat.by_buf[buf] = nil
    if api.nvim_buf_is_valid(buf) then
      pcall(api.nvim_buf_delete, buf, { force = true })
    end
  end
end

function M.closed(key)
  local state = chat.chats[key]
  if not state then
    require('louise.chat.starting').drop(key) -- a placeholder no session took
    require('louise.chat.placement').after_close()
    return
  end
  chat.chats[key] = nil
  M.wipe(state)
  if chat.last == key then
    chat.last = nil
  end
  require('louise.chat.placement').after_close() -- never a lone empty [No Name]
end

--- The Python side died: every chat shows it; returns how many chats are open.
function M.engine_died()
  local open = 0
  for _, state in pairs(chat.chats) do
    state.status = vim.tbl_extend('force', state.status or {}, {
      status = 'error',
      error = 'the louise Python side exited',
    })
    if api.nvim_buf_is_valid(state.buf) then
      open = open + 1
      chat.refresh_winbar(state)
    end
  end
  return open
end

--- A new Python side takes over the open chats (the agent replays their history).
function M.reattach_all()
  for key, state in pairs(chat.chats) do
    if api.nvim_buf_is_valid(state.buf) then
      local status = state.status or {}
      require('louise.engine').send('reattach', {
        key = key,
        agent = state.agent,
        cwd = present(status.cwd) and status.cwd or vim.fn.getcwd(),
        name = type(status.title) == 'string' and status.title or nil,
      })
    end
  end
end

return M
