"""The pieces the real-agent tests share: the mock model process, each agent's isolated
configuration, the louise config.toml naming the agents, the `louise` CLI runner and the
wire log reader."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tests.real_agents.install import AgentInstall

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MODEL_API = "tests.real_agents.model_api"  # run as a module from REPO
WIRETAP = HERE / "wiretap.py"
AGENTS = ("claude", "codex", "vibe", "gemini", "qwen", "copilot")  # every agent here
FULL = ("claude", "codex", "vibe")  # run every check; the others a smoke set of each
MOCK_KEY = "mock-key-not-a-credential"
# gemini-cli and qwen-code (its fork) read the same settings: nothing sent home, no update.
QUIET_SETTINGS = {"privacy": {"usageStatisticsEnabled": False},
                  "telemetry": {"enabled": False},
                  "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}


# ------------------------------------------------------------------------------ mock model


class MockModel:
    """The model API (model_api/) on a free port; every model request lands in
    `log_dir/requests.jsonl`."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None

    def start(self, timeout: float = 30.0) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        port_file = self.log_dir / "port"
        self._stderr = (self.log_dir / "stderr.txt").open("wb")
        self._process = subprocess.Popen(
            [sys.executable, "-m", MODEL_API, "--port", "0", "--log", str(self.log_dir),
             "--port-file", str(port_file)],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=self._stderr)
        deadline = time.monotonic() + timeout
        while not port_file.exists():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the mock model did not start (see {self.log_dir})")
            time.sleep(0.05)
        self.port = int(port_file.read_text())

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=10)
            if self._process.poll() is None:
                self._process.kill()
                self._process.wait()
        if self._stderr is not None:
            self._stderr.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests(self) -> list[dict[str, Any]]:
        path = self.log_dir / "requests.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ------------------------------------------------------------------------------ agent homes


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def agent_environment(name: str, home: Path, mock: MockModel,
                      install: AgentInstall) -> dict[str, str]:
    """Prepare `home` for one agent (its config files) and return the env it needs."""
    home.mkdir(parents=True, exist_ok=True)
    env = {**install.env, "HOME": str(home),
           "PATH": os.pathsep.join([*install.path_dirs, os.environ.get("PATH", "")])}
    if name == "claude":
        config_dir = home / ".claude"
        config_dir.mkdir(exist_ok=True)
        # claude-agent-acp ≥ 0.6x starts sessions in "auto" (Claude decides permissions
        # itself, so louise is never asked); "default" asks before edits and commands.
        (config_dir / "settings.json").write_text(
            json.dumps({"permissions": {"defaultMode": "default"}}) + "\n")
        env.update(ANTHROPIC_BASE_URL=mock.url, ANTHROPIC_API_KEY="sk-ant-mock",
                   CLAUDE_CONFIG_DIR=str(config_dir),
                   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
                   DISABLE_AUTOUPDATER="1", IS_SANDBOX="1")
    elif name == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir(exist_ok=True)
        (codex_home / "config.toml").write_text(
            'model = "gpt-5.5"\n'
            'model_provider = "mock"\n'
            "[model_providers.mock]\n"
            'name = "mock"\n'
            f"base_url = {_toml_string(mock.url + '/v1')}\n"
            'env_key = "MOCK_API_KEY"\n'
            'wire_api = "responses"\n')
        env.update(CODEX_HOME=str(codex_home), MOCK_API_KEY=MOCK_KEY, NO_BROWSER="1",
                   INITIAL_AGENT_MODE="read-only")
    elif name == "vibe":
        vibe_home = home / ".vibe"
        vibe_home.mkdir(exist_ok=True)
        (vibe_home / "config.toml").write_text(
            'active_model = "mock"\n'
            'default_agent = "ask"\n'
            "enable_telemetry = false\n"
            "[[providers]]\n"
            'name = "mock"\n'
            f"api_base = {_toml_string(mock.url + '/v1')}\n"
            'api_key_env_var = "MOCK_API_KEY"\n'
            'backend = "generic"\n'
            "[[models]]\n"
            'name = "mock-model"\n'
            'provider = "mock"\n'
            'alias = "mock"\n')
        env.update(VIBE_HOME=str(vibe_home), MOCK_API_KEY=MOCK_KEY)
    elif name == "gemini":
        # The gateway sign-in (a base URL of its own): no Google account, no browser.
        (home / ".gemini").mkdir(exist_ok=True)
        (home / ".gemini" / "settings.json").write_text(json.dumps(QUIET_SETTINGS) + "\n")
        env.update(GOOGLE_GEMINI_BASE_URL=mock.url, GEMINI_API_KEY=MOCK_KEY,
                   GEMINI_CLI_NO_RELAUNCH="true", NO_BROWSER="1")
    elif name == "qwen":
        (home / ".qwen").mkdir(exist_ok=True)
        # "default" asks before edits and commands (its own default, "auto", has a model
        # decide); no memory extraction after each turn (a model request of its own).
        settings = {**QUIET_SETTINGS, "security": {"auth": {"selectedType": "openai"}},
                    "tools": {"approvalMode": "default"},
                    "memory": {"enableManagedAutoMemory": False,
                               "enableManagedAutoDream": False},
                    "ui": {"enableFollowupSuggestions": False}}
        (home / ".qwen" / "settings.json").write_text(json.dumps(settings) + "\n")
        # No relaunch of itself for a larger heap (as GEMINI_CLI_NO_RELAUNCH for gemini):
        # without it every start runs a third Node (about 1 s of CPU of its 4).
        env.update(OPENAI_BASE_URL=mock.url + "/v1", OPENAI_API_KEY=MOCK_KEY,
                   OPENAI_MODEL="mock-model", QWEN_CODE_NO_RELAUNCH="true")
    elif name == "copilot":
        # Offline mode with a model provider of its own (BYOK, OpenAI-compatible): no
        # GitHub sign-in, no telemetry, no update.
        env.update(COPILOT_HOME=str(home / ".copilot"), COPILOT_OFFLINE="true",
                   COPILOT_PROVIDER_BASE_URL=mock.url + "/v1", COPILOT_PROVIDER_TYPE="openai",
                   COPILOT_PROVIDER_API_KEY=MOCK_KEY, COPILOT_MODEL="mock-model",
                   COPILOT_AUTO_UPDATE="false")
    else:
        raise ValueError(name)
    return env


def louise_config(agents: dict[str, tuple[AgentInstall, dict[str, str]]],
                  wire_dir: Path | None, *, default_agent: str | None = None) -> str:
    """A config.toml naming each agent; its command goes through the wire tap when
    `wire_dir` is set (`wire_dir/<agent>.ndjson`)."""
    lines: list[str] = []
    if default_agent:
        lines.append(f"default_agent = {_toml_string(default_agent)}")
    for name, (install, env) in agents.items():
        argv = install.argv
        if wire_dir is not None:
            argv = [sys.executable, str(WIRETAP), str(wire_dir / f"{name}.ndjson"), "--", *argv]
        lines.append(f"[agents.{name}]")
        lines.append(f"command = {_toml_string(argv[0])}")
        lines.append("args = [" + ", ".join(_toml_string(a) for a in argv[1:]) + "]")
        lines.append("env = { " + ", ".join(f"{k} = {_toml_string(v)}"
                                            for k, v in env.items()) + " }")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ running louise


def louise_bin() -> str:
    return str(Path(sys.executable).parent / "louise")


@dataclass
class Result:
    argv: list[str]
    status: int
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return (f"$ {' '.join(self.argv)}\nexit {self.status}\n--- stdout ---\n{self.stdout}"
                f"\n--- stderr ---\n{self.stderr[-4000:]}")


def run_louise(args: list[str], *, cwd: Path, timeout: float = 180.0,
               env: dict[str, str] | None = None) -> Result:
    argv = [louise_bin(), *args]
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=env, check=False)
    return Result(argv, done.returncode, done.stdout, done.stderr)


@dataclass
class Running:
    """A `louise` process started in the background (to interrupt it)."""

    process: subprocess.Popen[str]
    argv: list[str]
    out: IO[str]
    err: IO[str]

    def stdout(self) -> str:
        return Path(self.out.name).read_text(encoding="utf-8", errors="replace")

    def wait_for_stdout(self, text: str, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.stdout():
            if self.process.poll() is not None:
                raise AssertionError(f"louise exited ({self.process.returncode}) before "
                                     f"printing {text!r}:\n{self.finish()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {text!r} within {timeout} s:\n{self.stdout()}")
            time.sleep(0.05)

    def interrupt(self) -> None:
        self.process.send_signal(signal.SIGINT)

    def finish(self, timeout: float = 180.0) -> Result:
        try:
            self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        result = Result(self.argv, self.process.returncode, self.stdout(),
                        Path(self.err.name).read_text(encoding="utf-8", errors="replace"))
        self.out.close()
        self.err.close()
        return result


def start_louise(args: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> Running:
    """Start `louise` with its stdout and stderr going to files (read them while it runs)."""
    argv = [louise_bin(), *args]
    # Closed (and so removed) by Running.finish.
    out = tempfile.NamedTemporaryFile("w+", encoding="utf-8", prefix="louise-out-")  # noqa: SIM115
    err = tempfile.NamedTemporaryFile("w+", encoding="utf-8", prefix="louise-err-")  # noqa: SIM115
    process = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                               stderr=err, text=True, env=env)
    return Running(process, argv, out, err)


# ------------------------------------------------------------------------------ wire logs


@dataclass
class Wire:
    """One agent's wire log (what the tap saw), read on demand."""

    path: Path

    def entries(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out

    def sent(self, method: str | None = None) -> Iterator[dict[str, Any]]:
        """Messages louise sent to the agent (requests, notifications and responses)."""
        for entry in self.entries():
            msg = entry.get("msg")
            if entry.get("dir") == ">>" and isinstance(msg, dict) and (
                    method is None or msg.get("method") == method):
                yield msg

    def received(self, method: str | None = None) -> Iterator[dict[str, Any]]:
        for entry in self.entries():
            msg = entry.get("msg")
            if entry.get("dir") == "<<" and isinstance(msg, dict) and (
                    method is None or msg.get("method") == method):
                yield msg

    def pairs(self, method: str, direction: str) -> list[tuple[dict[str, Any],
                                                             dict[str, Any] | None]]:
        """Each request `method` sent in `direction` (">>" by louise, "<<" by the agent),
        with its response (None if none came). Request ids restart with every agent
        process, so requests and responses are paired within one process's run."""
        back = "<<" if direction == ">>" else ">>"
        out: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
        open_requests: dict[Any, int] = {}
        for entry in self.entries():
            if entry.get("event") == "start":
                open_requests = {}
                continue
            msg = entry.get("msg")
            if not isinstance(msg, dict):
                continue
            if entry.get("dir") == direction and msg.get("method") == method and "id" in msg:
                open_requests[msg["id"]] = len(out)
                out.append((msg, None))
            elif entry.get("dir") == back and "method" not in msg \
                    and msg.get("id") in open_requests:
                index = open_requests.pop(msg["id"])
                out[index] = (out[index][0], msg)
        return out

    def permission_answers(self) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """Each session/request_permission the agent sent, with louise's answer."""
        return self.pairs("session/request_permission", "<<")
