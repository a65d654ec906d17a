-- A chat on screen at once while its agent starts (seconds, for an agent run by npx): the
-- layout opens with a "… starting claude · 3s" placeholder whose counter ticks, and its
-- prompt takes what the person types meanwhile. A prompt sent (<CR>) then waits and goes to
-- the agent as soon as its session is ready. When the engine opens the session, the
-- placeholder becomes the chat itself: the same buffers and windows, so the cursor, the
-- mode and the typed text stay where they are, and a person who went elsewhere meanwhile
-- is not pulled back. When no session comes of it (a picker, a chat already open, an
-- error), the engine drops it like a closed chat (key "starting:<id>"). A placeholder is
-- not one of `chat.chats` nor ever `chat.last`: what reads those sees real sessions only.
local chat = require('louise.chat')

local M = { by_id = {} }

local api = vim.api
local uv = vim.uv or vim.loop
local TICK_MS = 1000
local counter = 0

M.PREFIX = 'starting:'

local function lines_of(state)
  local seconds = math.floor((uv.now() - state.starting_since) / 1000)
  local name = state.agent_label
  local signing_in = require('louise.chat.winbar').signing_in[state.agent]
  local out = { (signing_in and '… waiting for sign-in to %s · %ds (:LouiseSignIn)'
    or '… starting %s · %ds'):format(name, seconds), '' }
  if state.waiting_prompt then
    table.insert(out, ('Your prompt is sent as soon as %s is ready.'):format(name))
  else
    table.insert(out, ('Type your prompt below: <CR> sends it once %s is ready.'):format(name))
  end
  return out
end

local function draw(state)
  if state.pending and api.nvim_buf_is_valid(state.buf) then
    require('louise.text').write(state.buf, 0, -1, lines_of(state))
    chat.refresh_winbar(state)
    return true
  end
  return false
end

--- Every placeholder drawn again now (a sign-in began or ended).
function M.redraw_all()
  for _, state in pairs(M.by_id) do
    draw(state)
  end
end

--- The placeholder of a key "starting:<id>" (nil for any other key).
function M.placeholder(key)
  local id = type(key) == 'string' and key:match('^' .. M.PREFIX .. '(%d+)$')
  return id and M.by_id[tonumber(id)] or nil
end

local function stop(state)
  if state.timer then
    state.timer:stop()
    state.timer:close()
    state.timer = nil
  end
end

--- What :LouiseChat [agent] should do here: 'placeholder' when it starts a session (then
--- also the agent, when known), 'plain' when the engine opens a chat already there or asks
--- which agent, 'skip' when that agent is starting already (its placeholder is focused).
function M.wanted(agent)
  local function focus(state)
    require('louise.chat.layout').open(state.key, state.agent, true)
    return 'skip'
  end
  for _, state in pairs(M.by_id) do
    if agent == nil or state.agent_label == agent then
      return focus(state) -- already starting
    end
  end
  -- A chat already here is focused at once too (the engine's answer confirms it), so
  -- keys typed right after the command land in its prompt.
  local function now(state)
    require('louise.chat.layout').open(state.key, state.agent, true)
    return 'plain'
  end
  if agent == nil then
    local last = chat.last and chat.chats[chat.last]
    if last and api.nvim_buf_is_valid(last.buf) then
      return now(last)
    end
    local options = chat.options()
    agent = type(options.default_agent) == 'string' and options.default_agent or nil
    if agent == nil then
      local names = {}
      for name, _ in pairs(type(options.agents) == 'table' and options.agents or {}) do
        if name ~= 'demo' then
          table.insert(names, name)
        end
      end
      if #names > 1 then
        return 'plain' -- the engine shows the agent picker
      end
      agent = names[1]
    end
  end
  local mine = nil -- the agent's chat used last, else its newest
  for _, state in pairs(chat.chats) do
    if state.agent == agent and api.nvim_buf_is_valid(state.buf) then
      if state.key == chat.last or not mine or (mine.key ~= chat.last and state.n > mine.n) then
        mine = state
      end
    end
  end
  if mine then
    return now(mine)
  end
  return 'placeholder', agent
end

--- Open a placeholder chat for `agent` (nil: the default agent, not known here yet) and
--- focus its prompt; returns its id, for the engine to name in its answer.
function M.begin(agent)
  counter = counter + 1
  local id = counter
  local key = M.PREFIX .. id
  local state = chat.create(key, agent or 'louise')
  chat.chats[key] = nil -- not a session (yet): see the top
  state.pending = id
  state.agent_label = agent or 'the agent'
  state.starting_since = uv.now()
  state.status = { status = 'starting', agent = agent or vim.NIL }
  M.by_id[id] = state
  draw(state)
  require('louise.chat.layout').open(key, agent, true)
  state.timer = uv.new_timer()
  state.timer:start(TICK_MS, TICK_MS, vim.schedule_wrap(function()
    if not draw(state) then
      stop(state)
      M.by_id[id] = nil
    end
  end))
  return id
end

--- The engine dropped the placeholder `key` (no session came of it): its buffers go, and
--- the windows showing only them.
function M.drop(key)
  local state = M.placeholder(key)
  if not state then
    return
  end
  M.by_id[state.pending] = nil
  stop(state)
  require('louise.chat.lifecycle').wipe(state)
end

--- <CR> in a placeholder's prompt: the text waits for the session (the prompt empties, as
--- for a prompt sent).
function M.hold(state)
  local lines = api.nvim_buf_get_lines(state.prompt, 0, -1, false)
  local prompt = vim.trim(table.concat(lines, '\n'))
  if prompt == '' then
    return
  end
  state.waiting_prompt = state.waiting_prompt and (state.waiting_prompt .. '\n\n' .. prompt)
    or prompt
  api.nvim_buf_set_lines(state.prompt, 0, -1, false, {})
  vim.bo[state.prompt].modified = false
  if api.nvim_get_current_buf() == state.prompt and api.nvim_get_mode().mode:sub(1, 1) == 'i'
      and not chat.options().send_on_enter then
    vim.cmd('stopinsert')
  end
  draw(state)
end

--- The engine opened the session the placeholder `id` stood for: the placeholder becomes
--- its chat (same buffers, windows and typed text). Returns the state, or nil when the
--- placeholder is gone (the person wiped it).
function M.adopt(id, key, agent)
  local state = M.by_id[id]
  M.by_id[id] = nil
  if not state then
    return nil
  end
  stop(state)
  if not (api.nvim_buf_is_valid(state.buf) and api.nvim_buf_is_valid(state.prompt)) then
    return nil
  end
  -- Which chat is the last one once this one is ready (`settle_last`), taken before its
  -- windows are touched: showing it enters it, whoever was where.
  state.hand_over = { placeholder = state.key, entered = chat.entered }
  state.key, state.agent, state.pending, state.status = key, agent, nil, {}
  chat.chats[key] = state
  if state.agent_label ~= agent then -- the buffers carry the agent's name
    for buf, name in pairs({ [state.buf] = ('louise://%s/%d'):format(agent, state.n),
      [state.prompt] = ('louise://%s/%d/prompt'):format(agent, state.n) }) do
      local old = api.nvim_buf_get_name(buf)
      if pcall(api.nvim_buf_set_name, buf, name) then
        local alternate = vim.fn.bufnr('^' .. vim.fn.escape(old, '\\/.*$^~[]') .. '$')
        if alternate > 0 and alternate ~= buf and not chat.by_buf[alternate] then
          pcall(api.nvim_buf_delete, alternate, { force = true }) -- the old name's shadow
        end
      end
    end
  end
  require('louise.text').write(state.buf, 0, -1, {}) -- the session's content comes next
  return state
end

--- After adopt and its windows: which chat is `chat.last` (:LouisePrompt's, :LouiseChat's
--- without an agent, the statusline's). The chat that just became ready is the last chat
--- the person opened, so :LouiseChat and waiting always leaves it the last one, wherever
--- the cursor is (in it, in a file, in another tab) — unless the person went into another
--- chat since the placeholder opened: then that one stays the last. Another placeholder
--- opened since does not count (it is no chat yet: it becomes the last when it is ready).
function M.settle_last(state)
  local hand_over = state.hand_over
  state.hand_over = nil
  if not hand_over then
    return
  end
  local since = hand_over.entered
  if since == hand_over.placeholder then
    since = state.key
  end
  chat.entered = since
  chat.last = since and chat.chats[since] and since or state.key
end

--- After adopt: the prompt the person sent while the agent started goes now.
function M.send_waiting(state)
  local prompt = state.waiting_prompt
  if not prompt then
    return
  end
  state.waiting_prompt = nil
  local engine = require('louise.engine')
  local mentioned = require('louise.chat.attach').mentions(prompt, state.context, nil)
  if #mentioned > 0 then
    engine.send('prompt_with', { key = state.key, text = prompt, context = mentioned })
  else
    engine.send('prompt', { key = state.key, text = prompt })
  end
end

return M
