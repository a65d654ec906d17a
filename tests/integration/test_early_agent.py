"""The first chat's agent started early (`python -m louise.nvim` before its imports:
louise/nvim/early_agent.py) is adopted by the registry when the configuration starts
exactly it, and stopped (its process group) every other way: another command configured,
a bad configuration, a first command that starts no agent, the engine's process leaving.
Real subprocess agents: the demo agent, tests/fakes/script_agent.py, a shell that
ignores the end of its stdin."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.acp.spawn import EarlyAgent
from louise.config.loading import load_config_mapping
from louise.nvim import early_agent
from louise.nvim.engine import Engine
from louise.registry import SessionRegistry
from tests.integration.agents import FAKES, wait_until
from tests.integration.test_registry import agent_texts
from tests.unit.test_nvim_engine import FakeNeovim, on_loop

SCRIPT = str(FAKES / "script_agent.py")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def script_agent(**env: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [SCRIPT], "env": env}


def start_early(monkeypatch: pytest.MonkeyPatch, hint: dict[str, Any]) -> EarlyAgent:
    """What `python -m louise.nvim` does first, with Lua's hint in its environment."""
    monkeypatch.setenv(early_agent.ENV_VAR, json.dumps(hint))
    early = early_agent.start_from_environment()
    assert early_agent.ENV_VAR not in os.environ  # agents never inherit it
    assert early is not None and alive(early.pid)
    return early


@pytest.fixture(autouse=True)
def no_early_left() -> Any:
    yield
    early_agent.stop_started()


def registry_for(options: dict[str, Any], early: EarlyAgent | None) -> SessionRegistry:
    return SessionRegistry(load_config_mapping(options), grace_seconds=0.5, limits_cache=None,
                           permission_memory=None, transcripts_dir=None,
                           early_agent=early_agent.take_started() if early else None)


@pytest.mark.anyio
async def test_the_early_agent_is_adopted_when_the_configuration_starts_exactly_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agents = {"script": script_agent(FAKE_NOTE="x")}
    early = start_early(monkeypatch, {"setup": True, "agents": agents})
    async with registry_for({"agents": agents}, early) as reg:
        session = await reg.new_session("script", str(tmp_path))
        connection = reg.runtime("script").connection
        assert connection is not None
        assert connection.process.pid == early.pid and early.state == "taken"
        steps = [{"update": {"sessionUpdate": "agent_message_chunk",
                             "content": {"type": "text", "text": "through the adopted pipes"}}}]
        with anyio.fail_after(30):
            assert await reg.prompt(session.session_id, json.dumps(steps)) == "end_turn"
        assert "through the adopted pipes" in agent_texts(reg, session.session_id)
    # Stopped as one louise spawned: the group is gone, its status read.
    assert not alive(early.pid)
    assert early.popen.returncode is not None


@pytest.mark.anyio
async def test_an_adopted_agents_stderr_and_exit_are_read_as_a_spawned_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What it wrote to stderr before it was adopted and after is in its ring
    (:LouiseLog); its exit ends the connection with its status."""
    agents = {"script": {"command": "/bin/sh", "args": [
        "-c", f"echo said before adoption >&2; exec {sys.executable} {SCRIPT}"]}}
    early = start_early(monkeypatch, {"setup": True, "agents": agents})
    async with registry_for({"agents": agents}, early) as reg:
        session = await reg.new_session("script", str(tmp_path))
        connection = reg.runtime("script").connection
        assert connection is not None and connection.process.pid == early.pid
        await wait_until(lambda: "said before adoption" in connection.process.stderr.tail())
        os.kill(early.pid, signal.SIGTERM)
        with anyio.fail_after(30):
            assert await connection.process.wait_exited() == -signal.SIGTERM
        await wait_until(lambda: reg.session(session.session_id).status == "error")
        assert "said before adoption" in "\n".join(reg.agent_log("script"))


@pytest.mark.anyio
async def test_the_demo_agent_is_started_early_when_nothing_is_configured(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOUISE_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("LOUISE_STATE_DIR", str(tmp_path / "state"))
    early = start_early(monkeypatch, {"setup": False})
    async with registry_for({}, early) as reg:
        session = await reg.new_session("demo", str(tmp_path))
        connection = reg.runtime("demo").connection
        assert connection is not None and connection.process.pid == early.pid
        with anyio.fail_after(30):
            assert await reg.prompt(session.session_id, "hello") == "end_turn"
        assert agent_texts(reg, session.session_id)
        # Its stderr is drained into the ring as a spawned agent's is.
        assert connection.process.exit_status is None
    assert not alive(early.pid)


@pytest.mark.anyio
async def test_another_configured_command_kills_the_early_agent_and_spawns_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Lua guessed from one setup{}; the configuration the engine validates says otherwise.
    early = start_early(monkeypatch, {"setup": True, "agents": {
        "script": script_agent(FAKE_NOTE="guessed")}})
    options = {"agents": {"script": script_agent(FAKE_NOTE="configured")}}
    async with registry_for(options, early) as reg:
        session = await reg.new_session("script", str(tmp_path))
        connection = reg.runtime("script").connection
        assert connection is not None and connection.process.pid != early.pid
        assert early.state == "stopped"
        await wait_until(lambda: not alive(early.pid))
        with anyio.fail_after(30):
            assert await reg.prompt(session.session_id, "[]") == "end_turn"


@pytest.mark.anyio
async def test_an_early_agent_that_spoke_first_is_not_adopted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Something that writes to stdout before it is asked is not the agent louise expects.
    agents = {"chatty": {"command": "/bin/sh", "args": ["-c", "echo hello; exec sleep 600"]}}
    early = start_early(monkeypatch, {"setup": True, "agents": agents, "agent": "chatty"})
    await wait_until(lambda: early._said_something())
    spec = early.spec
    assert early.take(spec) is None and early.state == "stopped"
    await wait_until(lambda: not alive(early.pid))


def test_a_bad_configuration_kills_the_early_agent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agents = {"script": script_agent()}
    early = start_early(monkeypatch, {"setup": True, "agents": agents})
    ui = FakeNeovim()
    engine = Engine(ui, {"agents": agents, "request_timeout": "soon"})  # type: ignore[arg-type]
    engine.start()
    try:
        ui.wait(lambda: not alive(early.pid), timeout=30)
        assert early.state == "stopped"
    finally:
        ui.release.set()
        engine.stop()


def test_a_first_command_that_starts_no_agent_stops_the_early_agent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Lua asked for `script`; the first chat command turns out to open another agent.
    agents = {"script": script_agent(), "other": script_agent(FAKE_NOTE="other")}
    early = start_early(monkeypatch, {"setup": True, "agents": agents, "agent": "script"})
    ui = FakeNeovim()
    engine = Engine(ui, {"agents": agents, "default_agent": "other"})  # type: ignore[arg-type]
    engine.start()
    try:
        engine.submit("chat", {"agent": "other", "cwd": str(tmp_path)})
        ui.wait(lambda: early.state == "stopped" and not alive(early.pid), timeout=30)
        registry = engine.registry
        assert registry is not None
        ui.wait(lambda: registry.runtime("other").connected, timeout=30)
    finally:
        ui.release.set()
        engine.stop()


def test_the_engine_taking_the_early_agent_in_a_chat(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agents = {"script": script_agent()}
    early = start_early(monkeypatch, {"setup": True, "agents": agents})
    ui = FakeNeovim()
    engine = Engine(ui, {"agents": agents})  # type: ignore[arg-type]
    engine.start()
    try:
        engine.submit("chat", {"cwd": str(tmp_path)})
        registry = engine.registry
        ui.wait(lambda: registry is not None and registry.runtime("script").connected,
                timeout=30)
        assert registry is not None
        connection = registry.runtime("script").connection
        assert connection is not None and connection.process.pid == early.pid
        session = ui.wait(lambda: registry.sessions(), timeout=30)[0]
        assert on_loop(engine, registry.prompt, session.session_id, "[]").result(30) \
            == "end_turn"
    finally:
        ui.release.set()
        engine.stop()
    ui.wait(lambda: not alive(early.pid), timeout=30)


def test_the_engine_process_leaving_kills_an_early_agent_nobody_took(tmp_path: Path) -> None:
    """`python -m louise.nvim` stopped as Neovim stops it on its way out (SIGTERM), here
    while it loads or waits for Neovim's first answer: the early agent, a shell that
    ignores the end of its own stdin, is killed with its process group."""
    pid_file = tmp_path / "agent.pid"
    agents = {"sticky": {"command": "/bin/sh",
                         "args": ["-c", f"echo $$ > {pid_file}.tmp; mv {pid_file}.tmp {pid_file}; "
                                  "exec sleep 600"]}}
    hint = json.dumps({"setup": True, "agents": agents, "agent": "sticky"})
    env = dict(os.environ, LOUISE_EARLY_AGENT=hint, LOUISE_STATE_DIR=str(tmp_path / "state"))
    engine = subprocess.Popen([sys.executable, "-P", "-m", "louise.nvim"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists():
            assert time.monotonic() < deadline, "no agent was started early"
            assert engine.poll() is None
            time.sleep(0.01)
        pid = int(pid_file.read_text())
        assert alive(pid)
        engine.terminate()
        engine.wait(30)
    finally:
        engine.kill()
        engine.wait()
        assert engine.stdin is not None and engine.stdout is not None
        engine.stdin.close()
        engine.stdout.close()
    deadline = time.monotonic() + 10
    while alive(pid):
        assert time.monotonic() < deadline, "the early agent outlived the engine's process"
        time.sleep(0.01)


def _notices(ui: FakeNeovim) -> list[str]:
    return [str(note[0]) for batch in ui.batches_with("notify") for note in batch["notify"]]


def test_a_command_that_is_not_there_is_reported_as_without_an_early_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agents = {"gone": {"command": str(tmp_path / "no-such-agent")}}
    monkeypatch.setenv(early_agent.ENV_VAR, json.dumps({"setup": True, "agents": agents}))
    assert early_agent.start_from_environment() is None  # nothing to start: no error here
    ui = FakeNeovim()
    engine = Engine(ui, {"agents": agents})  # type: ignore[arg-type]
    engine.start()
    try:
        engine.submit("chat", {"cwd": str(tmp_path)})
        said = ui.wait(lambda: [n for n in _notices(ui) if "not found" in n], timeout=30)
        assert "agent command not found" in said[0]
    finally:
        ui.release.set()
        engine.stop()


def test_an_early_agent_that_died_at_once_is_started_again_and_its_failure_told(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dead by the time the engine wants it: not adopted; the engine starts it as it always
    did, and the person reads that start's failure (its stderr in :LouiseLog)."""
    runs = tmp_path / "runs"
    agents = {"dies": {"command": "/bin/sh",
                       "args": ["-c", f"echo run >> {runs}; echo 'no model configured' >&2;"
                                " exit 3"]}}
    monkeypatch.setenv(early_agent.ENV_VAR, json.dumps({"setup": True, "agents": agents}))
    early = early_agent.start_from_environment()
    assert early is not None
    assert early.popen.wait(30) == 3
    ui = FakeNeovim()
    engine = Engine(ui, {"agents": agents})  # type: ignore[arg-type]
    engine.start()
    try:
        engine.submit("chat", {"cwd": str(tmp_path)})
        ui.wait(lambda: [n for n in _notices(ui) if "status 3" in n or "exited" in n],
                timeout=30)
        assert early.state == "stopped"
        assert runs.read_text().split() == ["run", "run"]  # early, then the engine's own
        registry = engine.registry
        assert registry is not None
        log = on_loop(engine, _agent_log, registry).result(30)
        assert "no model configured" in log
    finally:
        ui.release.set()
        engine.stop()


async def _agent_log(registry: SessionRegistry) -> str:
    return "\n".join(registry.agent_log("dies"))


def test_a_process_that_fails_while_loading_kills_its_early_agent(tmp_path: Path) -> None:
    """An exception before the engine took the agent (a broken install failing an import,
    say) ends the process: its early agent, which ignores the end of its stdin, goes too."""
    pid_file = tmp_path / "agent.pid"
    agents = {"sticky": {"command": "/bin/sh",
                         "args": ["-c", f"echo $$ > {pid_file}.tmp; mv {pid_file}.tmp {pid_file}; "
                                  "exec sleep 600"]}}
    hint = json.dumps({"setup": True, "agents": agents, "agent": "sticky"})
    code = ("import sys, time, pathlib\n"
            "from louise.nvim import early_agent\n"
            "assert early_agent.start_from_environment() is not None\n"
            f"pid_file = pathlib.Path({str(pid_file)!r})\n"
            "while not pid_file.exists(): time.sleep(0.01)\n"
            "raise ImportError('a module of the engine is broken')\n")
    failed = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True,
                            env=dict(os.environ, LOUISE_EARLY_AGENT=hint), timeout=60,
                            check=False)
    assert failed.returncode == 1 and b"broken" in failed.stderr
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while alive(pid):
        assert time.monotonic() < deadline, "the early agent outlived its process"
        time.sleep(0.01)


SIGTERM_AS_THE_SPAWN_ENDS = r"""
import os, signal, sys
from louise.nvim import early_agent

real = early_agent.spawn_early

def spawn_then_stopped(spec):
    started = real(spec)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(started.popen.pid))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    os.kill(os.getpid(), signal.SIGTERM)  # Neovim stops louise the moment the agent runs
    return started

early_agent.spawn_early = spawn_then_stopped
early_agent.start_from_environment()
sys.exit(3)  # never reached: the SIGTERM ends the process, its agent first
"""


def test_a_sigterm_as_the_early_agent_starts_takes_the_agent_along(tmp_path: Path) -> None:
    """Neovim's SIGTERM landing right after the early agent was spawned (before louise
    could note it): the process still ends by that signal, and the agent with it, never
    left running (the handler is in place before the spawn)."""
    pid_file = tmp_path / "agent.pid"
    agents = {"sticky": {"command": "/bin/sh", "args": ["-c", "exec sleep 600"]}}
    hint = json.dumps({"setup": True, "agents": agents, "agent": "sticky"})
    env = dict(os.environ, LOUISE_EARLY_AGENT=hint, LOUISE_STATE_DIR=str(tmp_path / "state"))
    done = subprocess.run([sys.executable, "-P", "-c", SIGTERM_AS_THE_SPAWN_ENDS, str(pid_file)],
                          env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=60)
    pid = int(pid_file.read_text())
    assert done.returncode == -signal.SIGTERM, done.stderr.decode(errors="replace")
    deadline = time.monotonic() + 10
    while alive(pid):
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            raise AssertionError("the early agent outlived the process that spawned it")
        time.sleep(0.01)
