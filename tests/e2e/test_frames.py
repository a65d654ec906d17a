"""The frame outbox and the safe applier in a real Neovim: UI work that meets in one frame,
agent strings with newlines and control characters, a handler that fails."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.test_chat import open_chat

pytestmark = pytest.mark.e2e

AGENT = Path(__file__).resolve().parents[1] / "fakes" / "nvim_hostile_agent.py"
WAITING = "return require('louise.permission').current ~= nil"
CONTROL = {chr(c) for c in range(32) if c != 9} | {"\x7f"}

# Neovim is busy for a moment after the frame that shows `needle` (as a slow treesitter
# parse or an autocmd would make it): whatever the engine does meanwhile meets in the
# next frame.
SLOW_FRAME = """
local needle, ms, marker = ...
local R = require('louise.render')
local apply = R.apply
R.apply = function(batch)
  local out = apply(batch)
  local chats = batch.chats and vim.inspect(batch.chats) or ''
  if not _G.louise_test_slowed and chats:find(needle, 1, true) then
    _G.louise_test_slowed = true
    if marker then vim.fn.writefile({}, marker) end  -- the test's agent goes on now
    vim.uv.sleep(ms)
  end
  return out
end
"""


def hostile_chat(nvim: Driver, mode: str, allow_edits: bool = False,
                 slowed: Path | None = None) -> str:
    # `allow_edits`: a rule answers the gate of writes the agent did not ask for.
    # `slowed`: the file SLOW_FRAME writes as it slows a frame (the agent waits for it).
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, agents = {hostile = {"
             " command = select(1, ...), args = {(select(2, ...))},"
             " env = {HOSTILE_MODE = select(3, ...), HOSTILE_SLOWED = select(5, ...)}}},"
             " permissions = select(4, ...) and {rules = {{kind = 'edit', decision = 'allow'}}}"
             " or nil})", sys.executable, str(AGENT), mode, allow_edits,
             str(slowed) if slowed else None)
    nvim.nvim.command("LouiseChat hostile")
    key = str(nvim.wait("return require('louise.chat').last"))
    nvim.wait_status("ready", key)
    return key


def ping(nvim: Driver) -> None:
    """A round trip through the engine: every frame before it has been applied."""
    nvim.lua("require('louise.render').pong = nil; require('louise.engine').send('ping', {})")
    nvim.wait("return require('louise.render').pong")


def floats(nvim: Driver) -> int:
    return int(nvim.lua("local n = 0 for _, w in ipairs(vim.api.nvim_list_wins()) do"
                        " if vim.api.nvim_win_get_config(w).relative ~= '' then n = n + 1 end"
                        " end return n"))


def test_two_fs_conflicts_in_one_frame_are_both_asked_and_both_resolve(nvim: Driver) -> None:
    work = Path(str(nvim.lua("return vim.fn.getcwd()")))
    bufs = {}
    for name in ("a.txt", "b.txt"):
        (work / name).write_text(f"original {name}\n")
        nvim.lua("vim.cmd('topleft split ' .. vim.fn.fnameescape(...))", str(work / name))
        bufs[name] = int(nvim.lua("return vim.fn.bufnr(...)", str(work / name)))
        nvim.lua("vim.api.nvim_buf_set_lines(..., 0, -1, false, {'my unsaved edit'})",
                 bufs[name])
    # The person keeps a.txt's agent text in the buffer and refuses b.txt's.
    nvim.lua("_G.louise_test_asked = {}; vim.ui.select = function(items, opts, cb)"
             " table.insert(_G.louise_test_asked, opts.prompt)"
             " local want = opts.prompt:find('a.txt', 1, true) and 'buffer' or 'refuse'"
             " for _, item in ipairs(items) do if item.id == want then return cb(item) end end"
             " end")
    key = hostile_chat(nvim, "two_writes", allow_edits=True)
    nvim.lua(SLOW_FRAME, "writing two files", 300)
    nvim.run_prompt("go", key, timeout=30)
    asked = nvim.lua("return _G.louise_test_asked")
    assert len(asked) == 2, asked
    assert any("a.txt" in prompt for prompt in asked) and any("b.txt" in p for p in asked)
    assert nvim.lua("return _G.louise_test_slowed") is True
    a_lines = nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", bufs["a.txt"])
    b_lines = nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", bufs["b.txt"])
    assert a_lines == ["agent wrote a.txt"]
    assert b_lines == ["my unsaved edit"]
    assert (work / "a.txt").read_text() == "original a.txt\n", "applied in the buffer only"
    assert (work / "b.txt").read_text() == "original b.txt\n"
    text = nvim.chat_text(key)
    assert "a.txt: {}" in text, text  # the write succeeded
    assert "b.txt: {" in text and "unsaved edits" in text, text  # refused, the agent is told


def test_a_permission_shown_and_withdrawn_within_one_frame_leaves_no_float(
        nvim: Driver, tmp_path: Path) -> None:
    slowed = tmp_path / "slowed"
    key = hostile_chat(nvim, "withdrawn", slowed=slowed)
    nvim.lua(SLOW_FRAME, "asking", 300, str(slowed))
    nvim.run_prompt("go", key, timeout=30)
    ping(nvim)
    assert nvim.lua("return _G.louise_test_slowed") is True
    assert "permission: {" in nvim.chat_text(key)  # the agent got its request's end
    assert nvim.lua("return require('louise.permission').current") is None
    assert floats(nvim) == 0, "no dead float on screen"


def test_a_heredoc_with_control_characters_in_a_permission_request(nvim: Driver) -> None:
    key = hostile_chat(nvim, "heredoc")
    nvim.prompt("run it", key)
    nvim.wait(WAITING, timeout=30)
    lines = list(nvim.lua("local p = require('louise.permission');"
                          " return vim.api.nvim_buf_get_lines(p.buf, 0, -1, false)"))
    assert "execute: Run cat <<'EOF' > notes.txt" in lines
    assert "  $ cat <<'EOF' > notes.txt" in lines
    assert "    first line" in lines
    assert "    ␛[31mred␛[0m bell␇ nul␀ cr" in lines, lines
    assert lines.count("    EOF") == 2  # the end of the title's heredoc and the command's
    assert not [line for line in lines if CONTROL & set(line)]
    assert nvim.lua("return vim.api.nvim_get_current_win() == require('louise.permission').win")
    nvim.permission_key("1")  # allow once, from the float
    nvim.wait("local c = require('louise.chat'); local s = c.chats[...];"
              " return s.status.turns_done == s.status.turn", key, timeout=30)
    text = nvim.chat_text(key)
    assert 'permission: {"outcome": {"optionId": "allow", "outcome": "selected"}}' in text
    assert "turn over" in text
    tool = [line for line in nvim.chat_lines(key) if "execute: Run cat" in line]
    assert len(tool) == 1 and "␛[31mred" in tool[0], tool
    assert not [line for line in nvim.chat_lines(key) if CONTROL & set(line)]
    assert nvim.lua("return vim.bo[require('louise.chat').chats[...].buf].modifiable",
                    key) is False


# A Neovim API call of the chats handler fails in the first two frames after arming, as
# on a deleted buffer; the frame also carries the chat's header (status).
FAIL_TWO_FRAMES = """
local R = require('louise.render')
local apply = R.apply
_G.louise_test_failed = {}
_G.louise_test_resets = 0
R.apply = function(batch)
  local key = require('louise.chat').last
  local failing = batch.chats and batch.chats[key] and #_G.louise_test_failed < 2
    and (#_G.louise_test_failed > 0 or (batch.status and batch.status[key]))
  if batch.chats and batch.chats[key] and #_G.louise_test_failed >= 2 then
    for _, op in ipairs(batch.chats[key]) do
      if op[1] == 'reset' then _G.louise_test_resets = _G.louise_test_resets + 1 end
    end
  end
  if not failing then
    return apply(batch)
  end
  local set_lines = vim.api.nvim_buf_set_lines
  vim.api.nvim_buf_set_lines = function() error('Invalid buffer id: 4242') end
  local ok, out = pcall(apply, batch)
  vim.api.nvim_buf_set_lines = set_lines
  local s = require('louise.chat').chats[key]
  table.insert(_G.louise_test_failed, {
    ok = ok,
    failed = ok and out and out.failed or nil,
    sent_status = batch.status and batch.status[key] and batch.status[key].status or nil,
    status = s.status.status,
    modifiable = vim.bo[s.buf].modifiable,
  })
  return out
end
"""


def test_a_failing_handler_is_reported_once_and_the_chat_is_redrawn_whole(
        nvim: Driver) -> None:
    key = open_chat(nvim)
    nvim.run_prompt("first prompt", key)
    nvim.lua("_G.louise_test_notes = {}; vim.notify = function(msg, level)"
             " table.insert(_G.louise_test_notes, msg) end")
    nvim.lua(FAIL_TWO_FRAMES)
    nvim.run_prompt("second prompt", key)
    failed = nvim.wait("return #_G.louise_test_failed == 2 and _G.louise_test_failed")
    first = failed[0]
    assert first["ok"] is True, "apply itself never raises"
    assert first["failed"] == ["chats"], "only the failing handler"
    assert first["sent_status"] and first["status"] == first["sent_status"], \
        "the other handlers of the frame were applied"
    assert all(frame["modifiable"] is False for frame in failed), "read-only again"
    # The engine was told and sent the chat whole; the transcript is complete and has
    # each block once.
    nvim.wait("return _G.louise_test_resets > 0")
    nvim.wait("local c = require('louise.chat'); return vim.tbl_contains("
              "vim.api.nvim_buf_get_lines(c.chats[...].buf, 0, -1, false),"
              " 'You wrote: *second prompt*')", key)
    ping(nvim)
    text = nvim.chat_text(key)
    assert text.count("▌ You") == 2 and text.count("## Hello from the demo agent") == 2, text
    notes = [n for n in nvim.lua("return _G.louise_test_notes")
             if "could not show part of an update" in n]
    assert len(notes) == 1, "reported once, not once per failing frame"
    assert "chats: " in notes[0] and "Invalid buffer id: 4242" in notes[0]
    assert nvim.lua("return #require('louise.render').errors") == 2
    assert nvim.lua("return vim.bo[require('louise.chat').chats[...].buf].modifiable",
                    key) is False


MANY_STATUSES = """
local keys, state = ...
local W = require('louise.chat.winbar')
local refresh = W.refresh_all_winbars
local calls = 0
W.refresh_all_winbars = function(...) calls = calls + 1 return refresh(...) end
local statuses = {}
for i, key in ipairs(keys) do
  if i > 1 then
    statuses[key] = { status = state, agent = 'demo', turn = 2, turns_done = 1,
                      commands = {}, command_info = {} }
  end
end
local ok, report = pcall(require('louise.render').apply, { status = statuses })
W.refresh_all_winbars = refresh
return { calls, ok and (report or vim.NIL) or tostring(report) }
"""


def test_a_frame_with_many_status_changes_redraws_every_winbar_once(nvim: Driver) -> None:
    """Issue 14 item 6: every status change moves the background list in every chat's
    winbar; a frame with 19 of them refreshes them all once, not 19 times, and the
    shown chat's winbar then tells the new state of the others."""
    keys = [f"demo:bench{n}" for n in range(20)]
    opened = nvim.lua("local keys = ...; local open = {};"
                      " for i, key in ipairs(keys) do open[i] = {key = key, agent = 'demo',"
                      " focus = i == 1} end; return require('louise.render').apply("
                      "{open = open})", keys)
    assert opened is None, opened
    first = nvim.wait("local c = require('louise.chat'); for i, key in ipairs(...) do"
                      " if #vim.fn.win_findbuf(c.chats[key].buf) > 0 then return i end end",
                      keys)
    keys.insert(0, keys.pop(first - 1))  # the shown chat first: the others change
    shown = nvim.lua("return require('louise.chat').chats[...].buf", keys[0])
    before = nvim.lua("return vim.wo[vim.fn.win_findbuf(...)[1]].winbar", shown)
    calls, report = nvim.lua(MANY_STATUSES, keys, "prompting")
    assert report is None, report
    assert calls == 1
    after = nvim.lua("return vim.wo[vim.fn.win_findbuf(...)[1]].winbar", shown)
    expected = nvim.lua("local W = require('louise.chat.winbar'); local c = require("
                        "'louise.chat'); local win = vim.fn.win_findbuf(c.chats[...].buf)[1];"
                        " return W.winbar(c.chats[...], vim.api.nvim_win_get_width(win))",
                        keys[0])
    assert after == expected and after != before
