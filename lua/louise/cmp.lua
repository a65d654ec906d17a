-- An nvim-cmp source for louise's prompt: the agent's /commands with their descriptions,
-- and @paths. louise registers it as 'louise' when nvim-cmp is there; add
-- { name = 'louise' } to your sources (see :h louise-completion).
local source = {}

function source.new()
  return setmetatable({}, { __index = source })
end

function source:is_available()
  return vim.bo.filetype == 'louise_prompt'
end

function source:get_debug_name()
  return 'louise'
end

function source:get_trigger_characters()
  return { '/', '@' }
end

function source:get_keyword_pattern()
  return [[\%([/@]\S*\)]]
end

function source:complete(_, callback)
  callback({ items = require('louise.chat.complete').lsp_items(), isIncomplete = false })
end

--- Register the source with nvim-cmp once, if nvim-cmp is installed.
function source.register()
  if source.registered then
    return
  end
  local ok, cmp = pcall(require, 'cmp')
  if ok and type(cmp) == 'table' and cmp.register_source then
    cmp.register_source('louise', source.new())
    source.registered = true
  end
end

return source
