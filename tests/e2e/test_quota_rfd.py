"""Issue 26 end to end in a real headless Neovim, with an agent that speaks only the ACP
quota RFD (tests/fakes/rfd_quota_agent.py): the statusline before the first prompt (its
`quota/read` at start), the turn's cost on its end line, `:LouiseLimits` with the source,
the pools' state words and what turns used; a turn likely to hit a limit asks for a second
send; a refused turn parks ("parked until 17:02 (limit reached)" in the winbar), is sent
again at the reset with the queue behind it, and `:LouiseUnpark` drops one. Expected
figures come from the fake's account file."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Driver

pytestmark = pytest.mark.e2e

FAKE = Path(__file__).resolve().parents[1] / "fakes" / "rfd_quota_agent.py"
LABEL = "local l = require('louise.limits').labels.rfd; return l"
WINBAR = ("local c = require('louise.chat'); local s = c.chats[c.last];"
          " local w = vim.fn.win_findbuf(s.buf)[1];"
          " return vim.api.nvim_eval_statusline(vim.wo[w].winbar,"
          " {winid = w, use_winbar = true}).str")
PROMPT_BAR = ("local c = require('louise.chat'); local s = c.chats[c.last];"
              " local w = vim.fn.win_findbuf(s.prompt)[1];"
              " return vim.api.nvim_eval_statusline(vim.wo[w].winbar,"
              " {winid = w, use_winbar = true}).str")


def edit_account(path: Path, **changes: Any) -> None:
    """Change the fake's account file under its lock, as the fake itself does."""
    import fcntl

    with path.open("a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        text = handle.read()
        data = json.loads(text) if text.strip() else {}
        data.update(changes)
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(data))


def prompts(path: Path) -> list[tuple[str, str]]:
    if not path.exists():
        return []
    return [(entry["text"], entry["outcome"]) for entry in
            (json.loads(line) for line in path.read_text().splitlines() if line.strip())]


def send(nvim: Driver, text: str) -> None:
    """Type a prompt and press send, without waiting for a turn."""
    nvim.lua("local c = require('louise.chat'); local k = c.last;"
             " vim.api.nvim_buf_set_lines(c.chats[k].prompt, 0, -1, false, {...});"
             " c.submit(k)", text)


def test_an_rfd_agent_in_neovim(nvim: Driver, tmp_path: Path) -> None:
    account, log = tmp_path / "account.json", tmp_path / "prompts.log"
    nvim.nvim.command("set columns=200")  # room for the whole winbar
    env = {"FAKE_ACCOUNT": str(account), "FAKE_PROMPT_LOG": str(log)}
    nvim.lua("require('louise').setup({python = vim.env.LOUISE_PYTHON, default_agent = 'rfd',"
             " agents = {rfd = {command = select(1, ...), args = {'-P', (select(2, ...))},"
             " env = select(3, ...)}}})", sys.executable, str(FAKE), env)
    nvim.nvim.command("LouiseChat rfd")
    nvim.wait("return require('louise.chat').last")
    nvim.wait_status("ready")
    # Before any prompt: the figures of the agent's `quota/read` at its start.
    label = nvim.wait(LABEL + " and l[1]:find('/7d', 1, true)"
                      " and not l[1]:find('loading', 1, true) and l")
    assert label[0].startswith("limits 76%/5h ↻2h 87%/7d") and label[1] == "ok"

    nvim.submit("hello")
    nvim.wait(LABEL + " and l[1]:find('71%/5h', 1, true)")
    assert "used 5% of the 5h window, 1% of the 7d window" in nvim.chat_text()

    nvim.nvim.command("LouiseLimits rfd")
    view = nvim.wait("local l = require('louise.limits');"
                     " if not (l.win and vim.api.nvim_win_is_valid(l.win)) then return false end;"
                     " local lines = vim.api.nvim_buf_get_lines(l.buf, 0, -1, false);"
                     " return table.concat(lines, '\\n'):find('What turns used', 1, true)"
                     " and lines")
    # Opening the view reads again (`quota/read` with the chat's session).
    assert "Source: quota_update" in view or "Source: quota/read" in view
    assert "### Extra usage (extra_usage) · not enabled" in view
    assert any(line.startswith("- 5-hour limit (five_hour): 29% used") for line in view)
    assert any(line.startswith("Session ") and "5% of the Plan usage 5h window" in line
               for line in view), view
    nvim.nvim.command("close")

    # A refused turn parks until the reset, then goes again; the queue waits behind it.
    edit_account(account, blockNext=3)
    send(nvim, "parked one")
    bar = nvim.wait("local s = (function() " + WINBAR + " end)();"
                    " return s:find('parked until', 1, true) and s")
    assert "(limit reached)" in bar
    send(nvim, "queued behind")
    nvim.wait("local s = (function() " + WINBAR + " end)();"
              " return not s:find('parked', 1, true)", timeout=30)
    nvim.wait("local c = require('louise.chat'); return c.chats[c.last].status.turns_done >= 4",
              timeout=30)
    assert prompts(log)[1:] == [("parked one", "refused"), ("parked one", "answered"),
                                ("queued behind", "answered")]

    # A turn likely to hit the limit: the first send says why, the second sends.
    edit_account(account, used5h=91.0)
    nvim.submit("to ninety-six")
    # The figures after that turn (4 % left) with their risk: an older label can still
    # carry one (the refusal above), and one pushed while the figures are read again has
    # none (only fresh figures count): a send then would go without asking.
    nvim.wait(LABEL + " and l[1]:find('limits 4%/5h', 1, true) and l[3] ~= nil")
    send(nvim, "risky")
    prompt_bar = nvim.wait("local s = (function() " + PROMPT_BAR + " end)();"
                           " return s:find('send again', 1, true) and s")
    assert "5h window has 4% left" in prompt_bar
    assert prompts(log)[-1][0] == "to ninety-six"  # not sent yet
    before = nvim.turns_done()
    nvim.lua("local c = require('louise.chat'); c.submit(c.last)")
    nvim.wait("return require('louise.chat').chats[require('louise.chat').last]"
              ".status.turns_done > ...", before)
    assert prompts(log)[-1] == ("risky", "answered")

    # :LouiseUnpark: the parked prompt is not sent again.
    edit_account(account, blockNext=600, used5h=10.0)
    send(nvim, "dropped")  # the label still has 100 % used: it asks first
    nvim.lua("local c = require('louise.chat'); c.submit(c.last)")
    nvim.wait("local s = (function() " + WINBAR + " end)(); return s:find('parked', 1, true)")
    nvim.nvim.command("LouiseUnpark")
    nvim.wait("local s = (function() " + WINBAR + " end)();"
              " return not s:find('parked', 1, true)")
    assert [p for p in prompts(log) if p[0] == "dropped"] == [("dropped", "refused")]
