"""The session host (`[host] mode = "auto"`) in front of real agents against the mock
model: two headless Neovims and a `louise chat --attach` on one host see the same streamed
reply; a permission request answered from the second Neovim is answered for the first,
which says so; a turn goes on when its Neovim quits, and a new Neovim that opens it with
:LouiseResume sees the finished reply once. tests/e2e/test_serve.py does the same with the demo
agent; here what the real agents do differently (their ids, updates before the
session/new answer, permission shapes) goes through the host."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvim
import pytest

from tests.e2e.conftest import ROOT, Driver, load_chat, nvim_binary, wait_chat_line
from tests.integration.cli_helpers import Running
from tests.integration.serve_clients import host_pids
from tests.real_agents.conftest import RealAgent, make_real_agent
from tests.real_agents.harness import MockModel
from tests.real_agents.install import Installed
from tests.real_agents.model_api.scenario import SLOW_PIECES
from tests.real_agents.test_nvim import (
    NEW_TEXT,
    OLD_TEXT,
    REPLY_END,
    REPLY_START,
    START,
    answer,
    open_chat,
    pending_request,
    pick_session_on_select,
)

# The agents whose sessions go through the host here (FULL: each a whole real agent per
# test on a loaded machine).
SERVE_AGENTS = ("claude", "codex", "vibe")
TERMINAL_AGENTS = ("claude", "codex")  # they report their commands' terminal output
ANSWERED_ELSEWHERE = "answered in another window: allowed once — by Neovim (pid "
HOST_CONFIG = '\n[host]\nmode = "auto"\nidle_exit = 300\n'


class Place:
    """One person's machine for one test: a real agent's config with `[host] mode =
    "auto"`, a private state directory of the test's own (so the host's socket is the
    test's), and the Neovims, CLIs and host started there."""

    def __init__(self, real: RealAgent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        # Short: a socket's address is bounded (and found by the host's command line).
        state = Path(tempfile.mkdtemp(prefix="lsreal", dir="/tmp"))
        with real.config_path.open("a", encoding="utf-8") as config:
            config.write(HOST_CONFIG)
        self.real = dataclasses.replace(real, state_dir=state)
        self.state = state
        for name in ("CONFIG", "DATA", "STATE", "CACHE"):
            monkeypatch.setenv(f"XDG_{name}_HOME", str(tmp_path / f"xdg-{name.lower()}"))
        monkeypatch.setenv("LOUISE_STATE_DIR", str(state))
        monkeypatch.setenv("LOUISE_CONFIG", str(real.config_path))
        monkeypatch.setenv("LOUISE_PLUGIN_ROOT", str(ROOT))
        monkeypatch.setenv("LOUISE_PYTHON", sys.executable)
        self.work = real.workspace
        self.socket = state / "host" / "host.sock"
        self.sessions: list[Any] = []
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def name(self) -> str:
        return self.real.name

    def neovim(self) -> Driver:
        """A headless Neovim with only louise, its setup{} without `host`: the config's
        `[host]` decides."""
        argv = [nvim_binary(), "--embed", "--headless", "-u",
                str(ROOT / "tests" / "e2e" / "minimal_init.lua"), "-i", "NONE"]
        session = pynvim.attach("child", argv=argv)
        self.sessions.append(session)
        session.command(f"cd {self.work}")
        return Driver(session)

    def attach_cli(self, session_id: str) -> Running:
        cli = Running("chat", "--agent", self.name, "--attach", session_id, "--cwd",
                      str(self.work), env=dict(os.environ))
        self.processes.append(cli.process)
        return cli

    def quit(self, nvim: Driver) -> None:
        with contextlib.suppress(Exception):  # Neovim exits while answering
            nvim.nvim.command("qa!")
        self.sessions.remove(nvim.nvim)

    def hosts(self) -> list[int]:
        """The host processes serving this test's socket."""
        return host_pids(self.socket)

    def close(self) -> None:
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        for session in self.sessions:
            with contextlib.suppress(Exception):
                session.command("qa!")
        for pid in self.hosts():
            # The host started its agents in process groups of their own: end those too.
            for child in _children(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.state, ignore_errors=True)


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(word) for word in text.split()]


@pytest.fixture
def place(request: pytest.FixtureRequest, tmp_path: Path, installed: Installed,
          mock_model: MockModel, agent_envs: dict[str, dict[str, str]],
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Place]:
    real = make_real_agent(str(request.param), tmp_path / "real", installed, mock_model,
                           agent_envs)
    where = Place(real, tmp_path, monkeypatch)
    try:
        yield where
    finally:
        where.close()




@pytest.mark.parametrize("place", SERVE_AGENTS, indirect=True)
def test_two_neovims_and_a_cli_share_the_stream_and_the_second_answers(place: Place) -> None:
    first = place.neovim()
    key = open_chat(first, place.name)
    assert len(place.hosts()) == 1, "the first Neovim started the host"
    second = place.neovim()
    load_chat(second, key, place.work, START)
    second.wait_status("ready", key, timeout=START)
    cli = place.attach_cli(key.partition(":")[2])
    first.submit("hello through the host", key, timeout=START)
    for nvim in (first, second):
        wait_chat_line(nvim, key, REPLY_END.split(";")[0], START)
        text = nvim.chat_text(key)
        assert text.count(REPLY_START) == 1, text
    for nvim in (first, second):  # the first's prompt, once (vibe echoes it back)
        assert nvim.chat_lines(key).count("hello through the host") == 1, nvim.chat_text(key)
    # The CLI saw the same stream, whole: attached while the reply streamed (the CLI
    # starts beside the prompt), the reply's line goes on after what the CLI showed first.
    cli.wait_for(REPLY_END, timeout=START)
    # An edit: both Neovims are asked, the second answers.
    target = place.work / "notes.txt"
    target.write_text(OLD_TEXT)
    first.prompt(f"MOCK-EDIT {target}", key)
    asked = [pending_request(nvim) for nvim in (first, second)]
    assert asked[0]["kind"] == asked[1]["kind"] == "edit", asked
    answer(second, "allow_once")
    wait_chat_line(first, key, ANSWERED_ELSEWHERE, START)
    first.wait("return require('louise.permission').current == nil", timeout=START)
    for nvim in (first, second):
        wait_chat_line(nvim, key, "Done with the edit scenario.", START)
    first.wait_status("ready", key, timeout=START)
    assert target.read_text() == NEW_TEXT  # allowed from the second, written once
    [(_, reply)] = place.real.wire.permission_answers()  # the agent was answered once
    assert reply is not None and reply["result"]["outcome"]["outcome"] == "selected", reply
    cli.wait_for(ANSWERED_ELSEWHERE, stderr=True, timeout=START)
    cli.interrupt()  # detach
    _code, out, err = cli.finish(timeout=START)
    assert out.count(REPLY_START) == 1, f"stdout:\n{out}\nstderr:\n{err}"
    assert f"MOCK-EDIT {target}" in err, err  # the first's prompt, in the same stream
    assert len(place.real.session_ids()) == 1, "one session at the agent, shared"
    assert len(place.hosts()) == 1


@pytest.mark.parametrize("place", SERVE_AGENTS, indirect=True)
def test_a_turn_goes_on_when_its_neovim_quits_and_a_new_one_sees_it_once(
        place: Place) -> None:
    # Every agent here, whether or not it can load a session itself: the host holds the
    # session live and answers the new Neovim's load from its own history (an agent's
    # own load matters only after a host is gone, tested with the demo agent).
    first = place.neovim()
    key = open_chat(first, place.name)
    first.prompt("MOCK-SLOW please take your time", key)  # 60 pieces, 0.25 s apart
    wait_chat_line(first, key, "slow chunk 3.", START)
    [host] = place.hosts()
    place.quit(first)
    later = place.neovim()
    pick_session_on_select(later, key.partition(":")[2])  # the person picks it
    later.nvim.command(f"LouiseResume {place.name}")
    later.wait("return require('louise.chat').chats[...] ~= nil", key, timeout=START)
    offered = later.lua("return _G.louise_test_offered")
    assert [item["id"] for item in offered].count(key.partition(":")[2]) == 1, offered
    last = f"slow chunk {SLOW_PIECES - 1}."
    wait_chat_line(later, key, last, START)  # the turn finished without its Neovim
    wait_chat_line(later, key, "the turn prompted in another window ended", START)
    text = later.chat_text(key)
    assert text.count("slow chunk 3.") == 1, text  # what happened meanwhile, once
    assert text.count(last) == 1, text
    assert text.count("MOCK-SLOW please take your time") == 1, text
    assert place.real.stop_reasons() == ["end_turn"], "the turn was not cancelled"
    assert place.hosts() == [host]


def tool_lines(nvim: Driver, key: str, kind: str) -> list[str]:
    return [line for line in nvim.chat_lines(key) if line.lstrip()[2:].startswith(f"{kind}: ")]


# vibe runs its commands without a terminal to show (its tool line ends `· completed`):
# nothing of the host's terminal path to see there.
@pytest.mark.parametrize("place", TERMINAL_AGENTS, indirect=True)
def test_a_command_the_agent_runs_is_seen_to_its_end_by_both_neovims(place: Place) -> None:
    """claude and codex run commands themselves and report them in the updates'
    `_meta.terminal_output_delta` / `terminal_exit` (the host advertises them): both
    Neovims see the command's line end with its exit status."""
    first = place.neovim()
    key = open_chat(first, place.name)
    second = place.neovim()
    load_chat(second, key, place.work, START)
    first.prompt("MOCK-SHELL", key)
    answer(first, "allow_once")
    for nvim in (first, second):
        wait_chat_line(nvim, key, "Done with the shell scenario.", START)
        nvim.wait("local s = require('louise.chat').chats[select(1, ...)];"
                  " for _, l in ipairs(vim.api.nvim_buf_get_lines(s.buf, 0, -1, false)) do"
                  " if l:find('execute: ', 1, true) and l:find('exit 0', 1, true) then"
                  " return true end end; return false", key, timeout=START)
        [line] = tool_lines(nvim, key, "execute")
        assert line.endswith("· exit 0"), line
    second.wait("return require('louise.permission').current == nil", timeout=START)
    for nvim in (first, second):  # the command's output, in each Neovim's terminal buffer
        output = nvim.wait(
            "local term = require('louise.terminal'); local out = {};"
            " for id, t in pairs(term.terms) do local marks = term.markers(id);"
            " local text = table.concat(vim.api.nvim_buf_get_lines(t.buf, 0, -1, false), '\\n');"
            " if text:find('hello-from-shell', 1, true) and marks.exit == '[exit 0]' then"
            " out[#out + 1] = text end end; return #out > 0 and out", timeout=START)
        assert len(output) == 1, output


@pytest.mark.parametrize("place", SERVE_AGENTS, indirect=True)
def test_a_question_asked_after_its_neovim_quit_is_answered_from_the_next(
        place: Place) -> None:
    first = place.neovim()
    key = open_chat(first, place.name)
    target = place.work / "notes.txt"
    target.write_text(OLD_TEXT)
    first.prompt(f"MOCK-EDIT {target}", key)
    pending_request(first)
    place.quit(first)
    later = place.neovim()
    load_chat(later, key, place.work, START)
    request = pending_request(later)
    assert request["kind"] == "edit" and str(target) in request["paths"], request
    header = later.lua("return vim.api.nvim_buf_get_lines("
                       "vim.api.nvim_win_get_buf(require('louise.permission').win), 0, 1,"
                       " false)[1]")
    assert "while no window was attached" in header, header
    answer(later, "allow_once")
    wait_chat_line(later, key, "Done with the edit scenario.", START)
    assert target.read_text() == NEW_TEXT
    [(_, reply)] = place.real.wire.permission_answers()  # asked once, answered once
    assert reply is not None and reply["result"]["outcome"]["outcome"] == "selected", reply
