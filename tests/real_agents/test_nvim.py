"""The Neovim plugin against each real agent, in a real headless Neovim (tests/e2e's
harness): a chat and its reply on screen, permissions answered from the float, a shell
command, cancel, and resuming a session the agent lists."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Driver
from tests.real_agents.conftest import RealAgent
from tests.real_agents.harness import AGENTS, FULL

REPLY_START = "Here is a streamed reply from the **mock** model."
REPLY_END = "That was a code fence; this is the end."
OLD_TEXT = "first\nold line\nlast\n"
NEW_TEXT = "first\nnew line by mock\nlast\n"
# Every check runs for FULL (claude, codex, vibe); gemini and qwen (AGENTS) run the smoke
# set: a chat, an edit allowed with its diff, a command, resuming a session.
WAITING = "return require('louise.permission').current ~= nil"
TURN_OVER = ("local c = require('louise.chat'); local s = c.chats[... or c.last];"
             " return s and s.status and s.status.turn > 0"
             " and s.status.turns_done == s.status.turn")
# A real agent's first session costs seconds (vibe's initialize alone 3-10 s), more on a
# loaded machine.
START = 180.0


def open_chat(nvim: Driver, agent: str) -> str:
    nvim.nvim.command(f"LouiseChat {agent}")
    key = str(nvim.wait("return require('louise.chat').last", timeout=START))
    nvim.wait_status("ready", key, timeout=START)
    return key


def workdir(nvim: Driver) -> Path:
    return Path(str(nvim.lua("return vim.fn.getcwd()")))


def screen(nvim: Driver) -> str:
    """What the person sees: the lines of every window on the current tab."""
    return "\n".join(nvim.lua(
        "local out = {}; for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
        " local buf = vim.api.nvim_win_get_buf(win);"
        " vim.list_extend(out, vim.api.nvim_buf_get_lines(buf, 0, -1, false)) end;"
        " return out"))


def pending_request(nvim: Driver) -> dict[str, Any]:
    nvim.wait(WAITING, timeout=START)
    request: dict[str, Any] = nvim.lua("return require('louise.permission').current")
    return request


def answer(nvim: Driver, kind: str) -> None:
    """Press the number key of the first option of `kind`, as a person would."""
    options = pending_request(nvim)["options"]
    number = next(i for i, option in enumerate(options, 1) if option["kind"] == kind)
    nvim.permission_key(str(number))  # after the grace that ignores keys typed as it opens


def wait_turn_over(nvim: Driver, key: str) -> None:
    nvim.wait(TURN_OVER, key, timeout=START)


def tool_lines(nvim: Driver, key: str, kind: str) -> list[str]:
    return [line for line in nvim.chat_lines(key) if line.lstrip()[2:].startswith(f"{kind}: ")]


@contextmanager
def checking(behaviour: str) -> Iterator[None]:
    """One of several checks sharing a chat (one agent start instead of one per check): a
    failure names the behaviour that broke before the assertion's own message."""
    try:
        yield
    except Exception as exc:
        raise AssertionError(f"{behaviour}: {type(exc).__name__}: {exc}") from exc


@pytest.mark.parametrize("nvim_agent", AGENTS, indirect=True)
def test_one_chat_shows_the_reply_once_allows_an_edit_and_a_command_and_diffs_the_file(
        nvim_agent: RealAgent, agent_nvim: Driver) -> None:
    """The smoke set, every agent, in one chat (one Neovim, one agent start): the reply
    and the prompt shown once; an edit allowed from the float; a shell command allowed
    from the float (claude and codex: run by the agent itself, seen to its end); then the
    diff view of a refused edit, which shows the whole file (codex sends the whole file;
    claude and vibe only the changed region, `oldText: "old line"`, `newText: "new line
    by mock"`: either way the diff tab shows the whole file as it is and as it would be,
    and the float's preview the hunk). The refusal comes last, after the allowed turns,
    so no check sees another's leftovers."""
    nvim = agent_nvim
    key = open_chat(nvim, nvim_agent.name)
    with checking("the reply and the prompt shown once"):
        assert key.startswith(f"{nvim_agent.name}:"), key
        nvim.submit("hello from neovim", key, timeout=START)  # vibe echoes it back
        nvim.wait_status("ready", key)
        text = nvim.chat_text(key)
        assert REPLY_START in text and REPLY_END in text, text
        assert text.count(REPLY_START) == 1, text
        assert "def hello():" in text, text
        assert REPLY_END in screen(nvim), "the reply is in a window on screen"
        assert [m["params"]["prompt"][0]["text"]
                for m in nvim_agent.wire.sent("session/prompt")] == ["hello from neovim"]
        lines = nvim.chat_lines(key)
        assert lines.count("hello from neovim") == 1, lines
        assert lines.count("▌ You") == 1, lines

    with checking("an edit allowed from the float"):
        target = workdir(nvim) / "notes.txt"
        target.write_text(OLD_TEXT)
        nvim.prompt(f"MOCK-EDIT {target}", key)
        request = pending_request(nvim)
        assert request["kind"] == "edit" and str(target) in request["paths"], request
        assert nvim.status(key) == "waiting_permission"
        answer(nvim, "allow_once")
        wait_turn_over(nvim, key)
        assert target.read_text() == NEW_TEXT
        edits = tool_lines(nvim, key, "edit")
        assert len(edits) == 1 and edits[0].endswith("· completed"), edits
        [(_, reply)] = nvim_agent.wire.permission_answers()
        assert reply is not None and reply["result"]["outcome"]["outcome"] == "selected"

    with checking("a shell command allowed from the float"):
        nvim.prompt("MOCK-SHELL", key)
        request = pending_request(nvim)
        assert request["kind"] == "execute", request
        answer(nvim, "allow_once")
        wait_turn_over(nvim, key)
        assert (workdir(nvim) / "shell-out.txt").read_text() == "hello-from-shell\n"
        runs = tool_lines(nvim, key, "execute")
        # qwen titles its tool "Shell", copilot by its description (the command is in the
        # permission request).
        assert len(runs) == 1 and ("echo hello-from-shell" in runs[0]
                                   or nvim_agent.name in ("qwen", "copilot")), runs
        assert "· completed" in runs[0], runs

    if nvim_agent.name in ("claude", "codex"):
        # codex runs commands itself and reports them in `_meta.terminal_output_delta` /
        # `terminal_exit` for a terminal louise never created; claude does the same once
        # louise advertises `_meta.terminal_output`. The tool line ends with the exit
        # status (before: `· running` forever) and the output is in the tool's terminal
        # buffer.
        with checking("a command the agent runs itself streams and finishes"):
            [line] = tool_lines(nvim, key, "execute")
            assert "running" not in line, line
            assert line.endswith("· exit 0"), line
            [init] = [m for m in nvim_agent.wire.sent("initialize")]
            assert init["params"]["clientCapabilities"]["_meta"]["terminal_output"] is True
            assert any("terminal_exit" in str(m)
                       for m in nvim_agent.wire.received("session/update"))
            # louise's `$ command` and `[exit N]` lines are extmarks, not terminal text.
            output = nvim.wait(
                "local term = require('louise.terminal'); local out = {};"
                " for id, t in pairs(term.terms) do local marks = term.markers(id);"
                " local text = table.concat(vim.api.nvim_buf_get_lines(t.buf, 0, -1, false),"
                " '\\n'); if text:find('hello-from-shell', 1, true)"
                " and marks.exit == '[exit 0]' then"
                " out[#out + 1] = (marks.command or '') .. '\\n' .. text end end;"
                " return #out > 0 and out")
            assert len(output) == 1 and "echo hello-from-shell" in output[0], output

    with checking("the diff view shows the whole proposed file"):
        target = workdir(nvim) / "diffed.txt"  # a file the agent has not read yet
        target.write_text(OLD_TEXT)
        nvim.prompt(f"MOCK-EDIT {target}", key)
        request = pending_request(nvim)
        preview = [line.strip() for line in request["diff"]]
        changed = [line for line in preview
                   if line[:1] in "-+" and line[:3] not in ("---", "+++")]
        assert changed == ["-old line", "+new line by mock"], preview
        assert "first" in preview and "last" in preview, "the hunk has its context"
        nvim.permission_key("d")
        panes = nvim.wait(
            "local out = {}; for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
            " local buf = vim.api.nvim_win_get_buf(win);"
            " local name = vim.api.nvim_buf_get_name(buf);"
            " if name:find('^louise%-') then out[name:match('^louise%-(%a+)')] ="
            " vim.api.nvim_buf_get_lines(buf, 0, -1, false) end end;"
            " return out.current and out.proposed and out")
        assert panes["current"] == OLD_TEXT.splitlines()
        assert panes["proposed"] == NEW_TEXT.splitlines()
        answer(nvim, "reject_once")  # the option keys answer from the diff tab too
        wait_turn_over(nvim, key)
        assert target.read_text() == OLD_TEXT


@pytest.mark.parametrize("nvim_agent", FULL, indirect=True)
def test_one_chat_refuses_edits_updates_open_buffers_keeps_unsaved_edits_and_cancels(
        nvim_agent: RealAgent, agent_nvim: Driver) -> None:
    """Every check of FULL's (claude, codex, vibe) edits in one chat (one Neovim, one agent
    start), each on its own file: `q` on the float refuses without cancelling the turn
    (claude and vibe: their reject option; `cancelled` claude takes for an aborted turn,
    'Tool use aborted'); an edit refused from the float; a snippet that no longer fits the
    person's buffer shown as it is (claude and vibe send only the changed region; codex the
    whole file); a loaded buffer follows the agent's own edit (no fs/write_text_file);
    unsaved edits are never overwritten and the person is asked; last, :LouiseCancel stops
    a streaming turn (after it nothing else runs in the chat)."""
    nvim = agent_nvim
    key = open_chat(nvim, nvim_agent.name)
    lines = "return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)"

    def refusal(answers_before: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """The one permission request of the check's turn and the option louise chose."""
        [(request, reply)] = nvim_agent.wire.permission_answers()[answers_before:]
        assert reply is not None
        chosen: dict[str, Any] = reply["result"]["outcome"]
        return request, chosen

    if nvim_agent.name in ("claude", "vibe"):
        with checking("q on the float refuses without cancelling the turn"):
            target = workdir(nvim) / "q.txt"
            target.write_text(OLD_TEXT)
            nvim.prompt(f"MOCK-EDIT {target}", key)
            pending_request(nvim)
            nvim.permission_key("q")
            wait_turn_over(nvim, key)
            assert target.read_text() == OLD_TEXT
            request, chosen = refusal(0)
            kinds = {o["optionId"]: o["kind"] for o in request["params"]["options"]}
            assert chosen["outcome"] == "selected", chosen
            assert kinds[chosen["optionId"]] == "reject_once", chosen
            assert nvim_agent.stop_reasons() == ["end_turn"]
            assert "⊘ cancelled" not in nvim.chat_text(key)

    with checking("an edit refused from the float"):
        target = workdir(nvim) / "refused.txt"
        target.write_text(OLD_TEXT)
        answers, edits_before = len(nvim_agent.wire.permission_answers()), \
            len(tool_lines(nvim, key, "edit"))
        nvim.prompt(f"MOCK-EDIT {target}", key)
        answer(nvim, "reject_once")
        wait_turn_over(nvim, key)
        assert target.read_text() == OLD_TEXT
        request, chosen = refusal(answers)
        kinds = {o["optionId"]: o["kind"] for o in request["params"]["options"]}
        assert chosen["outcome"] == "selected" and kinds[chosen["optionId"]] == "reject_once"
        edits = tool_lines(nvim, key, "edit")[edits_before:]
        assert len(edits) == 1 and ("failed" in edits[0] or "cancelled" in edits[0]), edits
        nvim.wait_status("ready", key)

    if nvim_agent.name in ("claude", "vibe"):
        # The agent read the disk (`old line`), the person's buffer no longer has that
        # line: its snippet cannot be put onto what the person sees, so the float and the
        # diff tab show the snippet alone and say why, not a whole file it would not make.
        with checking("a snippet that no longer fits is shown as it is and says why"):
            target = workdir(nvim) / "snippet.txt"
            target.write_text(OLD_TEXT)
            nvim.lua("local b = vim.fn.bufadd(...); vim.fn.bufload(b);"
                     " vim.api.nvim_buf_set_lines(b, 1, 2, false, {'my own line'})",
                     str(target))
            nvim.prompt(f"MOCK-EDIT {target}", key)
            request = pending_request(nvim)
            why = "the agent's old text is not in the current file: only its snippet is shown"
            preview = [line.strip() for line in request["diff"]]
            assert any(why in line for line in preview), preview
            changed = [line for line in preview
                       if line[:1] in "-+" and line[:3] not in ("---", "+++")]
            assert changed == ["-old line", "+new line by mock"], preview
            assert "first" not in preview and "last" not in preview, \
                "no context it does not have"
            nvim.lua("vim.o.columns = 300")  # the diff tab's bars keep their words when wide
            nvim.permission_key("d")
            panes = nvim.wait(
                "local out = {}; for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
                " local buf = vim.api.nvim_win_get_buf(win);"
                " local name = vim.api.nvim_buf_get_name(buf);"
                " if name:find('^louise%-') then out[name:match('^louise%-(%a+)')] ="
                " {lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false), name = name,"
                " winbar = vim.api.nvim_eval_statusline(vim.wo[win].winbar, {winid = win,"
                " use_winbar = true, maxwidth = 300}).str} end end;"  # as drawn, wide enough
                " return out.current and out.proposed and out")
            assert panes["current"]["lines"] == ["old line"], panes
            assert panes["proposed"]["lines"] == ["new line by mock"], panes
            assert panes["proposed"]["name"].endswith("(snippet)"), panes
            assert why in panes["current"]["winbar"], panes
            answer(nvim, "reject_once")
            wait_turn_over(nvim, key)
            assert target.read_text() == OLD_TEXT
            assert nvim.lua(lines, str(target)) == ["first", "my own line", "last"]

    # The agents edit files themselves (no fs/write_text_file): a loaded buffer without
    # unsaved edits follows the file, as :checktime would (cursor and undo kept).
    with checking("an open buffer shows the agent's edit after the turn"):
        target = workdir(nvim) / "follows.txt"
        target.write_text(OLD_TEXT)
        nvim.lua("local b = vim.fn.bufadd(...); vim.fn.bufload(b)", str(target))
        nvim.prompt(f"MOCK-EDIT {target}", key)
        answer(nvim, "allow_once")
        wait_turn_over(nvim, key)
        assert target.read_text() == NEW_TEXT
        nvim.wait("return vim.deep_equal(vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1,"
                  " false), {'first', 'new line by mock', 'last'})", str(target), timeout=30)
        assert not nvim.lua("return vim.bo[vim.fn.bufnr(...)].modified", str(target))
        assert not list(nvim_agent.wire.received("fs/write_text_file")), \
            "the agent wrote through the client after all; this check no longer covers it"

    # The agent changed a file whose buffer has unsaved edits: the buffer keeps them until
    # the person chooses; taking the agent's text leaves theirs one `u` away.
    with checking("unsaved edits are never overwritten and the person is asked"):
        target = workdir(nvim) / "unsaved.txt"
        target.write_text(OLD_TEXT)
        nvim.lua("_G.louise_test_asked = {}; vim.ui.select = function(items, opts, choose)"
                 " table.insert(_G.louise_test_asked, {prompt = opts.prompt,"
                 " ids = vim.tbl_map(function(i) return i.id end, items)});"
                 " _G.louise_test_choose = function(id) for _, item in ipairs(items) do"
                 " if item.id == id then choose(item) end end end end")
        nvim.lua("local b = vim.fn.bufadd(...); vim.fn.bufload(b);"
                 " vim.api.nvim_buf_set_lines(b, 0, 1, false, {'my unsaved first'})",
                 str(target))
        nvim.prompt(f"MOCK-EDIT {target}", key)
        answer(nvim, "allow_once")
        wait_turn_over(nvim, key)
        assert target.read_text() == NEW_TEXT
        asked = nvim.wait("return #_G.louise_test_asked > 0 and _G.louise_test_asked")
        assert len(asked) == 1, asked
        assert asked[0]["ids"] == ["mine", "agent", "diff"], asked
        assert "unsaved.txt" in asked[0]["prompt"] and "unsaved edits" in asked[0]["prompt"]
        assert nvim.lua(lines, str(target)) == ["my unsaved first", "old line", "last"], \
            "nothing is overwritten before the person answers"
        nvim.lua("_G.louise_test_choose('agent')")
        nvim.wait("return vim.deep_equal(vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1,"
                  " false), {'first', 'new line by mock', 'last'})", str(target))
        assert not nvim.lua("return vim.bo[vim.fn.bufnr(...)].modified", str(target))
        nvim.lua("vim.api.nvim_buf_call(vim.fn.bufnr(...),"
                 " function() vim.cmd('silent undo') end)", str(target))
        assert nvim.lua(lines, str(target)) == ["my unsaved first", "old line", "last"], \
            "the person's edits are one undo away"

    with checking(":LouiseCancel stops a streaming turn"):
        stops = len(nvim_agent.stop_reasons())
        nvim.prompt("MOCK-SLOW", key)
        nvim.wait("local c = require('louise.chat');"
                  " local lines = vim.api.nvim_buf_get_lines(c.chats[...].buf, 0, -1, false);"
                  " return table.concat(lines, '\\n'):find('slow chunk 2.', 1, true) ~= nil",
                  key, timeout=START)
        nvim.nvim.command("LouiseCancel")
        wait_turn_over(nvim, key)
        nvim.wait_status("ready", key)
        text = nvim.chat_text(key)
        assert "⊘ cancelled" in text, text
        assert "slow chunk 59." not in text
        session_id = key.split(":", 1)[1]
        assert [m["params"]["sessionId"] for m in nvim_agent.wire.sent("session/cancel")] \
            == [session_id]
        assert nvim_agent.stop_reasons()[stops:] == ["cancelled"]


def pick_session_on_select(nvim: Driver, session_id: str, action: str = "open") -> None:
    """vim.ui.select as a person using it: choose the entry of `session_id` (recording
    what was offered), then `action` (open, fork, delete) and "delete" to confirm."""
    nvim.lua("local want, action = ...; _G.louise_test_actions = {};"
             " vim.ui.select = function(items, _, choose)"
             "   if type(items[1]) == 'string' then"
             "     table.insert(_G.louise_test_actions, items);"
             "     return choose(vim.tbl_contains(items, action) and action or nil) end"
             "   _G.louise_test_offered = items;"
             "   for _, item in ipairs(items) do"
             "     if item.id == want then return choose(item) end end;"
             "   choose(nil) end", session_id, action)


@pytest.mark.parametrize("nvim_agent", AGENTS, indirect=True)
def test_louiseresume_loads_a_session_and_takes_a_further_turn(nvim_agent: RealAgent,
                                                               agent_nvim: Driver) -> None:
    nvim = agent_nvim
    first = nvim_agent.louise("chat", "--agent", nvim_agent.name, "--cwd", str(workdir(nvim)),
                              "remember the word pelican")
    assert first.status == 0, str(first)
    [session_id] = nvim_agent.session_ids()
    nvim_agent.come_back_later()
    pick_session_on_select(nvim, session_id)
    nvim.nvim.command(f"LouiseResume {nvim_agent.name}")
    key = f"{nvim_agent.name}:{session_id}"
    nvim.wait("return require('louise.chat').last == ...", key, timeout=START)
    nvim.wait_status("ready", key, timeout=START)
    offered = nvim.lua("return _G.louise_test_offered")
    assert [item["id"] for item in offered].count(session_id) == 1, offered
    replayed = nvim.chat_lines(key)
    # gemini replays its own context message with the prompt at its end (one message).
    assert "\n".join(replayed).count("remember the word pelican") == 1, replayed
    assert "\n".join(replayed).count(REPLY_START) == 1, replayed
    nvim.submit("and a second turn", key, timeout=START)
    text = nvim.chat_text(key)
    assert text.count(REPLY_START) == 2, text
    assert text.index("remember the word pelican") < text.index("and a second turn")
    # Each message once, also the new prompt after the replay (vibe echoes it back).
    lines = nvim.chat_lines(key)
    assert "\n".join(lines).count("remember the word pelican") == 1, lines
    assert lines.count("and a second turn") == 1, lines
    assert lines.count("▌ You") == 2, lines
    assert [m["params"]["sessionId"] for m in nvim_agent.wire.sent("session/load")] \
        == [session_id]
    second = [r for r in nvim_agent.mock.requests()
              if "and a second turn" in str(r.get("prompt", ""))]
    # Any of them: claude also sends side requests (a title) that carry only the new prompt.
    assert any("remember the word pelican" in str(r["body"]) for r in second), second
