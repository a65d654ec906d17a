-- The diff tab of a permission request (`d` in the float): every file of the request side
-- by side, the file as it is now (unsaved edits included) against the proposed one; ]f
-- and [f move between files, the option keys answer from here, `q` goes back to the float.
-- Its winbars are fitted to their windows (words dropped by importance, never cut
-- mid-path without saying so), and its tab reads `louise: edit README.md` (louise.tabline).
local M = {}

local api = vim.api
local text = require('louise.text')

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

--- A text as buffer lines: a final newline is not an extra empty line.
local function text_lines(value)
  local lines = vim.split(present(value) and value or '', '\n', { plain = true })
  if #lines > 0 and lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

local function scratch(lines, name, ft)
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  text.write(buf, 0, -1, lines)
  pcall(api.nvim_buf_set_name, buf, name)
  if ft and ft ~= '' then
    vim.bo[buf].filetype = ft
  end
  return buf
end

-- Side by side (Neovim's diff mode) up to this many (lines x changes); past it one
-- unified diff from vim.diff (xdiff: 30,000 lines with 4,000 changes in ~30 ms).
M.MAX_SIDE_BY_SIDE_COST = 2000000

--- An upper bound of (lines x changes) that needs no diff: every line could be a change.
function M.side_by_side_cost(old, new)
  return (#old + #new) * math.max(#old, #new)
end

-- ------------------------------------------------------------------ winbars

local SEPARATOR = ' · '

-- A last part of words is cut (`…`) rather than left out where this much room is left.
local MIN_CUT = 12

--- `line` cut to `width` columns, `…` saying so.
local function cut(line, width)
  while line ~= '' and vim.fn.strdisplaywidth(line) > width - 1 do
    line = vim.fn.strcharpart(line, 0, vim.fn.strchars(line) - 1)
  end
  return line .. '…'
end

--- `parts` ({ text, drop }: drop 0 never, else the higher the sooner) joined into at most
--- `width` columns: the parts that do not fit are left out, least important first (the
--- last one, words, cut instead where there is room for some of it); what still does not
--- fit is cut at the end.
function M.fit(parts, width)
  local kept = vim.deepcopy(parts)
  local function joined()
    return table.concat(vim.tbl_map(function(part)
      return part[1]
    end, kept), SEPARATOR)
  end
  local line = joined()
  while vim.fn.strdisplaywidth(line) > width do
    local worst, at = 0, nil
    for i, part in ipairs(kept) do
      if part[2] > worst then
        worst, at = part[2], i
      end
    end
    if not at then
      break
    end
    local last = table.remove(kept, at)
    line = joined()
    local room = width - vim.fn.strdisplaywidth(line) - #SEPARATOR
    if at == #kept + 1 and room >= MIN_CUT then
      return line .. SEPARATOR .. cut(last[1], room)
    end
  end
  if vim.fn.strdisplaywidth(line) > width then
    line = cut(line, width)
  end
  return line
end

--- The winbar of a diff window (`%!`: evaluated for each window as it is drawn, so it
--- follows the window's width).
function M.bar()
  local win = vim.g.statusline_winid or api.nvim_get_current_win()
  local ok, parts = pcall(function()
    return vim.w[win].louise_diff_bar
  end)
  if not ok or type(parts) ~= 'table' then
    return ''
  end
  local width = api.nvim_win_get_width(win) - 1 -- the leading space
  return '%#LouiseStatus# ' .. M.fit(parts, width):gsub('%%', '%%%%')
end

local BAR = "%!v:lua.require'louise.permission_diff'.bar()"

local function set_bar(win, parts)
  vim.w[win].louise_diff_bar = parts
  vim.wo[win].winbar = BAR
end

--- The tab's label: `louise: edit README.md`, or `louise: edit 3 files`.
local function tab_label(req)
  local kind = present(req.kind) and text.line(req.kind) or 'edit'
  if #req.diffs == 1 then
    return ('louise: %s %s'):format(kind, vim.fn.fnamemodify(req.diffs[1].path, ':t'))
  end
  return ('louise: %s %d files'):format(kind, #req.diffs)
end

-- ------------------------------------------------------------------ the tab

--- Open the diff tab of `req` (permission.current). `answer(option_id)` answers it;
--- `back()` closes the tab and shows the float again.
function M.open(req, answer, still_current, back)
  vim.cmd('tabnew')
  local tab = api.nvim_get_current_tabpage()
  vim.t[tab].louise_label = tab_label(req)
  require('louise.tabline').install()
  local index = 1
  local function show_file(i)
    local d = req.diffs[i]
    local ft = vim.filetype.match({ filename = d.path }) or ''
    -- The engine put the edit onto the file as it is now (the buffer, unsaved edits
    -- included, else the disk): whole files, or the agent's snippet and why.
    local old, new = text_lines(d.old), text_lines(d.new)
    local label = ''
    if d.mode == 'new' then
      label = ' (new file)'
    elseif d.mode == 'delete' then
      label = ' (deleted)'
    elseif d.whole == false then
      label = ' (snippet)'
    end
    vim.cmd('diffoff!')
    vim.cmd('silent! only')
    local short = text.line(vim.fn.fnamemodify(d.path, ':~:.')) -- relative to the cwd where it can be
    -- What the file is now and why only a snippet shows: words, the first to go.
    local now = {}
    if d.mode == 'new' then
      table.insert(now, { 'the file does not exist yet', 3 })
    elseif d.mode == 'delete' then
      table.insert(now, { 'to be deleted', 3 })
    end
    if present(d.note) then
      table.insert(now, { text.line(d.note), 4 })
    end
    -- The keys, the most needed last to go: moving between files beside the file's
    -- place, answering on the proposed side.
    local keys = { { ('1-%d answer'):format(#req.options), 0 }, { 'q back', 1 } }
    local where = { { ('%d/%d %s%s'):format(i, #req.diffs, short, label), 0 } }
    if #req.diffs > 1 then
      table.insert(where, { ']f [f', 1 })
    end
    local shown
    local old_text, new_text = table.concat(old, '\n') .. '\n', table.concat(new, '\n') .. '\n'
    local hunks = M.side_by_side_cost(old, new) > M.MAX_SIDE_BY_SIDE_COST
        and vim.diff(old_text, new_text, { result_type = 'indices' })
      or nil
    if hunks and (#old + #new) * #hunks > M.MAX_SIDE_BY_SIDE_COST then
      -- Neovim's diff mode costs about (lines x changes) to set up (30,000 lines with
      -- 4,000 changes: half a second, bench/diff_preview.py): one unified diff instead.
      local unified = vim.diff(old_text, new_text, { result_type = 'unified', ctxlen = 3 })
      local lines = vim.split(unified, '\n', { plain = true })
      if lines[#lines] == '' then
        table.remove(lines)
      end
      local whole = scratch(lines, ('louise-diff://%d/%s%s'):format(i, short, label), 'diff')
      api.nvim_win_set_buf(0, whole)
      local parts = { where[1], { ('%d changes in %d lines, as one unified diff'):format(#hunks,
        math.max(#old, #new)), 0 } }
      vim.list_extend(parts, keys)
      vim.list_extend(parts, vim.list_slice(where, 2))
      set_bar(api.nvim_get_current_win(), vim.list_extend(parts, now))
      shown = { whole }
    else
      local left = scratch(old, ('louise-current://%d/%s'):format(i, short), ft)
      api.nvim_win_set_buf(0, left)
      vim.cmd('diffthis')
      set_bar(api.nvim_get_current_win(), vim.list_extend(vim.list_extend({ { 'current', 2 } }, where), now))
      vim.cmd('vertical rightbelow split')
      local right = scratch(new, ('louise-proposed://%d/%s%s'):format(i, short, label), ft)
      api.nvim_win_set_buf(0, right)
      vim.cmd('diffthis')
      set_bar(api.nvim_get_current_win(), vim.list_extend({ { 'proposed', 0 } }, keys))
      shown = { left, right }
    end

    for _, buf in ipairs(shown) do
      local function map(lhs, fn)
        vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, silent = true })
      end
      for n = 1, 9 do
        map(tostring(n), function()
          if req.options[n] and still_current() then
            pcall(vim.cmd, 'tabclose')
            answer(req.options[n].id)
          end
        end)
      end
      map(']f', function()
        index = index % #req.diffs + 1
        show_file(index)
      end)
      map('[f', function()
        index = (index - 2) % #req.diffs + 1
        show_file(index)
      end)
      map('q', function()
        if api.nvim_tabpage_is_valid(tab) then
          pcall(vim.cmd, 'tabclose')
        end
        back()
      end)
    end
  end
  show_file(index)
end

return M
