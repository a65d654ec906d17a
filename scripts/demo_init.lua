-- `python3 dev.py run`: a Neovim with only louise loaded, the demo agent as the default
-- Agent, and a chat open. Your own config and plugins are not loaded.
local root = vim.env.LOUISE_PLUGIN_ROOT
vim.opt.rtp:prepend(root)
vim.cmd('runtime plugin/louise.lua')
vim.opt.termguicolors = true
vim.opt.laststatus = 3
vim.opt.statusline = " %f %= %{%v:lua.require'louise'.statusline()%} "
require('louise').setup({ keymaps = true })
vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    vim.cmd('LouiseChat')
    vim.notify('louise demo: type in the prompt window, <CR> to send. Try /help, /scenario edit, '
      .. '/scenario multi_edit, /scenario execute. :LouiseLimits shows account limits.')
  end,
})
