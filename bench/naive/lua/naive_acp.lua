-- The naive baseline of bench/stream.py: an ACP client written in Lua alone, the way a
-- small plugin would do it. It starts the agent with jobstart, decodes each NDJSON line
-- with vim.json.decode, and appends every streamed chunk with one nvim_buf_set_text
-- (then moves the cursor of its window to the end of the last line so the window
-- follows the tail). The focus stays in the window the person was in.
-- No batching, no highlighting unless asked (`markdown = true` starts treesitter).
local M = { buf = nil, win = nil, job = nil, session = nil, ids = 0, waiting = {}, chunks = 0 }

local api = vim.api

local function send(method, params, on_result)
  M.ids = M.ids + 1
  M.waiting[M.ids] = on_result
  vim.fn.chansend(M.job, vim.json.encode({ jsonrpc = '2.0', id = M.ids, method = method,
    params = params }) .. '\n')
end

local function append(chunk)
  local buf = M.buf
  local last = api.nvim_buf_line_count(buf) - 1
  -- The end of the last line from byte offsets (reading the line would make a reply that
  -- is one long line quadratic, which no baseline should be).
  local col = api.nvim_buf_get_offset(buf, last + 1) - api.nvim_buf_get_offset(buf, last) - 1
  api.nvim_buf_set_text(buf, last, col, last, col, vim.split(chunk, '\n', { plain = true }))
  M.chunks = M.chunks + 1
  if M.win and api.nvim_win_is_valid(M.win) then
    local n = api.nvim_buf_line_count(buf)
    local len = api.nvim_buf_get_offset(buf, n) - api.nvim_buf_get_offset(buf, n - 1) - 1
    api.nvim_win_set_cursor(M.win, { n, math.max(len, 0) })
  end
end

local function on_message(msg)
  if msg.method == 'session/update' then
    local update = msg.params and msg.params.update
    if update and update.sessionUpdate == 'agent_message_chunk' and update.content
        and update.content.type == 'text' then
      append(update.content.text)
    end
  elseif msg.id and (msg.result ~= nil or msg.error ~= nil) then
    local done = M.waiting[msg.id]
    M.waiting[msg.id] = nil
    if done then
      done(msg.result, msg.error)
    end
  elseif msg.id and msg.method then -- a request of the agent: not supported here
    vim.fn.chansend(M.job, vim.json.encode({ jsonrpc = '2.0', id = msg.id,
      error = { code = -32601, message = 'not supported' } }) .. '\n')
  end
end

local partial = ''
local function on_stdout(_, data)
  -- data: lines split at \n; the first continues the last partial line, the last is
  -- partial (or '' after a newline).
  data[1] = partial .. data[1]
  partial = table.remove(data)
  for _, line in ipairs(data) do
    if line ~= '' then
      local ok, msg = pcall(vim.json.decode, line, { luanil = { object = true, array = true } })
      if ok and type(msg) == 'table' then
        on_message(msg)
      end
    end
  end
end

--- Open the chat window (a vertical split of `width` columns on the right) and start the
--- agent; `ready` becomes true once its session exists.
function M.start(cmd, opts)
  opts = opts or {}
  M.buf = api.nvim_create_buf(false, true)
  vim.cmd('botright vsplit')
  M.win = api.nvim_get_current_win()
  api.nvim_win_set_buf(M.win, M.buf)
  api.nvim_win_set_width(M.win, opts.width or 48)
  vim.wo[M.win].wrap = true
  if opts.markdown then
    vim.treesitter.start(M.buf, 'markdown')
  end
  -- The focus back where it was, as louise leaves it (in its prompt window, not in the
  -- chat): a chat window with the cursor in it runs CursorMoved (matchparen) per chunk.
  vim.cmd('wincmd p')
  M.job = vim.fn.jobstart(cmd, { on_stdout = on_stdout })
  send('initialize', { protocolVersion = 1, clientCapabilities = {} }, function()
    send('session/new', { cwd = vim.fn.getcwd(), mcpServers = {} }, function(result)
      M.session = result and result.sessionId
      M.ready = M.session ~= nil
    end)
  end)
end

--- Send a prompt; `M.status` is 'prompting' until the agent answers it, then 'ready'.
function M.prompt(text)
  M.status = 'prompting'
  send('session/prompt', { sessionId = M.session, prompt = { { type = 'text', text = text } } },
    function()
      M.status = 'ready'
    end)
end

return M
