-- Where a frame's Lua time goes (bench/stream.py BENCH_EXTRA_LUA=bench/frame_profile.lua, with
-- BENCH_FRAME_PROFILE_OUT=FILE): time and calls of louise's per-frame functions and the API
-- calls they make, per frame, written to FILE every 200 frames. Wrapping costs ~1 µs a
-- call: compare figures of one run with each other, not with runs without it.
if _G.lp then return end
local P = { t = {}, n = {} }
_G.lp = P
local hr = vim.uv.hrtime
local function wrap(tbl, name, label)
  local f = tbl[name]
  if type(f) ~= 'function' then return end
  tbl[name] = function(...)
    local t0 = hr()
    local a, b, c, d = f(...)
    P.t[label] = (P.t[label] or 0) + (hr() - t0)
    P.n[label] = (P.n[label] or 0) + 1
    return a, b, c, d
  end
end
for _, n in ipairs({ 'nvim_set_option_value', 'nvim_get_option_value', 'nvim_buf_set_text', 'nvim_buf_set_lines',
  'nvim_buf_get_offset', 'nvim_buf_get_extmark_by_id', 'nvim_win_set_cursor', 'nvim_win_get_cursor',
  'nvim_win_text_height', 'nvim_buf_set_extmark', 'nvim_buf_line_count', 'nvim_win_call', 'nvim_buf_is_valid',
  'nvim_win_get_height', 'nvim_buf_get_lines', 'nvim_buf_del_extmark', 'nvim_set_decoration_provider',
  'nvim_win_get_buf', 'nvim_list_wins', 'nvim_tabpage_list_wins', 'nvim_win_is_valid' }) do
  wrap(vim.api, n, 'api.' .. n)
end
local view = require('louise.chat.view')
for _, n in ipairs({ 'on_tail', 'follow', 'after_frame', 'wait_tail', 'at_bottom' }) do wrap(view, n, 'view.' .. n) end
local lc = require('louise.chat.lifecycle')
wrap(lc, 'guard', 'lifecycle.guard')
local chat = require('louise.chat')
wrap(chat, 'windows_of', 'chat.windows_of')
local buffer = require('louise.chat.buffer')
for _, n in ipairs({ 'apply_ops', 'empty_hint', 'markdown_finish' }) do wrap(buffer, n, 'buffer.' .. n) end
local wb = require('louise.chat.winbar')
for k, v in pairs(wb) do if type(v) == 'function' then wrap(wb, k, 'winbar.' .. k) end end
local md = require('louise.chat.markdown')
for k, v in pairs(md) do if type(v) == 'function' then wrap(md, k, 'md.' .. k) end end
wrap(vim.fn, 'line', 'fn.line')
wrap(vim.fn, 'winheight', 'fn.winheight')
local R = require('louise.render')
local orig = R.apply
local frames = 0
R.apply = function(batch)
  local t0 = hr()
  local out = orig(batch)
  P.t['render.apply'] = (P.t['render.apply'] or 0) + (hr() - t0)
  P.n['render.apply'] = (P.n['render.apply'] or 0) + 1
  frames = frames + 1
  if frames % 200 == 0 then
    local keys = vim.tbl_keys(P.t)
    table.sort(keys, function(a, b) return P.t[a] > P.t[b] end)
    local lines = {}
    for _, k in ipairs(keys) do
      table.insert(lines, ('%-40s %9.1f us total/frame %7d calls'):format(k, P.t[k] / 1000 / frames, P.n[k]))
    end
    table.insert(lines, 'frames ' .. frames)
    vim.fn.writefile(lines, vim.env.BENCH_FRAME_PROFILE_OUT or 'frame-profile.txt')
  end
  return out
end
