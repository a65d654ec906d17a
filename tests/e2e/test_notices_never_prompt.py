"""End to end (issue 23, item 2): notices that used to call vim.notify themselves, too long
for the command line at 80 columns or of several lines, raised the hit-enter prompt; they
now go through louise.notice. A real UI at 80×24 (`cmdheight=1`) counts the prompts: a
mistyped :LouiseAdd path, a buffer added with a long name, an undo with nothing to
restore and why, a resume listing's error picked."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.ui_screen import Screen, ui_nvim_fixture  # noqa: F401 (the fixture)

pytestmark = pytest.mark.e2e

LONG_NAME = "a_module_with_a_rather_long_name_for_the_line.py"


# A person's action is sent as a notification: nothing waits on it (Neovim answers no
# request while the hit-enter prompt waits, so the screen tells what happened).
def act(screen: Screen, command: str) -> None:
    screen.ui.notify("nvim_command", command)


def act_lua(screen: Screen, code: str, *args: Any) -> None:
    screen.ui.notify("nvim_exec_lua", code, list(args))


def bottom_once_said(screen: Screen, start: str, timeout: float = 15.0,
                     whole: Callable[[str], bool] = lambda _line: True) -> str:
    """The command line once it shows a message starting with `start` (and, `whole`,
    complete: a notice joined to the line shown a moment before comes with a redraw), or
    once the hit-enter prompt came instead (read from the screen: Neovim answers no
    request while the prompt waits)."""
    deadline = time.monotonic() + timeout
    while True:
        rows = screen.text().split("\n")
        if screen.hit_enter:
            raise AssertionError(f"{screen.hit_enter} hit-enter prompt(s):\n"
                                 + "\n\n".join(screen.hit_enter_screens))
        if rows[-1].startswith(start) and whole(rows[-1].rstrip()):
            return rows[-1]
        if time.monotonic() > deadline:
            raise AssertionError(f"the command line never said {start!r}:\n" + "\n".join(rows))
        time.sleep(0.02)


def test_context_notices_of_a_chat_never_prompt(ui_nvim: tuple[Driver, Screen]) -> None:
    nvim, screen = ui_nvim
    nvim.nvim.command("LouiseChat demo")
    nvim.wait_status("ready", timeout=60)
    nvim.nvim.command("wincmd t")  # back in the code window, as a person adding context
    act(screen, "LouiseAdd file does/not/exist/under/this/directory/" + LONG_NAME)
    said = bottom_once_said(screen, "louise: no file does/not/exist")
    assert said.rstrip().endswith("…")  # cut to the room the command line has
    nvim.lua("vim.fn.writefile({'def add(a, b):', '    return a + b'}, ...)", LONG_NAME)
    nvim.nvim.command("edit " + LONG_NAME)
    act(screen, "LouiseAdd buffer")
    bottom_once_said(screen, "louise: added buffer " + LONG_NAME[:20])
    assert screen.mode() == "n" and screen.hit_enter == 0, screen.hit_enter_screens
    whole = nvim.lua("return require('louise.notice').recent[#require('louise.notice').recent]"
                     ".text")
    assert whole == f"louise: added buffer {LONG_NAME} to the next prompt"  # :LouiseNotices


def test_an_undo_with_nothing_to_restore_says_why_on_one_line(
        ui_nvim: tuple[Driver, Screen]) -> None:
    """The engine's undo frame when nothing can be restored: a warning of several lines."""
    nvim, screen = ui_nvim
    reasons = ["hello.py: changed since the turn (edit it back by hand)",
               "notes/today.md: not in the workspace's checkpoint"]
    act_lua(screen, "require('louise.render').apply({ undo = ... })",
        {"key": "demo:1", "nothing": True, "lines": reasons, "expect": []})
    said = bottom_once_said(screen, "louise: nothing to restore · hello.py: changed")
    assert "\n" not in said
    assert screen.mode() == "n" and screen.hit_enter == 0, screen.hit_enter_screens
    whole = nvim.lua("return require('louise.notice').recent[#require('louise.notice').recent]"
                     ".text")
    assert whole.split("\n") == ["louise: nothing to restore", *reasons]


def test_a_resume_listing_error_picked_never_prompts(ui_nvim: tuple[Driver, Screen]) -> None:
    """:LouiseResume! lists an agent that could not list its sessions; the person picks
    that row (the plain picker: the first entry) and reads why."""
    nvim, screen = ui_nvim
    nvim.lua("vim.ui.select = function(items, _, on_choice) on_choice(items[1], 1) end")
    error = ("claude: the command claude-agent-acp was not found; install it with"
             " npm install -g @zed-industries/claude-agent-acp")
    act_lua(screen, "require('louise.chat.resume').pick(...)",
        {"listings": [{"agent": "claude", "error": error}]})
    said = bottom_once_said(screen, "louise: claude: the command claude-agent-acp")
    assert said.rstrip().endswith("…")
    assert screen.mode() == "n" and screen.hit_enter == 0, screen.hit_enter_screens


def test_two_notices_of_one_typed_command_are_one_line(ui_nvim: tuple[Driver, Screen]) -> None:
    """A LouiseLM name typed with no chat open: the one-time note on the name and "no chat
    here" come from one command; a second message would scroll to the hit-enter prompt."""
    nvim, screen = ui_nvim
    nvim.lua("require('louise').setup({ python = vim.env.LOUISE_PYTHON,"
             " skills = { paths = {} } })")  # a LouiseLM setting: its names are defined
    screen.ui.notify("nvim_input", ":LouiselmCancel<CR>")  # typed, as a person does
    # The second notice joins the first on its line, redrawn (the first may show alone
    # for a moment before): one line, never the hit-enter prompt.
    bottom_once_said(screen, "louise: :LouiselmCancel is :LouiseCancel in louise",
                     whole=lambda line: " · no chat here" in line or line.endswith("…"))
    assert screen.mode() == "n" and screen.hit_enter == 0, screen.hit_enter_screens
    texts = nvim.lua("return vim.tbl_map(function(n) return n.text end,"
                     " require('louise.notice').recent)")
    assert texts[-2:] == ["louise: :LouiselmCancel is :LouiseCancel in louise (this note once)",
                          "louise: no chat here; :LouiseChat opens one"], texts


def test_a_key_ignored_by_the_new_permission_float_says_press_it_again_whole(
        ui_nvim: tuple[Driver, Screen]) -> None:
    """The float ignores answering keys for a moment after it opens; what to do about it
    (press it again) is read whole on the 80-column command line, not cut off."""
    nvim, screen = ui_nvim
    request = {
        "id": 3, "agent": "demo", "kind": "edit", "position": 1, "total": 1,
        "title": "Edit hello.py", "paths": [], "diff": [], "diffs": [],
        "options": [{"id": "a", "name": "Allow once", "kind": "allow_once"},
                    {"id": "r", "name": "Reject", "kind": "reject_once"}],
    }
    nvim.lua("local p = require('louise.permission'); p.GRACE_MS = 1e9;"
             " p.show(vim.json.decode(...))", json.dumps(request))
    screen.ui.notify("nvim_input", "1")
    said = bottom_once_said(screen, "louise: key ignored")
    # The float has no statusline: its ruler is on the command line, after the message.
    message, _, ruler = said.partition("press it again")
    assert ruler and ruler.strip().endswith("All"), said
    assert "…" not in message, said
    assert screen.hit_enter == 0, screen.hit_enter_screens
    assert nvim.lua("return require('louise.permission').current ~= nil")  # still waiting
    # A longer notice while the float is current is cut before that ruler.
    act_lua(screen, "require('louise.notice').notify(...)",
            "louise: demo Requests 5h window: out after ~3m of work at this pace (resets in 4h)")
    said = bottom_once_said(screen, "louise: demo Requests 5h")
    message, _, ruler = said.partition("…")
    assert ruler and ruler.strip().endswith("All") and len(message) < 61, said
