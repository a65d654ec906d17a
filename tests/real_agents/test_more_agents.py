"""What gemini-cli and qwen-code trip over, against the real agents (issue 24): a new file
through louise (gemini reads it first, and took louise's not-found error for a failure),
shown as new (qwen and gemini send it as an empty `oldText`), a mode change the agent
refuses (its reason shown), and the person's choice of the agent's auto-edit mode (the
gate asks no more for its edits). Sessions coming back for gemini, which has no
`session/list`, are in test_cli.py and test_nvim.py (louise sessions, --continue,
:LouiseResume)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import Driver
from tests.real_agents.conftest import RealAgent
from tests.real_agents.test_nvim import (
    OLD_TEXT,
    START,
    answer,
    checking,
    open_chat,
    pending_request,
    wait_turn_over,
    workdir,
)

WRITTEN = "written by mock\n"
NEW_TEXT = "first\nnew line by mock\nlast\n"


def pick_named(nvim: Driver, name: str) -> None:
    """vim.ui.select as a person using it: the item shown with `name` in it (recorded)."""
    nvim.lua("local want = ...; _G.louise_test_shown = {};"
             " vim.ui.select = function(items, opts, choose)"
             "   for _, item in ipairs(items) do"
             "     local shown = opts.format_item and opts.format_item(item) or tostring(item)"
             "     table.insert(_G.louise_test_shown, shown)"
             "     if shown:find(want, 1, true) then return choose(item) end end;"
             "   choose(nil) end", name)


def record_notes(nvim: Driver) -> None:
    nvim.lua("_G.louise_test_notes = {}; vim.notify = function(msg, level)"
             " table.insert(_G.louise_test_notes, msg) end")


@pytest.mark.parametrize("nvim_agent", ["gemini", "qwen"], indirect=True)
def test_one_chat_shows_a_new_file_as_new_then_changes_the_mode(nvim_agent: RealAgent,
                                                                agent_nvim: Driver) -> None:
    """One chat each of gemini and qwen (one Neovim, one agent start). First a new file:
    gemini reads a file before writing it: louise's answer for a missing file is one it
    takes as missing (every new file failed before: "Error checking existing file"). Both
    send the new file as `oldText: ""`: the float and the diff tab show a new file, not
    a snippet of a missing one. Then the mode, after the edit so it governs nothing
    before: :LouiseMode → "Auto Edit", which gemini refuses in a folder it does not
    trust, with "Internal error" and its reason in the error's data (the person reads the
    reason); qwen takes it: qwen then writes without asking, and louise's gate no longer
    asks before each of its writes; the winbar shows the mode. A command is still asked
    for (the mode covers edits only)."""
    nvim = agent_nvim
    key = open_chat(nvim, nvim_agent.name)
    with checking("a new file is shown as new and written"):
        target = workdir(nvim) / "sub" / "created.txt"
        target.parent.mkdir()
        nvim.prompt(f"MOCK-WRITE {target}", key)
        request = pending_request(nvim)
        [diff] = request["diffs"]
        assert (diff["mode"], diff["whole"], diff["note"]) == ("new", True, None), diff
        assert diff["new"] == WRITTEN
        assert not any("missing" in line or "snippet" in line for line in request["diff"]), \
            request["diff"]
        nvim.permission_key("d")
        panes = nvim.wait(
            "local out = {}; for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do"
            " local buf = vim.api.nvim_win_get_buf(win);"
            " local name = vim.api.nvim_buf_get_name(buf);"
            " if name:find('^louise%-') then out[name:match('^louise%-(%a+)')] ="
            " {lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false), name = name} end end;"
            " return out.current and out.proposed and out")
        assert not panes["proposed"]["name"].endswith("(snippet)"), panes
        assert panes["proposed"]["lines"] == WRITTEN.splitlines(), panes
        assert panes["current"]["lines"] == [""], panes
        answer(nvim, "allow_once")  # from the diff tab, which closes
        wait_turn_over(nvim, key)
        assert target.read_text() == WRITTEN
        if nvim_agent.name == "gemini":
            reads = nvim_agent.wire.pairs("fs/read_text_file", "<<")
            assert reads and all(reply is not None and reply.get("result") == {"content": ""}
                                 for _, reply in reads), reads

    if nvim_agent.name == "gemini":
        with checking("a refused mode change says why"):
            record_notes(nvim)
            pick_named(nvim, "Auto Edit")
            nvim.nvim.command("LouiseMode")
            note = nvim.wait("for _, m in ipairs(_G.louise_test_notes) do"
                             " if m:find('mode', 1, true) then return m end end",
                             timeout=START)
            [(request, reply)] = nvim_agent.wire.pairs("session/set_mode", ">>")
            assert request["params"]["modeId"] == "autoEdit"
            assert reply is not None and "error" in reply, reply
            reason = reply["error"]["data"]["details"]
            assert reason in note, (note, reply)
            assert "JSON-RPC" not in note, note
            assert nvim.lua("return require('louise.chat').chats[...].status.mode",
                            key) == "default"
        return

    with checking("the person's auto-edit mode lets the agent's edits through"):
        target = workdir(nvim) / "notes.txt"
        target.write_text(OLD_TEXT)
        answers = len(nvim_agent.wire.permission_answers())
        writes_before = len(nvim_agent.wire.pairs("fs/write_text_file", "<<"))
        pick_named(nvim, "Auto Edit")
        nvim.nvim.command("LouiseMode")
        nvim.wait("return require('louise.chat').chats[...].status.mode == 'auto-edit'", key,
                  timeout=START)
        winbar = nvim.lua("local s = require('louise.chat').chats[...];"
                          " return vim.wo[vim.fn.bufwinid(s.buf)].winbar", key)
        assert "auto-edit: edits allowed" in winbar, winbar
        nvim.submit(f"MOCK-EDIT {target}", key, timeout=START)
        assert target.read_text() == NEW_TEXT
        assert nvim_agent.wire.permission_answers()[answers:] == [], "qwen asked after all"
        writes = nvim_agent.wire.pairs("fs/write_text_file", "<<")[writes_before:]
        assert writes and all(r is not None and r.get("result") == {} for _, r in writes), \
            writes
        assert nvim.lua("return require('louise.permission').current") is None
        nvim.prompt("MOCK-SHELL", key)
        shell: dict[str, Any] = pending_request(nvim)
        assert shell["kind"] == "execute", shell
        answer(nvim, "reject_once")
        wait_turn_over(nvim, key)
        assert not (workdir(nvim) / "shell-out.txt").exists()


@pytest.mark.parametrize("agent", ["gemini"], indirect=True)
def test_gemini_at_its_quota_is_reached(agent: RealAgent) -> None:
    """The Gemini API refuses the turn (429 RESOURCE_EXHAUSTED, a QuotaFailure on a daily
    quota, which gemini-cli does not retry): gemini ends the prompt with its JSON-RPC 429,
    which carries no reset; `louise chat` exits 75 saying so, and the limits record it as
    reached."""
    result = agent.chat("MOCK-ERROR 429")
    assert result.status == 75, str(result)
    assert "its reset time is not known" in result.stderr, str(result)
    [(_, reply)] = agent.wire.pairs("session/prompt", ">>")
    assert reply is not None and reply["error"]["code"] == 429, reply
    refused = [r for r in agent.mock.requests() if r.get("status") == 429]
    assert len(refused) == 1, "gemini retried a daily quota"
    data = agent.louise("inspect", "gemini", "--json")
    assert data.status == 0, str(data)
    [state] = json.loads(data.stdout)["agents"]
    assert state["source"] == "gemini rate-limit error", state
    [bucket] = state["snapshot"]["buckets"]
    assert (bucket["id"], bucket["reachedType"]) == ("gemini", "rate_limit"), state
    assert state["label"].startswith("limits reached"), state
