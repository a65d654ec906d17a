-- louise through Neovim's classic Python remote-plugin host (:UpdateRemotePlugins).
vim.g.python3_host_prog = vim.env.LOUISE_PYTHON
vim.g.loaded_python3_provider = nil
vim.opt.rtp:prepend(vim.env.LOUISE_PLUGIN_ROOT)
vim.opt.swapfile = false
vim.cmd('runtime plugin/louise.lua')
require('louise').setup({ host = 'rplugin' })
