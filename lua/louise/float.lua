-- A centered read-only float that keeps its buffer and window between updates
-- (the permission prompt and the :LouiseLimits view).
local M = {}
local api = vim.api
local text = require('louise.text')

--- Show `lines` (agent strings welcome: louise.text splits and cleans them) in
--- `holder.buf` / `holder.win` (created as needed); returns the window. opts: title (or a
--- function of the float's width that returns one fitted to it),
--- filetype, name (of the buffer), footer, min_width, max_height, height (the rows the
--- lines take, when they wrap), enter (focus the float; a new
--- float is always entered unless enter == false).
function M.show(holder, lines, opts)
  if not (holder.buf and api.nvim_buf_is_valid(holder.buf)) then
    holder.buf = api.nvim_create_buf(false, true)
    vim.bo[holder.buf].bufhidden = 'hide'
    if opts.name then
      pcall(api.nvim_buf_set_name, holder.buf, opts.name)
    end
    vim.bo[holder.buf].filetype = opts.filetype or ''
  end
  lines = text.list(lines)
  text.write(holder.buf, 0, -1, lines)
  local width = opts.min_width or 20
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line) + 2)
  end
  width = math.min(width, math.max(vim.o.columns - 4, 20))
  local height = opts.height or math.min(#lines, opts.max_height or math.max(vim.o.lines - 4, 3))
  local config = {
    relative = 'editor',
    width = width,
    height = height,
    row = math.floor((vim.o.lines - height) / 2),
    col = math.floor((vim.o.columns - width) / 2),
    style = 'minimal',
    border = 'rounded',
    title = text.line(type(opts.title) == 'function' and opts.title(width) or opts.title),
    title_pos = 'center',
  }
  if opts.footer then -- keys that stay in sight however long the text
    config.footer = text.line(opts.footer)
    config.footer_pos = 'center'
  end
  if holder.win and api.nvim_win_is_valid(holder.win) then
    api.nvim_win_set_config(holder.win, config)
    if opts.enter then
      api.nvim_set_current_win(holder.win)
    end
  else
    holder.win = api.nvim_open_win(holder.buf, opts.enter ~= false, config)
  end
  return holder.win
end

return M
