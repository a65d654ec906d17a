-- A blink.cmp source for louise's prompt: the agent's /commands with their descriptions,
-- and @paths. In blink.cmp's setup (see :h louise-completion):
--   sources = { per_filetype = { louise_prompt = { 'louise' } },
--               providers = { louise = { name = 'louise', module = 'louise.blink' } } }
local source = {}

function source.new(opts)
  return setmetatable({ opts = opts or {} }, { __index = source })
end

function source:enabled()
  return vim.bo.filetype == 'louise_prompt'
end

function source:get_trigger_characters()
  return { '/', '@' }
end

function source:get_completions(_, callback)
  callback({
    items = require('louise.chat.complete').lsp_items(),
    is_incomplete_forward = false,
    is_incomplete_backward = false,
  })
  return function() end
end

return source
