-- Tab labels in words while louise has a tab of its own (the diff tab of a permission
-- request): `louise: edit README.md`, and a chat's tab `louise: demo 1`, where Neovim's
-- default would read `3+ l//d/1/prompt`. Installed only where 'tabline' is Neovim's
-- default (empty), and given back once louise's last tab closes; other tabs are labelled
-- as Neovim labels them (windows, `+`, the shortened name).
local M = { installed = false }

local api = vim.api

M.VALUE = "%!v:lua.require'louise.tabline'.render()"

--- The chat a buffer belongs to (its transcript or its prompt), if any.
local function chat_of(buf)
  local chat = package.loaded['louise.chat']
  for _, state in pairs(chat and chat.chats or {}) do
    if state.buf == buf or state.prompt == buf then
      return state
    end
  end
  return nil
end

--- A tab's label.
function M.label(tab)
  local ok, own = pcall(function()
    return vim.t[tab].louise_label
  end)
  if ok and type(own) == 'string' and own ~= '' then
    return own
  end
  local win = api.nvim_tabpage_get_win(tab)
  local buf = api.nvim_win_get_buf(win)
  local state = chat_of(buf)
  if state then
    local title = state.status and state.status.title
    local name = (type(title) == 'string' and title ~= '') and title
      or ('%s %s'):format(state.agent, state.n)
    return 'louise: ' .. name
  end
  local wins = #api.nvim_tabpage_list_wins(tab)
  local modified = false
  for _, w in ipairs(api.nvim_tabpage_list_wins(tab)) do
    if vim.bo[api.nvim_win_get_buf(w)].modified then
      modified = true
    end
  end
  local prefix = (wins > 1 and tostring(wins) or '') .. (modified and '+' or '')
  local name = api.nvim_buf_get_name(buf)
  name = name == '' and '[No Name]' or vim.fn.pathshorten(vim.fn.fnamemodify(name, ':~:.'))
  return (prefix ~= '' and (prefix .. ' ') or '') .. name
end

--- The 'tabline' (Neovim's default look: TabLineSel, TabLine, TabLineFill, clickable).
function M.render()
  local out = {}
  local current = api.nvim_get_current_tabpage()
  for i, tab in ipairs(api.nvim_list_tabpages()) do
    local label = require('louise.text').line(M.label(tab)):gsub('%%', '%%%%')
    out[#out + 1] = (tab == current and '%#TabLineSel#' or '%#TabLine#') .. ('%%%dT '):format(i)
      .. label .. ' '
  end
  return table.concat(out) .. '%#TabLineFill#%T'
end

local function louise_tabs()
  for _, tab in ipairs(api.nvim_list_tabpages()) do
    local ok, own = pcall(function()
      return vim.t[tab].louise_label
    end)
    if ok and own then
      return true
    end
  end
  return false
end

--- Label tabs in words while a tab of louise's is open (never over a 'tabline' of the
--- person's own).
function M.install()
  if M.installed or vim.o.tabline ~= '' then
    return
  end
  vim.o.tabline = M.VALUE
  M.installed = true
  api.nvim_create_autocmd('TabClosed', {
    group = api.nvim_create_augroup('louise_tabline', { clear = true }),
    callback = function()
      if louise_tabs() then
        return -- still one open: keep watching
      end
      if vim.o.tabline == M.VALUE then
        vim.o.tabline = ''
      end
      M.installed = false
      return true -- done: the autocommand goes
    end,
  })
end

return M
