-- Highlight groups, linked to diagnostic/comment groups so any colorscheme works.
local M = { done = false }

local LINKS = {
  LouiseLimitsOk = 'DiagnosticOk',
  LouiseLimitsActive = 'DiagnosticInfo',
  LouiseLimitsWarning = 'DiagnosticWarn',
  LouiseLimitsError = 'DiagnosticError',
  LouiseLimitsNeutral = 'Comment',
  LouiseUser = 'Title',
  LouiseAgent = 'Identifier',
  LouiseThought = 'Comment',
  LouiseTool = 'Special',
  LouiseNotice = 'DiagnosticWarn',
  LouisePlan = 'Function',
  LouiseStatus = 'StatusLine',
  LouiseNeutral = 'Comment',
  LouisePermission = 'NormalFloat',
}

function M.setup()
  if M.done then
    return
  end
  M.done = true
  for group, target in pairs(LINKS) do
    vim.api.nvim_set_hl(0, group, { link = target, default = true })
  end
  pcall(vim.treesitter.language.register, 'markdown', 'louise')
  vim.api.nvim_create_autocmd('ColorScheme', {
    group = vim.api.nvim_create_augroup('louise_highlights', { clear = true }),
    callback = function()
      for group, target in pairs(LINKS) do
        vim.api.nvim_set_hl(0, group, { link = target, default = true })
      end
    end,
  })
end

return M
