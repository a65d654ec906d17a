"""Record real wire transcripts (louise ⇄ each real agent) into captures/*.ndjson.

    .venv/bin/python -m tests.real_agents.capture

Runs `louise chat` (and a registry `session/load`) through wiretap.py against the mock
model, one scenario per file: `<agent>-text` (initialize, session/new, a text turn),
`<agent>-edit` (a tool call, a permission request, louise's answer), `<agent>-shell`,
`<agent>-cancel`, `<agent>-load` (session/load's replay and a further turn). Each line is
`{"t": s, "dir": ">>" (louise → agent) | "<<" (agent → louise), "msg": …}` or an
`{"event": …}` of the tap (start, stdin_eof, exit). Paths of this machine, the mock's port
and process ids are replaced by placeholders (/workspace, /agent-home, /cache, PORT).
These are fixtures for fake agents: replay the `<<` lines in order.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from tests.real_agents.harness import (
    AGENTS,
    MockModel,
    agent_environment,
    louise_bin,
    louise_config,
)
from tests.real_agents.install import install_all

HERE = Path(__file__).resolve().parent
CAPTURES = HERE / "captures"


class Redactor:
    def __init__(self, replacements: dict[str, str], port: int) -> None:
        # Longest first, so that a path is replaced before any of its prefixes.
        self.pairs = sorted(replacements.items(), key=lambda kv: -len(kv[0]))
        self.port = re.compile(rf"127\.0\.0\.1:{port}\b")

    def text(self, value: str) -> str:
        for old, new in self.pairs:
            value = value.replace(old, new)
        return self.port.sub("127.0.0.1:PORT", value)

    def walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.walk(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k): self.walk(v) for k, v in value.items()}
        return value


def redacted_lines(path: Path, redactor: Redactor) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        entry.pop("pid", None)
        out.append(json.dumps(redactor.walk(entry), ensure_ascii=False))
    return out


def main() -> int:
    installed = install_all()
    CAPTURES.mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="louise-capture-"))
    mock = MockModel(root / "mock")
    mock.start()
    try:
        for name in AGENTS:
            if name not in installed.agents:
                print(f"{name}: unavailable: {installed.unavailable.get(name)}")
                continue
            capture_agent(name, root / name, installed, mock)
    finally:
        mock.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


def capture_agent(name: str, root: Path, installed: Any, mock: MockModel) -> None:
    install = installed.agents[name]
    home = root / "home"
    env = agent_environment(name, home, mock, install)
    work = root / "work"
    wire = root / "wire"
    state = root / "state"
    for folder in (work, wire):
        folder.mkdir(parents=True)
    config = root / "config.toml"
    config.write_text(louise_config({name: (install, env)}, wire))
    run_env = dict(os.environ, LOUISE_CONFIG=str(config), LOUISE_STATE_DIR=str(state))
    redactor = Redactor({str(work.resolve()): "/workspace", str(work): "/workspace",
                         str(home): "/agent-home", str(installed.cache): "/cache",
                         str(root): "/capture", sys.executable: "/python"}, mock.port)
    log = wire / f"{name}.ndjson"

    def take(scenario: str) -> None:
        lines = redacted_lines(log, redactor)
        (CAPTURES / f"{name}-{scenario}.ndjson").write_text("\n".join(lines) + "\n")
        log.unlink()
        print(f"{name}-{scenario}: {len(lines)} lines")

    def chat(*args: str) -> None:
        subprocess.run([louise_bin(), "chat", "--agent", name, *args], cwd=work, env=run_env,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=300, check=False)

    chat("hello")
    take("text")
    session_id = next((state / "transcripts").glob(f"{name}--*.jsonl")).stem.split("--", 1)[1]
    (work / "notes.txt").write_text("first\nold line\nlast\n")
    chat("--allow=edit", f"MOCK-EDIT {work / 'notes.txt'}")
    take("edit")
    chat("--allow=execute", "MOCK-SHELL")
    take("shell")
    process = subprocess.Popen([louise_bin(), "chat", "--agent", name, "MOCK-SLOW"], cwd=work,
                               env=run_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    seen = ""
    while "slow chunk 2." not in seen:
        seen += process.stdout.read(1)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=120)
    tap_exited(log)  # the tap writes the agent's last words, then its exit
    take("cancel")
    load(name, session_id, work, run_env)
    take("load")


def tap_exited(log: Path, timeout: float = 60.0) -> None:
    """Wait until wiretap.py has recorded the agent's exit (its last line)."""
    deadline = time.monotonic() + timeout
    while '"event": "exit"' not in log.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise AssertionError(f"the tap never recorded the agent's exit in {log}")
        time.sleep(0.05)


def load(name: str, session_id: str, work: Path, env: dict[str, str]) -> None:
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        async def run() -> None:
            from louise.config.loading import load_config
            from louise.permissions.broker import AllowKinds
            from louise.registry import SessionRegistry

            async with SessionRegistry(load_config(), decider=AllowKinds(frozenset())) as reg:
                session = await reg.load_session(name, session_id, str(work))
                await reg.prompt(session.session_id, "and a second turn")

        anyio.run(run)
    finally:
        os.environ.clear()
        os.environ.update(saved)


if __name__ == "__main__":
    sys.exit(main())
