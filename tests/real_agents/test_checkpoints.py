"""Review and undo every turn, with real agents against the mock model (issue 27's
acceptance): claude's own edit tool and codex's apply_patch in Neovim, a MOCK-SHELL
command through `louise chat`. The review lists exactly the files the turn changed, a
hunk taken back leaves the rest of the file, an undo restores bytes, the person's own
save during the turn survives it, and a file a shell command wrote is tracked.

A turn of two hunks in one file (MOCK-EDIT2: claude's and vibe's two edit calls through
`louise chat`, taken back with the checkpoint store; codex's one apply_patch of two hunks,
taken back in Neovim's review): one hunk taken back leaves the other applied and the rest
of the file byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Driver
from tests.real_agents.conftest import RealAgent
from tests.real_agents.model_api.tools import TWO_HUNKS

OLD_TEXT = "first\nold line\n" + "".join(f"filler {n}\n" for n in range(10)) + "last\n"
NEW_TEXT = OLD_TEXT.replace("old line\n", "new line by mock\n")
(FIRST_OLD, FIRST_NEW), (SECOND_OLD, SECOND_NEW) = TWO_HUNKS
START = 180.0  # a real agent's first session on a loaded machine
TURN_OVER = ("local s = require('louise.chat').chats[...];"
             " return s and s.status and s.status.turn > 0"
             " and s.status.turns_done == s.status.turn")
CHANGES_LINE = ("local s = require('louise.chat').chats[...];"
                " for _, l in ipairs(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false)) do"
                " if l:find('^± ') then return l end end")
REVIEW = ("for _, b in ipairs(vim.api.nvim_list_bufs()) do"
          " if vim.api.nvim_buf_get_name(b):find('^louise%-review://') then"
          " return vim.api.nvim_buf_get_lines(b, 0, -1, false) end end")


def two_hunk_text(first: str, second: str, middle: str = "between 10") -> str:
    """MOCK-EDIT2's file: its two lines 20 unchanged lines apart (two hunks, not one)."""
    between = "".join(f"{middle if n == 10 else f'between {n}'}\n" for n in range(20))
    return f"head\n{first}\n{between}{second}\ntail\n"


def open_chat(nvim: Driver, agent: str) -> str:
    nvim.nvim.command(f"LouiseChat {agent}")
    key = str(nvim.wait("return require('louise.chat').last", timeout=START))
    nvim.wait_status("ready", key, timeout=START)
    return key


def allow_once(nvim: Driver) -> None:
    nvim.wait("return require('louise.permission').current ~= nil", timeout=START)
    options: list[dict[str, Any]] = nvim.lua("return require('louise.permission').current"
                                             ".options")
    number = next(i for i, option in enumerate(options, 1) if option["kind"] == "allow_once")
    nvim.permission_key(str(number))


def reviewed_files(review: list[str]) -> list[str]:
    """The file lines of a review (`modified notes.txt (+1 −1)`)."""
    return [line for line in review if line.split(" ", 1)[0] in ("modified", "added",
                                                                  "removed", "noted")]


def hunk_headers(review: list[str]) -> list[str]:
    return [line for line in review if line.startswith("@@ ")]


def revert_through_the_store(agent: RealAgent, path: str, hunk: int) -> str:
    """Take hunk `hunk` of the newest turn back with the checkpoint store (what the
    editor's review does in the engine), from the agent's louise state directory."""
    from louise.checkpoints.git import find_git
    from louise.checkpoints.records import pick_turn
    from louise.checkpoints.store import find_workspace
    from louise.checkpoints.workspace import WorkspaceStore
    from louise.config.checkpoints import CheckpointsConfig

    root = agent.state_dir / "checkpoints"
    workspace = find_workspace(root, agent.workspace.resolve())
    assert workspace is not None, f"no checkpoints under {root}"
    store = WorkspaceStore(root, workspace, CheckpointsConfig(), find_git())
    return store.revert_hunk(pick_turn(store.read_state()), path, hunk)


@pytest.mark.parametrize("nvim_agent", ["claude"], indirect=True)
def test_claudes_edit_is_reviewed_and_undone_and_the_persons_save_stays(
        nvim_agent: RealAgent, agent_nvim: Driver) -> None:
    nvim = agent_nvim
    work = Path(str(nvim.lua("return vim.fn.getcwd()")))
    notes, mine = work / "notes.txt", work / "mine.txt"
    notes.write_text(OLD_TEXT)
    mine.write_text("mine\n")
    key = open_chat(nvim, "claude")
    mine_buf = int(nvim.lua("vim.cmd('topleft split ' .. vim.fn.fnameescape(...));"
                            " return vim.fn.bufnr(...)", str(mine)))
    nvim.prompt(f"MOCK-EDIT {notes}", key)
    nvim.wait("return require('louise.permission').current ~= nil", timeout=START)
    # The person saves a file of their own while claude waits for the permission.
    nvim.lua("vim.api.nvim_buf_set_lines(..., 0, -1, false, {'mine, edited during the turn'});"
             " vim.api.nvim_buf_call(..., function() vim.cmd('silent write') end)", mine_buf)
    allow_once(nvim)
    nvim.wait(TURN_OVER, key, timeout=START)
    assert notes.read_text() == NEW_TEXT
    assert nvim.wait(CHANGES_LINE, key, timeout=60) == "± 1 file changed (+1 −1) · review"
    nvim.nvim.command("LouiseReview")
    review = nvim.wait(REVIEW)
    assert reviewed_files(review) == ["modified notes.txt (+1 −1)"], review
    assert "-old line" in review and "+new line by mock" in review
    nvim.lua("_G.asked = {}; local answers = {'undo', 'no'};"
             " vim.ui.select = function(items, opts, done)"
             " table.insert(_G.asked, opts.prompt); local want = table.remove(answers, 1);"
             " for _, item in ipairs(items) do if item.id == want then return done(item) end"
             " end; done(nil) end")
    nvim.nvim.command("LouiseUndo")
    nvim.wait("return #_G.asked >= 2", timeout=60)
    assert "  revert notes.txt" in nvim.lua("return _G.asked[1]")
    assert notes.read_bytes() == OLD_TEXT.encode(), "restored byte for byte"
    assert mine.read_text() == "mine, edited during the turn\n", "the person's save stays"


@pytest.mark.parametrize("agent", ["claude", "vibe"], indirect=True)
def test_two_edit_calls_are_two_hunks_and_one_goes_back_alone(agent: RealAgent) -> None:
    notes = agent.workspace / "notes.txt"
    notes.write_text(two_hunk_text(FIRST_OLD, SECOND_OLD))
    result = agent.chat(f"MOCK-EDIT2 {notes}", "edit")  # each edit call allowed once
    assert result.status == 0, str(result)
    assert notes.read_text() == two_hunk_text(FIRST_NEW, SECOND_NEW)
    assert "[changes] 1 file changed (+2 \u22122) · louise review" in result.stderr, str(result)
    review = agent.louise("review")
    assert review.status == 0, str(review)
    lines = review.stdout.splitlines()
    assert reviewed_files(lines) == ["modified notes.txt (+2 \u22122)"], review.stdout
    assert len(hunk_headers(lines)) == 2, review.stdout
    assert revert_through_the_store(agent, "notes.txt", 0) == "notes.txt: hunk taken back"
    assert notes.read_bytes() == two_hunk_text(FIRST_OLD, SECOND_NEW).encode()
    again = agent.louise("review")
    assert again.status == 0, str(again)
    first, second = hunk_headers(again.stdout.splitlines())
    assert first.endswith(" (reverted since)") and "since" not in second, again.stdout


@pytest.mark.parametrize("nvim_agent", ["codex"], indirect=True)
def test_codexs_two_hunk_patch_one_hunk_goes_back_in_the_review(
        nvim_agent: RealAgent, agent_nvim: Driver) -> None:
    nvim = agent_nvim
    work = Path(str(nvim.lua("return vim.fn.getcwd()")))
    notes = work / "notes.txt"
    notes.write_text(two_hunk_text(FIRST_OLD, SECOND_OLD))
    key = open_chat(nvim, "codex")
    nvim.prompt(f"MOCK-EDIT2 {notes}", key)
    allow_once(nvim)  # one apply_patch, one permission
    nvim.wait(TURN_OVER, key, timeout=START)
    assert notes.read_text() == two_hunk_text(FIRST_NEW, SECOND_NEW)
    assert nvim.wait(CHANGES_LINE, key, timeout=60) == "± 1 file changed (+2 −2) · review"
    # The person changes a line between the hunks after the turn: it stays too.
    person = "between 10, changed by the person"
    notes.write_text(two_hunk_text(FIRST_NEW, SECOND_NEW, person))
    nvim.nvim.command("LouiseReview")
    review = nvim.wait(REVIEW)
    assert reviewed_files(review) == ["modified notes.txt (+2 −2)"], review
    assert len(hunk_headers(review)) == 2, review
    assert f"+{FIRST_NEW}" in review and f"+{SECOND_NEW}" in review
    nvim.nvim.input("]cr")  # the review opens on the first hunk: the second one goes back
    nvim.wait("local f = io.open((select(1, ...))); local t = f:read('*a'); f:close();"
              " return t == select(2, ...)", str(notes),
              two_hunk_text(FIRST_NEW, SECOND_OLD, person), timeout=60)
    # The review, shown again, has the first hunk applied and the second one reverted.
    nvim.wait("for _, v in pairs(require('louise.review').views) do local s = {};"
              " for _, h in ipairs(v.data.files[1].hunks) do table.insert(s, h.state) end;"
              " return table.concat(s, ' ') == 'applied reverted' end", timeout=60)
    assert notes.read_bytes() == two_hunk_text(FIRST_NEW, SECOND_OLD, person).encode()


@pytest.mark.parametrize("agent", ["codex"], indirect=True)
def test_a_file_a_shell_command_wrote_is_tracked_and_undone(agent: RealAgent) -> None:
    (agent.workspace / "README.md").write_text("unchanged\n")
    result = agent.chat("MOCK-SHELL", "execute")
    assert result.status == 0, str(result)
    assert (agent.workspace / "shell-out.txt").read_text() == "hello-from-shell\n"
    assert "[changes] 1 file changed (+1 \u22120) · louise review" in result.stderr, str(result)
    review = agent.louise("review")
    assert review.status == 0, str(review)
    assert reviewed_files(review.stdout.splitlines()) == ["added shell-out.txt (+1 \u22120)"]
    assert "+hello-from-shell" in review.stdout.splitlines()
    undo = agent.louise("undo", "--yes")
    assert undo.status == 0, str(undo)
    assert not (agent.workspace / "shell-out.txt").exists()
    assert (agent.workspace / "README.md").read_text() == "unchanged\n"
