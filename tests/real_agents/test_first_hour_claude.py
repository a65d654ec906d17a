"""Issue 23's acceptance with real claude-agent-acp, its model API refusing connections, in
a real Neovim at 80×24 (`cmdheight=1`): the chat is on screen while claude starts, a prompt
typed meanwhile goes once its session is ready, the cursor stays where the person went,
and nothing raises a hit-enter prompt while claude retries (the turn is cancelled: how
long claude retries is not this test's business)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.e2e.conftest import Driver
from tests.e2e.ui_screen import Screen, ui_nvim_fixture  # noqa: F401 (the fixture)
from tests.real_agents.conftest import RealAgent
from tests.real_agents.harness import louise_config
from tests.real_agents.install import Installed

START = 180.0


def refused_url() -> str:
    """An address where nothing listens: a port bound and closed again."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("nvim_agent", ["claude"], indirect=True)
def test_claude_starting_with_its_api_refused_is_never_in_the_way(
        nvim_agent: RealAgent, installed: Installed,
        agent_envs: dict[str, dict[str, str]], request: pytest.FixtureRequest) -> None:
    env = dict(agent_envs["claude"], ANTHROPIC_BASE_URL=refused_url())
    nvim_agent.config_path.write_text(louise_config(
        {"claude": (installed.agents["claude"], env)}, nvim_agent.wire_dir,
        default_agent="claude"))
    nvim, screen = request.getfixturevalue("ui_nvim")
    assert isinstance(nvim, Driver) and isinstance(screen, Screen)
    work = Path(str(nvim.lua("return vim.fn.getcwd()")))
    (work / "code.py").write_text("def add(a, b):\n    return a + b\n")
    nvim.nvim.command("edit code.py")
    code_win = nvim.lua("return vim.api.nvim_get_current_win()")

    nvim.nvim.command("LouiseChat claude")
    screen.wait_for("… starting claude · ")  # before claude answered anything
    nvim.nvim.input("ihello from the start<Esc>")
    nvim.wait("return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] == 'hello from the start'"
              " and vim.api.nvim_get_mode().mode == 'n'")
    nvim.nvim.input("<CR>")
    nvim.wait("return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] == ''")
    nvim.lua("vim.api.nvim_set_current_win(...)", code_win)

    key = str(nvim.wait("local c = require('louise.chat'); return c.last and"
                        " c.last:find('^claude:') and c.last", timeout=START))
    nvim.wait_status("prompting", key, timeout=START)  # the prompt went, claude retries
    assert "hello from the start" in nvim.chat_text(key)
    assert nvim.lua("return vim.api.nvim_get_current_win()") == code_win
    nvim.nvim.command("LouiseChat claude")
    nvim.nvim.command("LouiseCancel")
    nvim.wait_status("ready", key, timeout=START)
    assert nvim.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)",
                    nvim.lua("return vim.api.nvim_win_get_buf(...)", code_win)) == [
        "def add(a, b):", "    return a + b"]
    assert screen.hit_enter == 0, screen.hit_enter_screens
