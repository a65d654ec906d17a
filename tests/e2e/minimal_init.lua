-- Minimal init for the end-to-end tests: only louise on the runtimepath.
vim.opt.rtp:prepend(vim.env.LOUISE_PLUGIN_ROOT)
vim.opt.swapfile = false
vim.cmd('runtime plugin/louise.lua')
require('louise').setup({ python = vim.env.LOUISE_PYTHON })
