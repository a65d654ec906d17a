-- What louise tells a person, always through vim.notify and never in the way: the notices
-- of one frame are one message, and with Neovim's own vim.notify (an echo on the command
-- line) that message is one line cut to the room the command line has (v:echospace), as
-- a longer or second line raises the hit-enter prompt ("Press ENTER"), which holds every
-- key and every frame until it is answered. A notification plugin (nvim-notify, noice,
-- fidget, snacks) replaces vim.notify: it gets the whole text, one notice a line, with a
-- title. The whole text of the recent notices stays readable with :LouiseNotices.
local M = { recent = {} }

local MAX_RECENT = 100
local MAX_NOTICE_BYTES = 4000
local PREFIX = 'louise: '
-- Two messages in one moment (two notices of one typed command) scroll the command line
-- to the hit-enter prompt: M.now holds what this moment showed, and a second notice is
-- shown with it, on a redrawn line (at most MAX_MOMENT notices of a moment).
local MAX_MOMENT = 20

local RANK = { [vim.log.levels.INFO] = 1, [vim.log.levels.WARN] = 2, [vim.log.levels.ERROR] = 3 }

--- Whether vim.notify is Neovim's own (an echo), not a plugin's.
function M.stock()
  local info = debug.getinfo(vim.notify, 'S')
  return info ~= nil and type(info.source) == 'string'
    and info.source:find('vim/_editor.lua', 1, true) ~= nil
end

--- `text` as one line of at most `width` cells: line breaks and tabs as spaces, the end
--- cut with "…".
function M.fit(text, width)
  local line = text:gsub('[\r\n\t]+', ' '):gsub('%s%s+', ' ')
  if vim.fn.strdisplaywidth(line) <= width then
    return line
  end
  local chars = vim.fn.strchars(line)
  local lo, hi = 0, chars
  while lo < hi do -- the longest start that fits with the "…"
    local mid = math.floor((lo + hi + 1) / 2)
    if vim.fn.strdisplaywidth(vim.fn.strcharpart(line, 0, mid)) <= width - 1 then
      lo = mid
    else
      hi = mid - 1
    end
  end
  return vim.trim(vim.fn.strcharpart(line, 0, lo)) .. '…'
end

local function remember(text, id)
  local last = M.recent[#M.recent]
  if id and last and last.id == id then -- a progress line updated: kept once, as it is now
    table.remove(M.recent)
  end
  table.insert(M.recent, { time = os.time(), text = text:sub(1, MAX_NOTICE_BYTES), id = id })
  if #M.recent > MAX_RECENT then
    table.remove(M.recent, 1)
  end
end

--- Show notices as one message: `items` is a list of { text, level, id } (level a
--- vim.log.levels value; id, optional, shared by the lines of one progress: a plugin
--- updates its notice in place); the message has the highest level of them.
function M.show(items)
  local texts, seen, level, id = {}, {}, vim.log.levels.INFO, nil
  for _, item in ipairs(items) do
    id = #items == 1 and item[3] or nil
    local text = tostring(item[1] or '')
    if text:sub(1, #PREFIX) == PREFIX then
      text = text:sub(#PREFIX + 1)
    end
    if text ~= '' and not seen[text] then -- the same notice twice in a frame: once
      seen[text] = true
      table.insert(texts, text)
      remember(PREFIX .. text, id)
    end
    if (RANK[item[2]] or 1) > (RANK[level] or 1) then
      level = item[2]
    end
  end
  if #texts == 0 then
    return
  end
  if M.stock() then
    if M.now then -- a second message of this moment: with the first, on a redrawn line
      for _, text in ipairs(texts) do
        if #M.now.texts < MAX_MOMENT and not vim.tbl_contains(M.now.texts, text) then
          table.insert(M.now.texts, text)
        end
      end
      if (RANK[M.now.level] or 1) > (RANK[level] or 1) then
        level = M.now.level
      end
      M.now.level, texts = level, M.now.texts
      pcall(vim.cmd, 'redraw') -- the first message goes, so this one does not scroll
    else
      M.now = { texts = texts, level = level }
      vim.schedule(function()
        M.now = nil
      end)
    end
    local room = vim.v.echospace
    if vim.o.ruler and vim.api.nvim_win_get_config(0).relative ~= '' then
      -- A float (the permission float) has no statusline: its ruler is drawn on the
      -- command line, over the message's end, and v:echospace does not count it.
      room = math.min(room, vim.o.columns - 19)
    end
    room = math.max(room, 12)
    local one = table.concat(texts, ' · '):gsub('%s*\n[%s\n]*', ' · ') -- a notice's lines too
    vim.notify(M.fit(PREFIX .. one, room), level)
  else
    vim.notify(PREFIX .. table.concat(texts, '\n'), level, { title = 'louise', id = id })
  end
end

--- One notice.
function M.notify(text, level)
  M.show({ { text, level or vim.log.levels.INFO } })
end

--- :LouiseNotices: the recent notices in full, newest last, in a view beside the chat.
function M.open()
  local lines = {}
  for _, notice in ipairs(M.recent) do
    local stamp = os.date('%H:%M:%S', notice.time)
    for i, part in ipairs(vim.split(notice.text, '\n', { plain = true })) do
      table.insert(lines, (i == 1 and (stamp .. '  ') or '          ') .. part)
    end
  end
  if #lines == 0 then
    lines = { 'louise has not said anything yet.' }
  end
  require('louise.chat').show_text({ name = 'louise-notices://', lines = lines, ft = 'log' })
end

return M
