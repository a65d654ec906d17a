"""Issue 21 item 15: a real-agent run that cannot install its agents is never green. With
every registry unreachable, a tiny selection of tests/real_agents (in a pytest of its own)
fails with one clear line; `LOUISE_REAL_AGENTS=skip` skips on purpose and says so."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.real_agents.harness import AGENTS

ROOT = Path(__file__).resolve().parents[2]
SELECTION = ("tests/real_agents/test_cli.py::"
             "test_a_text_turn_streams_is_listed_exported_and_continued")
UNREACHABLE = "http://127.0.0.1:9/"  # the discard port: nothing listens, refused at once


def offline_env(agents_dir: Path) -> dict[str, str]:
    """This environment with every registry the installer uses unreachable and an empty
    agents cache (no pip config file either: its extra indexes could still answer)."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("PIP_", "npm_config_", "UV_", "PYTEST_", "LOUISE_REAL"))}
    env.update(PIP_INDEX_URL=UNREACHABLE, PIP_CONFIG_FILE=os.devnull, PIP_RETRIES="0",
               npm_config_registry=UNREACHABLE, UV_PYTHON_INSTALL_MIRROR=UNREACHABLE,
               LOUISE_TEST_AGENTS_DIR=str(agents_dir))
    return env


def run_selection(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", SELECTION],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL)


@pytest.mark.timeout(1000)
def test_offline_the_real_agent_run_fails_with_one_clear_line(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    done = run_selection(offline_env(agents))
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    said = [line for line in output.splitlines() if "real agents: cannot install" in line]
    assert len(said) == 1, output
    (line,) = said
    for name in ("claude", "codex", "vibe"):
        assert name in line, line
    assert "registry unreachable" in line and "LOUISE_REAL_AGENTS=skip" in line, line
    assert "Traceback" not in output and "skipped" not in output and "passed" not in output
    assert "registry unreachable" in (agents / "install-failure.log").read_text()


def test_real_agents_skip_says_it_skipped_on_purpose_and_installs_nothing(
        tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    env = offline_env(agents)
    env["LOUISE_REAL_AGENTS"] = "skip"
    done = run_selection(env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert f"{len(AGENTS)} skipped" in output, output  # the test, for each agent
    assert "skipped on purpose (LOUISE_REAL_AGENTS=skip)" in output, output
    assert not agents.exists(), "nothing is installed when skipping on purpose"
