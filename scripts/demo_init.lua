-- `python3 dev.py run`: a Neovim with only louise loaded, the demo agent as the default
-- Agent, and a chat open. Your own config and plugins are not loaded.
local root = vim.env.LOUISE_PLUGIN_ROOT
vim.opt.rtp:prepend(root)
vim.cmd('runtime plugin/louise.lua')
vim.opt.termguicolors = true
vim.opt.laststatus = 3
vim.opt.statusline = " %f %= %{%v:lua.require'louise'.statusline()%} "
require('louise').setup({ keymaps = true, send_on_enter = true })
vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    vim.cmd('LouiseChat')
    -- One short line: a longer message would wait for Enter and eat the first key typed.
    vim.api.nvim_echo({ { 'louise demo: type below (i), <CR> sends; try /help, /scenario edit', 'Comment' } }, false, {})
  end,
})
