-- The prompt window: context chips queued for the next prompt (:LouiseAdd), sending the
-- prompt, cancelling the turn.
local chat = require('louise.chat')
local text = require('louise.text')

local M = {}

local api = vim.api

local function chip_label(chip)
  local name = vim.fn.fnamemodify(chip.path or '', ':t')
  if chip.kind == 'selection' then
    return ('%s:%d-%d'):format(name, chip.first, chip.last)
  elseif chip.kind == 'diagnostics' then
    return ('diagnostics %s (%d)'):format(name, chip.count or 0)
  end
  return ('%s %s'):format(chip.kind, name)
end

function M.refresh_prompt_bar(state)
  local bar = '%#LouiseNeutral# prompt · <CR> send · <C-c> cancel'
  if state.context and #state.context > 0 then
    local labels = {}
    for _, chip in ipairs(state.context) do
      table.insert(labels, '[' .. text.line(chip_label(chip)):gsub('%%', '%%%%') .. ']')
    end
    bar = '%#LouisePlan# context: ' .. table.concat(labels, ' ') .. ' %#LouiseNeutral#· <CR> send'
  end
  for _, win in ipairs(chat.windows_of(state.prompt)) do
    vim.wo[win].winbar = bar
  end
end

--- :LouiseAdd buffer|file|selection|diagnostics — queued until the next prompt.
function M.add(kind, range)
  local state = chat.chats[chat.last or ''] or nil
  if not state then
    vim.notify('louise: open a chat first (:LouiseChat)', vim.log.levels.WARN)
    return
  end
  local buf = api.nvim_get_current_buf()
  if chat.by_buf[buf] then
    vim.notify('louise: run :LouiseAdd from the buffer you want to add', vim.log.levels.WARN)
    return
  end
  local path = api.nvim_buf_get_name(buf)
  local chip = { kind = kind, path = path }
  if kind == 'buffer' then
    chip.text = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  elseif kind == 'file' then
    if path == '' then
      vim.notify('louise: this buffer has no file', vim.log.levels.WARN)
      return
    end
  elseif kind == 'selection' then
    local first, last = range and range[1] or vim.fn.line("'<"), range and range[2] or vim.fn.line("'>")
    chip.first, chip.last = first, last
    chip.text = table.concat(api.nvim_buf_get_lines(buf, first - 1, last, false), '\n')
  elseif kind == 'diagnostics' then
    local lines = {}
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      table.insert(lines, ('%d:%d %s: %s'):format(d.lnum + 1, d.col + 1,
        vim.diagnostic.severity[d.severity] or '?', d.message))
    end
    chip.text = table.concat(lines, '\n')
    chip.count = #lines
  else
    vim.notify('louise: :LouiseAdd buffer|file|selection|diagnostics', vim.log.levels.ERROR)
    return
  end
  state.context = state.context or {}
  table.insert(state.context, chip)
  M.refresh_prompt_bar(state)
  vim.notify('louise: added ' .. chip_label(chip) .. ' to the next prompt', vim.log.levels.INFO)
end

--- <CR> in the prompt: send what it holds (with the queued chips) and clear it.
function M.submit(key)
  local state = chat.chats[key]
  if not state then
    return
  end
  local lines = api.nvim_buf_get_lines(state.prompt, 0, -1, false)
  local prompt = vim.trim(table.concat(lines, '\n'))
  if prompt == '' then
    return
  end
  api.nvim_buf_set_lines(state.prompt, 0, -1, false, {})
  vim.bo[state.prompt].modified = false -- sent: nothing left to lose
  if api.nvim_get_mode().mode:sub(1, 1) == 'i' and not chat.options().send_on_enter then
    vim.cmd('stopinsert')
  end
  chat.scroll_to_end(state)
  if state.context and #state.context > 0 then
    local context = state.context
    state.context = {}
    M.refresh_prompt_bar(state)
    require('louise.engine').send('prompt_with', { key = key, text = prompt, context = context })
  else
    require('louise.engine').send('prompt', { key = key, text = prompt })
  end
end

function M.cancel(key)
  require('louise.engine').send('cancel', { key = key })
end

return M
