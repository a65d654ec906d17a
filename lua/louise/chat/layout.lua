-- Chat windows: the transcript in a vertical split on the right with its prompt below;
-- a second chat takes the windows of the one on screen instead of adding splits.
local chat = require('louise.chat')

local M = {}

local api = vim.api


--- WinScrolled in a transcript window's 'eventignorewin' is louise's (the rest of the
--- value is the person's): Neovim restores a window's options with its buffer, so the
--- value is checked each time, not remembered.
local function quiet(win, on)
  local ok, value = pcall(api.nvim_get_option_value, 'eventignorewin', { win = win })
  if not ok then
    return -- Neovim 0.10 has no 'eventignorewin'
  end
  local events = vim.split(value, ',', { trimempty = true })
  local at = nil
  for i, event in ipairs(events) do
    at = event == 'WinScrolled' and i or at
  end
  if on ~= (at ~= nil) then
    if on then
      table.insert(events, 'WinScrolled')
    else
      table.remove(events, at)
    end
    api.nvim_set_option_value('eventignorewin', table.concat(events, ','), { win = win })
  end
  vim.w[win].louise_quiet_scroll = on or nil
end

--- While its turn works, a transcript scrolls on every frame (~80 times a second): its
--- windows ignore WinScrolled then, so no handler of it runs each time (stock matchparen
--- alone, redoing the current window that did not move, was ~17 % of Neovim's CPU while a
--- reply streamed: bench/stream.py). Idle, scrolling them fires it again (scrollbars).
function M.quiet_scroll(state)
  local on = chat.busy(state)
  for _, win in ipairs(chat.windows_of(state.buf)) do
    quiet(win, on)
  end
end

--- A window that no longer shows a transcript gets its WinScrolled back.
local function unquiet_others()
  for _, win in ipairs(api.nvim_list_wins()) do
    local buf = api.nvim_win_get_buf(win)
    local state = chat.by_buf[buf]
    if vim.w[win].louise_quiet_scroll and not (state and state.buf == buf) then
      quiet(win, false)
    end
  end
end

function M.autocmds(state)
  local group = api.nvim_create_augroup('louise_chat_' .. state.n, { clear = true })
  api.nvim_create_autocmd('BufWinEnter', {
    group = group,
    buffer = state.buf,
    callback = function()
      chat.enter(state)
      state.unseen = false
      if not state.attached then
        state.attached = true
        require('louise.engine').send('attach', { key = state.key })
      end
    end,
  })
  api.nvim_create_autocmd('BufWinLeave', {
    group = group,
    buffer = state.buf,
    callback = function()
      vim.schedule(unquiet_others) -- the window shows its next buffer by then
    end,
  })
  api.nvim_create_autocmd('BufHidden', {
    group = group,
    buffer = state.buf,
    callback = function()
      vim.schedule(function()
        if api.nvim_buf_is_valid(state.buf) and #chat.windows_of(state.buf) == 0 and state.attached then
          state.attached = false
          require('louise.engine').send('detach', { key = state.key })
        end
      end)
    end,
  })
  api.nvim_create_autocmd('BufWriteCmd', {
    group = group,
    buffer = state.prompt,
    callback = function()
      if require('louise.chat.lifecycle').quit_marks[state.prompt] then
        return -- a refused quit's mark (`:wqa` from a mapping): its message follows
      end
      require('louise.notice').notify('louise: the prompt is not a file: <CR> sends it; clear it, or :qa! to quit'
        .. ' without it', vim.log.levels.WARN)
    end,
  })
  api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI' }, {
    group = group,
    buffer = state.prompt,
    callback = function()
      -- Unsent text guards quitting; an emptied prompt does not.
      local lines = api.nvim_buf_get_lines(state.prompt, 0, -1, false)
      vim.bo[state.prompt].modified = vim.trim(table.concat(lines, '\n')) ~= ''
    end,
  })
  api.nvim_create_autocmd('CursorMoved', {
    group = group,
    buffer = state.buf,
    callback = function()
      if state.below and api.nvim_win_get_cursor(0)[1] >= api.nvim_buf_line_count(state.buf) then
        state.below = false -- caught up: following again
        chat.refresh_winbar(state)
      end
    end,
  })
  api.nvim_create_autocmd('WinEnter', {
    group = group,
    buffer = state.prompt,
    callback = function()
      chat.enter(state)
    end,
  })
end

--- How a chat is called in messages: its session's name, else agent and number.
function M.name(state)
  local title = state.status and state.status.title
  if chat.present(title) and title ~= '' then
    return require('louise.text').line(title)
  end
  return ('%s %d'):format(state.agent, state.n)
end

function M.focus_prompt(state, insert)
  local wins = chat.windows_of(state.prompt)
  if #wins > 0 then
    api.nvim_set_current_win(wins[1])
    if insert then
      vim.cmd('startinsert!')
    end
  end
end

--- A window of this tab showing some chat's transcript, and that chat's prompt window.
local function chat_window_in_tab()
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    local other = chat.by_buf[api.nvim_win_get_buf(win)]
    if other and api.nvim_win_get_buf(win) == other.buf then
      for _, pwin in ipairs(api.nvim_tabpage_list_wins(0)) do
        if api.nvim_win_get_buf(pwin) == other.prompt then
          return win, pwin
        end
      end
      return win, nil
    end
  end
  return nil, nil
end

local function transcript_window_options(win, state)
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  -- Only a chat holding a long line cut into pieces scrolls smoothly (chat/buffer.lua).
  vim.wo[win].smoothscroll = state and state.long_lines == true or false
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
  vim.wo[win].signcolumn = 'no'
  vim.wo[win].foldmethod = 'manual'
  vim.wo[win].foldenable = true
  vim.wo[win].winfixwidth = true
  -- Finished messages conceal their markdown markup (chat/markdown.lua); the cursor's
  -- line shows it as written (what a yank takes).
  vim.wo[win].conceallevel = 2
  vim.wo[win].concealcursor = ''
end

local function prompt_window_options(pwin)
  vim.wo[pwin].winfixheight = true
  vim.wo[pwin].number = false
end

local placement = require('louise.chat.placement')

--- The first window of this tab showing `buf` (floats aside, but the chat's own).
local function in_tab(buf)
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_buf(win) == buf
        and (api.nvim_win_get_config(win).relative == '' or placement.chat_float(win)) then
      return win
    end
  end
  return nil
end

local restore_sizes = placement.restore

--- Show a chat: its windows are reused when shown, completed when one of the pair was
--- closed, taken over from another chat on screen, or made as a column on the right.
local function show(state, focus)
  local options = chat.options()
  local cur = api.nvim_get_current_win()
  local win, pwin = in_tab(state.buf), in_tab(state.prompt)
  if not win and not pwin then
    local reuse, reuse_prompt = chat_window_in_tab()
    if reuse then
      -- Another chat is on screen: this one takes its windows (no pile of splits).
      api.nvim_win_set_buf(reuse, state.buf)
      vim.wo[reuse].smoothscroll = state.long_lines == true
      win = reuse
      if reuse_prompt then
        api.nvim_win_set_buf(reuse_prompt, state.prompt)
        pwin = reuse_prompt
      end
    else
      win, pwin = placement.create(state) -- where setup{layout} puts a chat
      transcript_window_options(win, state)
      if pwin then
        prompt_window_options(pwin)
      end
    end
  elseif pwin and not win and placement.chat_float(pwin) then
    pcall(api.nvim_win_close, pwin, true) -- a float pair is made again whole
    return show(state, focus)
  elseif pwin and not win then
    -- The transcript's window was closed: it goes back above the prompt.
    api.nvim_set_current_win(pwin)
    vim.cmd('aboveleft split')
    win = api.nvim_get_current_win()
    api.nvim_win_set_buf(win, state.buf)
    transcript_window_options(win, state)
  end
  if not pwin and placement.chat_float(win) then
    pcall(api.nvim_win_close, win, true) -- a float pair is made again whole
    return show(state, focus)
  end
  if not pwin then
    api.nvim_set_current_win(win)
    vim.cmd(('belowright %dsplit'):format(options.prompt_height or 6))
    pwin = api.nvim_get_current_win()
    api.nvim_win_set_buf(pwin, state.prompt)
    prompt_window_options(pwin)
  end
  restore_sizes(win, pwin)
  M.quiet_scroll(state)
  chat.refresh_prompt_bar(state)
  chat.refresh_winbar(state)
  chat.fold_thoughts(state, win)
  if focus then
    M.focus_prompt(state, false)
  elseif api.nvim_win_is_valid(cur) then
    api.nvim_set_current_win(cur)
  end
  chat.enter(state) -- a placeholder is never the last chat (chat/starting.lua)
end

-- A terminal made narrow and wide again: chat columns come back to their width.
api.nvim_create_autocmd('VimResized', {
  group = api.nvim_create_augroup('louise_chat_resize', { clear = true }),
  callback = function()
    for _, state in pairs(chat.chats) do
      if api.nvim_buf_is_valid(state.buf) then
        local win = in_tab(state.buf)
        if win then
          restore_sizes(win, in_tab(state.prompt))
        end
      end
    end
  end,
})

--- Open (show, focus) the chat `key`. `pending`: the id of the placeholder that stood for
--- it while its agent started (chat/starting.lua): it becomes the chat, keeping its
--- windows, and the cursor stays wherever the person is. `answer`: the engine's answer to
--- a command, which may come late: it focuses the chat only if the person is still where
--- they asked from (`chat.may_focus`); else it refreshes the chat where it is on screen,
--- takes no other chat's windows, and does not bring back a chat the person left.
function M.open(key, agent, focus, pending, answer)
  local state = chat.chats[key] or require('louise.chat.starting').placeholder(key)
  local adopted = nil
  if (state == nil or not api.nvim_buf_is_valid(state.buf)) and chat.present(pending) then
    adopted = require('louise.chat.starting').adopt(pending, key, agent)
    state = adopted
  end
  local known = state ~= nil and api.nvim_buf_is_valid(state.buf)
  if not known then
    state = chat.create(key, agent)
  end
  if answer and not adopted and focus ~= false then
    focus = chat.may_focus()
    if not focus and not in_tab(state.buf) and not in_tab(state.prompt)
        and (known or chat_window_in_tab() or chat.by_buf[api.nvim_get_current_buf()]) then
      -- The person went elsewhere since: a chat they left (closed, or another took its
      -- windows) stays where :LouiseChat finds it, a new one takes no other chat's windows.
      if #chat.windows_of(state.buf) == 0 and #chat.windows_of(state.prompt) == 0 then
        state.attached = false
        require('louise.engine').send('detach', { key = state.key })
      end
      chat.refresh_winbar(state)
      return
    end
  end
  state.attached = true
  if adopted and not in_tab(state.buf) and not in_tab(state.prompt) then
    -- The person went to another tab, or closed the placeholder: nothing moves.
    chat.refresh_winbar(state)
  else
    show(state, focus ~= false and not adopted)
  end
  if adopted then
    require('louise.chat.starting').settle_last(adopted) -- after showing it (which enters it)
    require('louise.chat.starting').send_waiting(adopted)
  end
end

--- A window beside the chat for what the chat opens (chat/placement.lua).
function M.side_window()
  return (placement.side_window())
end

--- <CR>/gf on a tool line: its terminal, else its first location (in another window); on
--- a turn's changes line: its review.
function M.follow(state, enter)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local id = chat.block_at(state, row)
  local meta = id and state.meta and state.meta[id]
  if not meta then
    if enter then -- <CR> on text that points nowhere: to the prompt, to write
      M.focus_prompt(state, false)
    end
    return
  end
  if meta.review then -- a turn's changes line: its review
    require('louise.engine').send('review', { key = state.key, seq = meta.review.seq })
    return
  end
  if meta.terminals and #meta.terminals > 0 then
    require('louise.terminal').open(meta.terminals[#meta.terminals])
    return
  end
  local loc = meta.locations and meta.locations[1]
  if not loc then
    require('louise.notice').notify('louise: this tool call points at no file', vim.log.levels.INFO)
    return
  end
  api.nvim_set_current_win(M.side_window())
  vim.cmd('edit ' .. vim.fn.fnameescape(loc.path))
  if chat.present(loc.line) then
    pcall(api.nvim_win_set_cursor, 0, { loc.line, 0 })
  end
end

return M
