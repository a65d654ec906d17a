-- Markdown in the transcript, at a cost per frame that does not grow with the chat.
--
-- A decoration provider highlights each message line as Neovim draws it (ephemeral
-- extmarks, the same `@markup…` groups treesitter uses): headings, lists, quotes, fenced
-- code, code spans, bold, italic, strikethrough, links. Only redrawn lines cost anything,
-- so a streamed frame costs its new lines, in a chat of any size. Fenced code is the one
-- state that spans lines: each message block keeps the rows of its fence lines, scanned
-- once each as the text grows.
--
-- A message that is complete (its turn over) and small enough is
-- then handed over to treesitter: parsed once as a string (with its injections), its
-- captures kept as extmarks, and the provider skips it. A whole-buffer treesitter
-- highlighter instead reparses the streaming paragraph every frame (measured by
-- bench/stream.py: seconds of Neovim CPU per 5 s).
local M = {}

local api = vim.api
local ns = api.nvim_create_namespace('louise_md') -- ephemeral, drawn per line
local ts_ns = api.nvim_create_namespace('louise_md_ts') -- a finished message's captures
local blocks_ns = api.nvim_create_namespace('louise_blocks') -- buffer.lua's block marks
local conceal_ns = api.nvim_create_namespace('louise_md_conceal') -- a finished message's

M.ns, M.ts_ns, M.conceal_ns = ns, ts_ns, conceal_ns
local NO_OPTS = {} -- for the API calls of every drawn row (no table made per call)
M.KINDS = { agent = true, user = true, thought = true }
-- Treesitter's one parse of a finished message costs ~0.1 ms per line here: up to this
-- size it runs once per message (after the frame); longer messages keep the line
-- highlighting, which is the same groups for all but multi-line constructs.
M.MAX_TS_BYTES = 24 * 1024
M.MAX_SCAN = 4096 -- a longer line is scanned at its head and its tail only

M.states = {} -- transcript buffer -> chat state

local HEADING = {}
for n = 1, 6 do
  HEADING[n] = '@markup.heading.' .. n .. '.markdown'
end

local function is_fence(line)
  return line:find('^%s*```') ~= nil or line:find('^%s*~~~') ~= nil
end

--- The md block info of a block id (created on first use).
local function info_of(state, id)
  state.md = state.md or {}
  local info = state.md[id]
  if not info then
    info = { fences = {}, scanned = 0 }
    state.md[id] = info
  end
  return info
end

--- Rows (relative to the block) of fence lines before `upto`, scanning what was not yet.
local function scan(buf, info, start, upto)
  if upto <= info.scanned then
    return
  end
  local lines = api.nvim_buf_get_lines(buf, start + info.scanned, start + upto, false)
  for i, line in ipairs(lines) do
    if is_fence(line) then
      table.insert(info.fences, info.scanned + i - 1)
    end
  end
  info.scanned = info.scanned + #lines
end

--- How many fence lines come before `rel` (binary search: fences are in order).
local function fences_before(fences, rel)
  local lo, hi = 1, #fences
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    if fences[mid] < rel then
      lo = mid + 1
    else
      hi = mid - 1
    end
  end
  return lo - 1
end

local function block_start(state, buf, index)
  local mark = state.blocks[state.order[index]]
  return mark and api.nvim_buf_get_extmark_by_id(buf, blocks_ns, mark, NO_OPTS)[1]
end

--- The block a row belongs to: its id and first row. A binary search over the blocks'
--- marks by id (the newest block first: most drawn rows are in it): a reverse
--- nvim_buf_get_extmarks walks every mark of the buffer above the row, ~30 µs per drawn
--- line once a finished message holds treesitter's captures.
local function block_at(state, buf, row)
  local order = state.order
  local lo, hi = 1, #order
  local redraw = state.md_redraw -- this redraw's newest block start, read once
  if redraw.last == nil then
    redraw.last = block_start(state, buf, hi) or false
  end
  local start = redraw.last
  if start and start <= row then
    return order[hi], start
  end
  local found, found_start = nil, nil
  hi = hi - 1
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    start = block_start(state, buf, mid)
    if not start then
      return nil -- a block without its mark: nothing to draw until the next reset
    end
    if start <= row then
      found, found_start, lo = order[mid], start, mid + 1
    else
      hi = mid - 1
    end
  end
  return found, found_start
end

-- One table for every drawn highlight's options (Neovim reads it during the call): the
-- provider runs for each drawn row of every streamed frame, and its garbage is collected
-- on the frames that follow.
local MARK = { ephemeral = true, priority = 100 }

local function set_mark(buf, row, col, end_col, group)
  MARK.end_col, MARK.hl_group = end_col, group
  api.nvim_buf_set_extmark(buf, ns, row, col, MARK)
end

local put = set_mark -- what a line's highlights go to (M.highlights_at collects them)

local function in_code(code, s)
  for i = 1, #code, 2 do
    if s >= code[i] and s <= code[i + 1] then
      return true
    end
  end
  return false
end

--- The first match from `at` of `anchored` (a pattern starting with `^` and then the
--- literal `lead`): tried where `lead` is, as an unanchored find would try it at every
--- byte of the line (~6 % of a streamed frame's instructions in Neovim).
local function find_lead(text, lead, anchored, at)
  while true do
    local p = text:find(lead, at, true)
    if not p then
      return nil
    end
    local s, e, c = text:find(anchored, p)
    if s then
      return s, e, c
    end
    at = p + 1
  end
end

--- Every match of `pattern` (see find_lead) in `text` outside code spans, highlighted as
--- `group`; with `lone`, a match touching the same character (`**` around `*…*`) is not one.
local function spans(buf, row, text, base, code, lead, pattern, group, lone)
  local at = 1
  while true do
    local s, e = find_lead(text, lead, pattern, at)
    if not s then
      return
    end
    if not in_code(code, s) and not (lone and (text:byte(s - 1) == lone or text:byte(e + 1) == lone)) then
      put(buf, row, base + s - 1, base + e, group)
    end
    at = e + 1
  end
end

local STAR, BACKTICK = string.byte('*'), string.byte('`')

--- Inline spans of `text` (a part of the line starting at byte `base`): code spans
--- first, and nothing else inside them. Each construct is looked for only when its
--- character is in the text (this runs for every drawn row: most have few or none).
local function inline(buf, row, text, base)
  local code = {} -- start, end pairs
  if text:find('`', 1, true) then
    local pos = 1
    while true do
      local s, e = find_lead(text, '`', '^`[^`]+`', pos)
      if not s then
        break
      end
      put(buf, row, base + s - 1, base + e, '@markup.raw.markdown_inline')
      code[#code + 1], code[#code + 2] = s, e
      pos = e + 1
    end
  end
  if text:find('*', 1, true) then
    spans(buf, row, text, base, code, '**', '^%*%*[^%*%s][^%*]-%*%*', '@markup.strong.markdown_inline')
    spans(buf, row, text, base, code, '*', '^%*[^%*%s][^%*]-%*', '@markup.italic.markdown_inline', STAR)
  end
  if text:find('__', 1, true) then
    spans(buf, row, text, base, code, '__', '^__[^_%s][^_]-__', '@markup.strong.markdown_inline')
  end
  if text:find('~~', 1, true) then
    spans(buf, row, text, base, code, '~~', '^~~[^~]+~~', '@markup.strikethrough.markdown_inline')
  end
  if not text:find('](', 1, true) then
    return
  end
  local at = 1
  while true do
    local s, e, m = find_lead(text, '[', '^%[[^%]]+%]()%([^%)%s]+%)', at) -- m: the `(`
    if not s then
      break
    end
    if not in_code(code, s) then
      put(buf, row, base + s - 1, base + m - 1, '@markup.link.label.markdown_inline')
      put(buf, row, base + m - 1, base + e, '@markup.link.url.markdown_inline')
    end
    at = e + 1
  end
end

--- Highlight one drawn line of a message (the provider's on_line).
local function draw_line(state, buf, row)
  -- Read up to 2 * MAX_SCAN + 1 bytes: a longer line is read at its head and its tail
  -- only (a reply that is one long line must not cost its length per frame).
  local line = api.nvim_buf_get_text(buf, row, 0, row, 2 * M.MAX_SCAN + 1, NO_OPTS)[1]
  if not line or line == '' or line:sub(1, 3) == '▌' then
    return -- an empty row (the streamed tail after a newline, mostly) or a header
  end
  local length, tail_text, tail_from = #line, nil, nil
  if length > 2 * M.MAX_SCAN then
    length = api.nvim_buf_get_offset(buf, row + 1) - api.nvim_buf_get_offset(buf, row) - 1
    line = line:sub(1, M.MAX_SCAN)
    tail_from = length - M.MAX_SCAN
    tail_text = api.nvim_buf_get_text(buf, row, tail_from, row, length, NO_OPTS)[1]
  end
  local id, start = block_at(state, buf, row)
  if not id or not M.KINDS[state.kinds[id]] then
    return
  end
  local info = info_of(state, id)
  if info.ts then
    return -- treesitter's captures are there
  end
  local rel = row - start
  scan(buf, info, start, rel)
  local fenced = fences_before(info.fences, rel) % 2 == 1
  local redraw = state.md_redraw
  redraw.lines = redraw.lines or api.nvim_buf_line_count(buf)
  local fence = is_fence(line)
  if info.scanned == rel and row + 1 < redraw.lines then
    -- A complete row drawn in order (the streamed tail): scanned now, not read again.
    if fence then
      table.insert(info.fences, rel)
    end
    info.scanned = rel + 1
  end
  if fence then
    put(buf, row, 0, length, '@punctuation.delimiter.markdown')
    M.seen(state, id)
    return
  end
  if fenced then
    put(buf, row, 0, length, '@markup.raw.block.markdown')
    M.seen(state, id)
    return
  end
  local hashes = line:match('^(#+)%s')
  if hashes and #hashes <= 6 then
    put(buf, row, 0, length, HEADING[#hashes])
  elseif line:find('^%s*>') then
    put(buf, row, 0, length, '@markup.quote.markdown')
  else
    local s, e = line:find('^%s*[-*+]%s')
    if not s then
      s, e = line:find('^%s*%d+[.)]%s')
    end
    if s then
      put(buf, row, s - 1 + #line:match('^%s*'), e - 1, '@markup.list.markdown')
    end
  end
  inline(buf, row, line, 0)
  if tail_text then -- where a streamed long line grows
    inline(buf, row, tail_text, tail_from)
  end
  M.seen(state, id)
end

--- The highlights the provider draws on a row: { {col, end_col, group}, … } (for tests
--- and :lua =require('louise.chat.markdown').highlights_at(buf, row)).
function M.highlights_at(buf, row)
  local state = M.states[buf]
  local out = {}
  if not state then
    return out
  end
  put = function(_, _, col, end_col, group)
    table.insert(out, { col, end_col, group })
  end
  state.md_redraw = {}
  local ok, err = pcall(draw_line, state, buf, row)
  put = set_mark
  if not ok then
    error(err, 0)
  end
  return out
end

-- ------------------------------------------------------------------ treesitter handover

--- A message was drawn: it goes to treesitter once it is finished.
function M.seen(state, id)
  state.md_pending = state.md_pending or {}
  if state.md_pending[id] or (state.md and state.md[id] and state.md[id].ts) then
    return
  end
  state.md_pending[id] = true
  -- A message first drawn after its turn ended (the frame that ended it came before any
  -- redraw) gets no later frame: look again once this redraw is over.
  if not state.md_recheck then
    state.md_recheck = true
    vim.schedule(function()
      state.md_recheck = false
      if api.nvim_buf_is_valid(state.buf) then
        require('louise.chat.buffer').markdown_finish(state)
      end
    end)
  end
end

-- ------------------------------------------------------------------ concealed markup

local function hide(buf, row, col, end_col)
  pcall(api.nvim_buf_set_extmark, buf, conceal_ns, row, col,
    { end_col = end_col, conceal = '', priority = 110 })
end

--- Conceal one line's inline markup: the backticks of code spans, the `**`/`__`/`~~` of
--- bold and strikethrough, the stars of `*italic*`, a link's brackets and its target (`[label](url)` reads
--- `label`). Nothing inside a code span but its backticks.
local function conceal_line(buf, row, line)
  local code = {}
  local pos = 1
  while true do
    local s, e = line:find('`[^`]+`', pos)
    if not s then
      break
    end
    hide(buf, row, s - 1, s)
    hide(buf, row, e - 1, e)
    code[#code + 1], code[#code + 2] = s, e
    pos = e + 1
  end
  for _, pattern in ipairs({ '%*%*[^%*%s][^%*]-%*%*', '__[^_%s][^_]-__', '~~[^~%s][^~]-~~' }) do
    pos = 1
    while true do
      local s, e = line:find(pattern, pos)
      if not s then
        break
      end
      if not in_code(code, s) then
        hide(buf, row, s - 1, s + 1)
        hide(buf, row, e - 2, e)
      end
      pos = e + 1
    end
  end
  pos = 1
  while true do -- *italic* (a star touching another is bold's)
    local s, e = line:find('%*[^%*%s][^%*]-%*', pos)
    if not s then
      break
    end
    if not in_code(code, s) and line:byte(s - 1) ~= STAR and line:byte(e + 1) ~= STAR then
      hide(buf, row, s - 1, s)
      hide(buf, row, e - 1, e)
      pos = e + 1
    else
      pos = s + 1 -- a star of bold's: the next may open an italic
    end
  end
  pos = 1
  while true do
    local s, e, m = line:find('%[[^%]]+%]()%([^%)%s]+%)', pos) -- m: where `(` is
    if not s then
      break
    end
    if not in_code(code, s) then
      hide(buf, row, s - 1, s) -- [
      hide(buf, row, m - 2, e) -- ](url)
    end
    pos = e + 1
  end
end

--- Conceal the markup of a finished message's rows (fenced code left as it is), shown
--- where the window's 'conceallevel' allows (the transcript's is 2).
function M.conceal(state, start, stop)
  local buf = state.buf
  local lines = api.nvim_buf_get_lines(buf, start, stop, false)
  api.nvim_buf_clear_namespace(buf, conceal_ns, start, stop)
  local fenced = false
  for i, line in ipairs(lines) do
    if is_fence(line) then
      fenced = not fenced
    elseif not fenced and line:find('[`*_~%[]') and line:sub(1, 3) ~= '▌' then
      conceal_line(buf, start + i - 1, line:sub(1, M.MAX_SCAN))
    end
  end
end

--- Parse a finished message once with treesitter and keep its captures.
function M.handover(state, id, start, stop)
  local buf = state.buf
  local info = info_of(state, id)
  if info.ts or info.ts_failed then
    return
  end
  if api.nvim_buf_get_offset(buf, stop) - api.nvim_buf_get_offset(buf, start) > M.MAX_TS_BYTES then
    info.ts_failed = true -- too long: the line highlighting stays, the markup shows
    return
  end
  M.conceal(state, start, stop)
  local lines = api.nvim_buf_get_lines(buf, start, stop, false)
  local text = table.concat(lines, '\n')
  local ok = pcall(function()
    local parser = vim.treesitter.get_string_parser(text, 'markdown')
    parser:parse(true)
    api.nvim_buf_clear_namespace(buf, ts_ns, start, stop)
    parser:for_each_tree(function(tree, ltree)
      local lang = ltree:lang()
      local query = vim.treesitter.query.get(lang, 'highlights')
      if not query then
        return
      end
      for capture, node in query:iter_captures(tree:root(), text) do
        local name = query.captures[capture]
        if name ~= 'spell' and name ~= 'nospell' and name ~= 'conceal' and name:sub(1, 1) ~= '_' then
          local r0, c0, r1, c1 = node:range()
          if lines[r0 + 1] and not lines[r0 + 1]:find('^▌') then
            pcall(api.nvim_buf_set_extmark, buf, ts_ns, start + r0, c0, {
              end_row = start + r1, end_col = c1, hl_group = '@' .. name .. '.' .. lang,
              priority = 100,
            })
          end
        end
      end
    end)
  end)
  if ok then
    info.ts = true
  else
    info.ts_failed = true
  end
end

--- The frame just applied on the screen before a parse: a callback scheduled by a frame
--- runs before Neovim redraws, and the screen is sent to the UI only once nothing more is
--- queued, so the frame that ended a turn (its last chunks with it) waited for the parse:
--- 35-50 ms for treesitter's first one in a Neovim (bench/startup.py's first chunk). A
--- flush with nothing pending costs nothing.
function M.screen_first()
  if not pcall(api.nvim__redraw, { flush = true }) then
    pcall(vim.cmd, 'redraw') -- Neovim 0.10 before nvim__redraw
  end
end

--- After a frame: finished messages that were drawn go to treesitter (scheduled, once the
--- frame is on the screen: see screen_first). Not while a turn works: a parse between two
--- frames holds the stream, and treesitter's first use in a Neovim (loading the markdown
--- parsers and their queries) takes 100-200 ms, which made the first turn's first chunk
--- wait that long (bench/startup.py). The turn's end hands over every message drawn.
function M.finish(state, block_range, busy)
  local pending = state.md_pending
  if busy or not pending or state.md_scheduled or next(pending) == nil then
    return
  end
  local todo = {}
  for id in pairs(pending) do
    table.insert(todo, id)
    pending[id] = nil
  end
  state.md_scheduled = true
  vim.schedule(function()
    state.md_scheduled = false
    if not api.nvim_buf_is_valid(state.buf) then
      return
    end
    M.screen_first()
    for _, id in ipairs(todo) do
      local start, stop = block_range(state, id)
      if start then
        M.handover(state, id, start, stop)
      end
    end
  end)
end

--- A transcript whose blocks were all replaced (a reset): forget what was known.
function M.reset(state)
  state.md, state.md_pending = {}, {}
  if api.nvim_buf_is_valid(state.buf) then
    api.nvim_buf_clear_namespace(state.buf, ts_ns, 0, -1)
    api.nvim_buf_clear_namespace(state.buf, conceal_ns, 0, -1)
  end
end

-- ------------------------------------------------------------------ the provider

function M.attach(state)
  state.md_redraw = state.md_redraw or {}
  M.states[state.buf] = state
end

function M.detach(buf)
  M.states[buf] = nil
end

api.nvim_set_decoration_provider(ns, {
  on_win = function(_, _, buf)
    local state = M.states[buf]
    if state then
      state.md_redraw = {} -- the buffer cannot change during a redraw
    end
    return state ~= nil
  end,
  on_line = function(_, _, buf, row)
    local state = M.states[buf]
    if state then
      local ok, err = pcall(draw_line, state, buf, row)
      if not ok then
        M.error = err -- never break a redraw; kept for :lua =require'louise.chat.markdown'.error
      end
    end
  end,
})

return M
