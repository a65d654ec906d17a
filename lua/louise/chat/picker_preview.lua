-- A picker with a transcript preview where telescope, fzf-lua or snacks is installed
-- (each found with pcall(require, …): none is a dependency), else vim.ui.select (so
-- dressing, telescope-ui-select, fzf-lua's or snacks' ui_select show it their way).
--
-- select(items, { prompt, format_item, preview = function(item) -> lines }, on_choice):
-- on_choice(item) once with the pick, or with nil when dismissed.
local M = {}

local api = vim.api

--- Which integration a select goes through: setup{ picker = 'telescope' | 'fzf-lua' |
--- 'snacks' | 'select' }, else the first installed, else vim.ui.select.
function M.backend()
  local wanted = (require('louise').options or {}).picker
  local order = { 'telescope', 'fzf-lua', 'snacks' }
  if wanted == 'select' then
    return 'select'
  elseif type(wanted) == 'string' and wanted ~= 'auto' then
    order = { wanted }
  end
  for _, name in ipairs(order) do
    local module = name == 'telescope' and 'telescope.pickers' or name
    local ok, found = pcall(require, module)
    if ok and found and (name ~= 'snacks' or (type(found) == 'table' and found.picker)) then
      return name
    end
  end
  return 'select'
end

local function preview_lines(opts, item)
  local ok, lines = pcall(opts.preview, item)
  return ok and type(lines) == 'table' and lines or {}
end

local function telescope(items, opts, on_choice)
  local pickers = require('telescope.pickers')
  local finders = require('telescope.finders')
  local previewers = require('telescope.previewers')
  local actions = require('telescope.actions')
  local action_state = require('telescope.actions.state')
  local conf = require('telescope.config').values
  local chosen = false
  pickers.new({}, {
    prompt_title = opts.prompt,
    finder = finders.new_table({
      results = items,
      entry_maker = function(item)
        local shown = opts.format_item(item)
        return { value = item, display = shown, ordinal = shown }
      end,
    }),
    sorter = conf.generic_sorter({}),
    previewer = previewers.new_buffer_previewer({
      title = 'transcript',
      define_preview = function(self, entry)
        api.nvim_buf_set_lines(self.state.bufnr, 0, -1, false, preview_lines(opts, entry.value))
      end,
    }),
    attach_mappings = function(prompt_bufnr)
      actions.select_default:replace(function()
        local entry = action_state.get_selected_entry()
        chosen = true
        actions.close(prompt_bufnr)
        on_choice(entry and entry.value or nil)
      end)
      actions.close:enhance({
        post = function()
          if not chosen then
            chosen = true
            on_choice(nil)
          end
        end,
      })
      return true
    end,
  }):find()
end

local function fzf_lua(items, opts, on_choice)
  local fzf = require('fzf-lua')
  local by_row, rows = {}, {}
  for i, item in ipairs(items) do
    local row = ('%d\t%s'):format(i, opts.format_item(item))
    rows[i], by_row[i] = row, item
  end
  local function item_of(selected)
    local index = selected and selected[1] and tonumber(selected[1]:match('^(%d+)\t'))
    return index and by_row[index] or nil
  end
  fzf.fzf_exec(rows, {
    prompt = opts.prompt .. '> ',
    fzf_opts = { ['--delimiter'] = '\t', ['--with-nth'] = '2..' },
    previewer = false,
    -- fzf runs the preview as a command; raw_action calls back into Neovim for its text.
    preview = fzf.shell and fzf.shell.raw_action and fzf.shell.raw_action(function(selected)
      return preview_lines(opts, item_of(selected))
    end) or nil,
    actions = {
      default = function(selected)
        on_choice(item_of(selected))
      end,
    },
  })
end

local function snacks(items, opts, on_choice)
  local entries = {}
  for i, item in ipairs(items) do
    local shown = opts.format_item(item)
    entries[i] = { idx = i, text = shown, item = item,
      preview = { text = table.concat(preview_lines(opts, item), '\n'), ft = 'markdown' } }
  end
  local chosen = false
  require('snacks').picker.pick({
    title = opts.prompt,
    items = entries,
    format = 'text',
    preview = 'preview',
    confirm = function(picker, entry)
      chosen = true
      picker:close()
      on_choice(entry and entry.item or nil)
    end,
    on_close = function()
      if not chosen then
        chosen = true
        on_choice(nil)
      end
    end,
  })
end

local BACKENDS = { telescope = telescope, ['fzf-lua'] = fzf_lua, snacks = snacks }

function M.select(items, opts, on_choice)
  local backend = opts.preview and BACKENDS[M.backend()] or nil
  if backend then
    local ok, err = pcall(backend, items, opts, on_choice)
    if ok then
      return
    end
    -- An integration that changed its API: the plain picker still works.
    require('louise.notice').notify('louise: the picker integration failed (' .. tostring(err)
      .. '); using vim.ui.select', vim.log.levels.WARN)
  end
  require('louise.chat.picker_text').select(items, { prompt = opts.prompt, format_item = opts.format_item,
    kind = opts.kind }, on_choice)
end

--- The tail of a chat's transcript (at most `max` lines), for a preview.
function M.transcript_tail(key, max)
  local state = require('louise.chat').chats[key]
  if not state or not state.buf or not api.nvim_buf_is_valid(state.buf) then
    return {}
  end
  local count = api.nvim_buf_line_count(state.buf)
  return api.nvim_buf_get_lines(state.buf, math.max(0, count - (max or 200)), count, false)
end

return M
