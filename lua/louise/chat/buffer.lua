-- The transcript buffer of a chat: created read-only, changed only by the engine's frame
-- ops (reset, block, text, replace, meta), each block tracked by an extmark. What its
-- windows do around a frame (follow the tail, fold thoughts, the wait line) is view.lua's.
local chat = require('louise.chat')
local lifecycle = require('louise.chat.lifecycle')
local text = require('louise.text')
local view = require('louise.chat.view')

local M = {}

local api = vim.api
local ns = api.nvim_create_namespace('louise_blocks')
local hl_ns = api.nvim_create_namespace('louise_hl')
local hint_ns = api.nvim_create_namespace('louise_empty_hint')
local present = chat.present

local kind_group = require('louise.highlights').kind_group

-- ------------------------------------------------------------------ creation

-- The transcript is 'nofile': Neovim never marks it modified, so it never shows `[+]` nor
-- holds a quit by itself, and a frame's edit flips no flag (each flip redrew every
-- window's status line, ~6 % of Neovim's instructions a streamed frame); `:w` in it is
-- answered in words (lifecycle.lua). The prompt is 'acwrite': its unsent text is
-- 'modified' (it holds quitting) and `:w` runs louise's BufWriteCmd, never a file.
local function set_buf_opts(buf, ft, buftype)
  vim.bo[buf].buftype = buftype
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = ft
end

--- A new chat's state with its transcript and prompt buffers (no window yet).
function M.create(key, agent)
  chat.counter = chat.counter + 1
  local n = chat.counter
  local buf = api.nvim_create_buf(false, true)
  set_buf_opts(buf, 'louise', 'nofile')
  vim.bo[buf].modifiable = false
  vim.bo[buf].undolevels = -1
  pcall(api.nvim_buf_set_name, buf, ('louise://%s/%d'):format(agent, n))
  local prompt = api.nvim_create_buf(false, true)
  set_buf_opts(prompt, 'louise_prompt', 'acwrite')
  pcall(api.nvim_buf_set_name, prompt, ('louise://%s/%d/prompt'):format(agent, n))
  local state = {
    key = key,
    agent = agent,
    n = n,
    buf = buf,
    prompt = prompt,
    blocks = {}, -- id -> extmark id
    order = {}, -- block ids in buffer order
    index = {}, -- id -> position in order
    kinds = {},
    status = {},
    attached = true,
  }
  chat.chats[key] = state
  chat.by_buf[buf] = state
  M.markdown(buf, true)
  chat.by_buf[prompt] = state
  chat.keymaps(state)
  chat.autocmds(state)
  require('louise.cmp').register() -- when nvim-cmp is there
  require('louise.saves').setup() -- the person's saves during a turn stay theirs
  M.empty_hint(state)
  return state
end

--- A transcript with nothing in it yet says what to do (virtual text: not in the buffer,
--- never copied or exported); gone with the first block.
function M.empty_hint(state)
  if not api.nvim_buf_is_valid(state.buf) or (#state.order > 0 and not state.hint_shown) then
    return -- nothing to clear (checked on every frame)
  end
  api.nvim_buf_clear_namespace(state.buf, hint_ns, 0, -1)
  state.hint_shown = #state.order == 0
  if state.hint_shown then
    api.nvim_buf_set_extmark(state.buf, hint_ns, 0, 0, {
      virt_text = { { ('A new session with %s: write in the prompt below · /help lists its'
        .. ' commands · :help louise-chat'):format(text.line(state.agent)), 'Comment' } },
      virt_text_pos = 'eol',
    })
  end
end

--- Markdown highlighting of the transcript (chat/markdown.lua): on while replies stream,
--- in chats of any size; setup{markdown = false} leaves it off.
function M.markdown(buf, on)
  local md = require('louise.chat.markdown')
  local state = chat.by_buf[buf]
  if not on or chat.options().markdown == false or not state or state.buf ~= buf then
    md.detach(buf)
    return
  end
  md.attach(state)
end

-- ------------------------------------------------------------------ blocks

local function next_start(state, id)
  local pos = state.index[id]
  if pos == nil then
    return nil
  end
  for i = pos + 1, #state.order do
    local mark = state.blocks[state.order[i]]
    if mark then
      local row = api.nvim_buf_get_extmark_by_id(state.buf, ns, mark, {})[1]
      if row then
        return row
      end
    end
  end
  return nil
end

local function block_range(state, id)
  local mark = state.blocks[id]
  if not mark then
    return nil
  end
  local start = api.nvim_buf_get_extmark_by_id(state.buf, ns, mark, {})[1]
  if not start then
    return nil
  end
  local stop = next_start(state, id) or api.nvim_buf_line_count(state.buf)
  return start, stop
end

local function highlight(state, kind, start, count)
  local group = kind_group(kind)
  if not group then
    return
  end
  local buf = state.buf
  if kind == 'tool' or kind == 'notice' or kind == 'usage' then
    for row = start, start + count - 1 do
      api.nvim_buf_set_extmark(buf, hl_ns, row, 0, { line_hl_group = group, priority = 50 })
    end
  else
    -- Headers: the first non-empty line of the block ("▌ …").
    for row = start, math.min(start + 1, start + count - 1) do
      local line = api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ''
      if line:sub(1, 3) == '▌' then
        api.nvim_buf_set_extmark(buf, hl_ns, row, 0, { line_hl_group = group, priority = 50 })
      end
    end
  end
end

local function add_block(state, id, kind, start, count)
  state.blocks[id] = api.nvim_buf_set_extmark(state.buf, ns, start, 0, {})
  table.insert(state.order, id)
  state.index[id] = #state.order
  state.kinds[id] = kind
  highlight(state, kind, start, count)
end

-- ------------------------------------------------------------------ ops
-- Lines from the engine go through text.map (one to one: the engine counted them) and
-- streamed text through text.lines (split at its newlines).

local function op_reset(state, lines, blocks, metas)
  api.nvim_buf_clear_namespace(state.buf, ns, 0, -1)
  api.nvim_buf_clear_namespace(state.buf, hl_ns, 0, -1)
  state.blocks, state.order, state.index, state.kinds = {}, {}, {}, {}
  require('louise.chat.markdown').reset(state)
  state.meta = present(metas) and metas or {}
  api.nvim_buf_set_lines(state.buf, 0, -1, false, text.map(lines))
  for _, b in ipairs(blocks) do
    add_block(state, b[1], b[2], b[3], b[4])
  end
  state.needs_fold = true
end

-- Streamed text goes into buffer lines of at most this many bytes. Neovim's cost for an
-- edit, the cursor and the redraw of a wrapped line grows with the line (a 600 KB line:
-- ~40 ms a frame, bench/stream.py --workload longline), so a reply that is one long line
-- is shown in pieces and a frame costs the same however long it gets.
M.MAX_LINE_BYTES = 4096

--- `lines` (to be appended at byte `col` of a row) with every line longer than
--- MAX_LINE_BYTES cut into pieces, on UTF-8 character boundaries.
function M.cut_long(lines, col)
  local max = M.MAX_LINE_BYTES
  local out = {}
  local room = math.max(max - col, 0)
  for i, line in ipairs(lines) do
    if i > 1 then
      room = max
    end
    local from = 1
    while #line - from + 1 > room do
      local to = from + math.max(room, 0) -- the first byte of the next piece
      while to > from and to <= #line and string.byte(line, to) >= 0x80 and string.byte(line, to) < 0xC0 do
        to = to - 1
      end
      if to == from and room >= 4 then
        to = from + room -- not UTF-8: cut anyway
      end
      table.insert(out, line:sub(from, to - 1))
      from = to
      room = max
    end
    table.insert(out, from == 1 and line or line:sub(from))
  end
  return out
end

local function op_block(state, id, kind, lines)
  local count_before = #lines
  lines = M.cut_long(text.map(lines), 0)
  if #lines > count_before then
    view.long_lines(state)
  end
  local count = api.nvim_buf_line_count(state.buf)
  local start = count
  if count == 1 and api.nvim_buf_get_lines(state.buf, 0, 1, false)[1] == '' and #state.order == 0 then
    api.nvim_buf_set_lines(state.buf, 0, 1, false, lines)
    start = 0
  else
    api.nvim_buf_set_lines(state.buf, count, count, false, lines)
  end
  local previous = state.order[#state.order]
  add_block(state, id, kind, start, #lines)
  if previous and state.kinds[previous] == 'thought' then
    state.fold_pending = state.fold_pending or {}
    table.insert(state.fold_pending, previous)
  end
end

local function op_text(state, id, chunk)
  local start, stop = block_range(state, id)
  if not start then
    return
  end
  local row = math.max(stop - 1, start)
  -- The line's length from byte offsets: reading the line would cost its length per
  -- frame (a reply that is one long line).
  local col = api.nvim_buf_get_offset(state.buf, row + 1) - api.nvim_buf_get_offset(state.buf, row) - 1
  local lines = text.lines(chunk)
  local count = #lines
  if col + #chunk > M.MAX_LINE_BYTES then
    lines = M.cut_long(lines, col)
  end
  if #lines > count then -- a line was cut (not merely a big frame of short lines)
    view.long_lines(state)
  end
  api.nvim_buf_set_text(state.buf, row, col, row, col, lines)
end

local function op_replace(state, id, lines)
  lines = text.map(lines)
  if state.expanded and state.expanded[id] and #lines > 0 then
    local meta = state.meta and state.meta[id]
    vim.list_extend(lines, text.map(meta and meta.details or {}))
  end
  local start, stop = block_range(state, id)
  if not start then
    return
  end
  if #lines == 0 then -- the block goes away (e.g. "waiting for permission" once answered)
    api.nvim_buf_set_lines(state.buf, start, stop, false, {})
    api.nvim_buf_del_extmark(state.buf, ns, state.blocks[id])
    state.blocks[id], state.kinds[id] = nil, nil
    table.remove(state.order, state.index[id])
    state.index = {}
    for i, other in ipairs(state.order) do
      state.index[other] = i
    end
    return
  end
  api.nvim_buf_set_lines(state.buf, start, stop, false, lines)
  api.nvim_buf_clear_namespace(state.buf, hl_ns, start, start + #lines)
  state.blocks[id] = api.nvim_buf_set_extmark(state.buf, ns, start, 0, { id = state.blocks[id] })
  highlight(state, state.kinds[id], start, #lines)
end

--- Run a frame's ops; `state.appended_only` says whether they only added text at the
--- transcript's end (the rows above kept their heights: see view.wait_tail).
local function run_ops(state, ops)
  state.appended_only = true
  for _, op in ipairs(ops) do
    local kind = op[1]
    if kind == 'text' then
      if op[2] ~= state.order[#state.order] then
        state.appended_only = false -- a block above the last one grows
      end
      op_text(state, op[2], op[3])
    elseif kind == 'block' then
      op_block(state, op[2], op[3], op[4])
    elseif kind == 'replace' then
      state.appended_only = false
      op_replace(state, op[2], op[3])
    elseif kind == 'reset' then
      state.appended_only = false
      op_reset(state, op[2], op[3], op[4])
    elseif kind == 'meta' then
      state.meta = state.meta or {}
      state.meta[op[2]] = op[3]
    end
  end
end

--- One frame's ops for one chat. The transcript is read-only again afterwards even when
--- an op fails (the error goes on to the applier, which reports it).
function M.apply_ops(key, ops)
  local state = chat.chats[key]
  if state == nil or not api.nvim_buf_is_valid(state.buf) then
    return
  end
  local buf = state.buf
  local wins = chat.windows_of(buf) -- once per frame: no op opens or closes a window
  local follow = view.on_tail(buf, wins, state)
  api.nvim_set_option_value('modifiable', true, { buf = buf })
  local ok, err = pcall(run_ops, state, ops)
  if not ok then
    state.appended_only = false
  end
  api.nvim_set_option_value('modifiable', false, { buf = buf })
  if not ok then
    error(err, 0)
  end
  M.empty_hint(state)
  view.lift_wait(state, follow)
  view.follow(state, follow)
  M.markdown_finish(state)
  view.after_frame(state, follow, ops, wins)
end

--- A block's first row and the row after its last (0-based), or nil once it is gone.
M.block_range = block_range

--- Finished messages that were drawn are handed over to treesitter (after the frame).
function M.markdown_finish(state)
  if lifecycle.busy(state) then
    return -- not while a turn works (markdown.finish); the turn's end hands them over
  end
  if chat.options().markdown ~= false then
    require('louise.chat.markdown').finish(state, block_range, false)
  end
end

-- ------------------------------------------------------------------ tool details

--- The block under the cursor (by extmark rows).
function M.block_at(state, row)
  local found = nil
  for _, id in ipairs(state.order) do
    local mark = state.blocks[id]
    local start = mark and api.nvim_buf_get_extmark_by_id(state.buf, ns, mark, {})[1]
    if start and start <= row then
      found = id
    elseif start and start > row then
      break
    end
  end
  return found
end

--- za on a tool line: show or hide its details (title, locations, raw input and
--- output, content and diffs), kept expanded across its later updates.
function M.toggle_details(state)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local id = M.block_at(state, row)
  if not id or state.kinds[id] ~= 'tool' then
    return
  end
  state.expanded = state.expanded or {}
  state.expanded[id] = not state.expanded[id]
  local start = block_range(state, id)
  local first = api.nvim_buf_get_lines(state.buf, start, start + 1, false)
  vim.bo[state.buf].modifiable = true
  local ok, err = pcall(op_replace, state, id, first)
  vim.bo[state.buf].modifiable = false
  if not ok then
    error(err, 0)
  end
  pcall(api.nvim_win_set_cursor, 0, { start + 1, 0 })
end

return M
