"""Real third-party ACP agents (claude-agent-acp, codex-acp, vibe-acp, gemini-cli,
qwen-code) against the offline mock model: louise's CLI and Neovim plugin driven through
whole turns.

Every test here carries the `real_agents` marker (`python3 dev.py test --fast` leaves them
out). The agents are installed once into a cache outside the repository (see install.py);
that happens after collection, outside any test's timeout, and only when a real-agent test
is selected. When they cannot be installed (offline, say) the run stops at once with one
line and fails; `LOUISE_REAL_AGENTS=skip` skips them on purpose instead. Each agent runs
through wiretap.py, so every test can read what louise and the agent said to each other
(`RealAgent.wire`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Driver, nvim  # noqa: F401 (the e2e fixture, reused)
from tests.real_agents.harness import (
    FULL,
    MockModel,
    Result,
    Running,
    Wire,
    agent_environment,
    louise_config,
    run_louise,
    start_louise,
)
from tests.real_agents.install import (
    MODE_VARIABLE,
    SKIP,
    Installed,
    failure_line,
    install_all,
    skipped_on_purpose,
)

HERE = Path(__file__).resolve().parent
INSTALLED = pytest.StashKey["Installed | str"]()  # the agents, or why installing failed
SKIPPED_ON_PURPOSE = (f"skipped on purpose ({MODE_VARIABLE}={SKIP}): the real agents are "
                      "neither installed nor run")
# A whole turn of a real agent (vibe's initialize alone takes 3-10 s) on a loaded 2-CPU
# machine: far beyond the suite's default per-test timeout.
REAL_AGENT_TIMEOUT = 600


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    on_purpose = skip_mode(config)
    real = []
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(HERE):
            real.append(item)
            item.add_marker(pytest.mark.real_agents)
            item.add_marker(pytest.mark.timeout(REAL_AGENT_TIMEOUT))
            if on_purpose:
                item.add_marker(pytest.mark.skip(reason=SKIPPED_ON_PURPOSE))
    longest_first(config, items, real)
    if real and not config.option.collectonly and INSTALLED not in config.stash:
        install_once(config, items, real, on_purpose)


# What a real-agent test costs, roughly, to run them longest first (only the order
# depends on it): its agent's mean seconds per test, times a factor for the tests that
# start their agent several times or wait on purpose (a run's --durations, quiet machine).
AGENT_SECONDS = {"vibe": 10.6, "qwen": 10.5, "gemini": 7.6, "claude": 6.3, "copilot": 6.1,
                 "codex": 4.5}
SLOW_TESTS = {
    "test_a_text_turn_streams_is_listed_exported_and_continued": 2.5,
    "test_one_chat_shows_the_reply_once_allows_an_edit_and_a_command_and_diffs_the_file":
        2.5,  # four turns in one chat
    "test_one_chat_refuses_edits_updates_open_buffers_keeps_unsaved_edits_and_cancels":
        4.0,  # up to six turns in one chat
    "test_one_chat_fires_hooks_takes_a_mention_and_an_image_a_queued_prompt_and_a_question":
        3.0,  # four or five turns in one chat
    "test_louise_chat_is_never_silent_and_the_watchdog_ends_the_turn": 3.5,  # 20 s idle
    "test_neovim_shows_the_count_and_codexs_notes_as_they_come": 3.5,  # 20 s idle
    "test_a_turn_goes_on_when_its_neovim_quits_and_a_new_one_sees_it_once": 3.0,  # 15 s turn
    "test_louise_chat_session_continues_a_session_closed_at_the_agent": 1.8,
    "test_louiseresume_lists_every_agent_then_forks_and_deletes": 2.0,
    "test_louiseresume_loads_a_session_and_takes_a_further_turn": 1.6,
    "test_a_loaded_session_replays_takes_a_further_turn_and_exports_each_message_once": 1.4,
    "test_a_question_asked_after_its_neovim_quit_is_answered_from_the_next": 1.3,
    "test_two_neovims_and_a_cli_share_the_stream_and_the_second_answers": 1.3,
}


def expected_cost(item: pytest.Item) -> float:
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    agent = next((AGENT_SECONDS[p] for p in params if isinstance(p, str)
                  and p in AGENT_SECONDS), 6.0)
    return agent * SLOW_TESTS.get(getattr(item, "originalname", item.name), 1.0)


def longest_first(config: pytest.Config, items: list[pytest.Item],
                  real: list[pytest.Item]) -> None:
    """The real-agent tests in the slots they hold, longest first within each worker's
    share: pytest-xdist (`--dist worksteal`) hands each worker a contiguous share and idle
    workers take the end of the longest queue, so a long test never starts last and the
    workers end together. Deterministic: every worker must collect the same order."""
    if len(real) < 2:
        return
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    ranked = sorted(real, key=expected_cost, reverse=True)  # stable: ties keep their order
    shares = [ranked[i::workers] for i in range(workers)]
    ordered = iter([item for share in shares for item in share])
    slots = {id(item) for item in real}
    items[:] = [next(ordered) if id(item) in slots else item for item in items]


def skip_mode(config: pytest.Config) -> bool:
    """$LOUISE_REAL_AGENTS=skip: the opt-out for a machine offline on purpose."""
    try:
        return skipped_on_purpose()
    except ValueError as exc:
        raise pytest.UsageError(f"{exc}: set it to 'skip' on a machine offline on purpose, "
                                "else leave it unset") from None


def install_once(config: pytest.Config, items: list[pytest.Item], real: list[pytest.Item],
                 on_purpose: bool) -> None:
    """Install the agents once, before the first test (and outside its timeout). When they
    cannot be installed the run stops with one line and fails: an offline machine is never
    green unless it says it is offline on purpose."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if on_purpose:
        if reporter is not None:
            reporter.write_line(f"real_agents: {SKIPPED_ON_PURPOSE}", yellow=True)
        return
    if reporter is not None:
        reporter.write_line("real_agents: checking the agents' cache (the first install "
                            "downloads ~1 GB and takes a minute or two) …")
    installed = config.stash[INSTALLED] = install_or_line()
    if isinstance(installed, str):
        if not hasattr(config, "workerinput"):
            pytest.exit(installed, returncode=pytest.ExitCode.TESTS_FAILED)
        # A pytest-xdist worker cannot stop the run: one real-agent test is left, to fail
        # with the line (the `installed` fixture); every worker leaves the same one.
        dropped = real[1:]
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in set(dropped)]
        return
    if reporter is not None:
        done = ", ".join(installed.installed_now) or "nothing to install"
        versions = ", ".join(f"{k} {v}" for k, v in installed.versions.items())
        reporter.write_line(f"real_agents: {done} ({installed.seconds:.1f} s) in "
                            f"{installed.cache}: {versions}")


def install_or_line() -> Installed | str:
    """The installed agents, or the one line saying why they cannot run here."""
    try:
        installed = install_all()
    except Exception as exc:  # one line for the person, not an INTERNALERROR
        return failure_line(None, exc) or str(exc)
    return failure_line(installed) or installed


@pytest.fixture(scope="session")
def installed(request: pytest.FixtureRequest) -> Installed:
    stash = request.config.stash
    if INSTALLED not in stash:  # e.g. run through a file that the hook did not see
        stash[INSTALLED] = install_or_line()
    installed = stash[INSTALLED]
    if isinstance(installed, str):
        pytest.fail(installed, pytrace=False)
    return installed


@pytest.fixture(scope="session")
def mock_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockModel]:
    mock = MockModel(tmp_path_factory.mktemp("mock-model"))
    mock.start()
    try:
        yield mock
    finally:
        mock.stop()


@pytest.fixture(scope="session")
def agent_envs(installed: Installed, mock_model: MockModel,
               tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """Each available agent's isolated home (config files written) and environment."""
    homes = tmp_path_factory.mktemp("agent-homes")
    return {name: agent_environment(name, homes / name, mock_model, install)
            for name, install in installed.agents.items()}


def available(installed: Installed, name: str) -> None:
    # An agent that could not be installed stopped the run before any test (install_or_line).
    assert name in installed.agents, f"{name} was not installed: {installed.unavailable}"


@dataclass
class RealAgent:
    """One agent as one test sees it: its own workspace, louise state, config and wire log."""

    name: str
    workspace: Path
    state_dir: Path
    config_path: Path
    wire_dir: Path
    mock: MockModel
    home: Path  # the agent's own (shared by the tests of one worker)

    @property
    def env(self) -> dict[str, str]:
        return dict(os.environ, LOUISE_CONFIG=str(self.config_path),
                    LOUISE_STATE_DIR=str(self.state_dir))

    @property
    def wire(self) -> Wire:
        return Wire(self.wire_dir / f"{self.name}.ndjson")

    def louise(self, *args: str, timeout: float = 300.0) -> Result:
        return run_louise(list(args), cwd=self.workspace, env=self.env, timeout=timeout)

    def chat(self, prompt: str, *allow: str) -> Result:
        flags = [f"--allow={kind}" for kind in allow]
        return self.louise("chat", "--agent", self.name, *flags, prompt)

    def start_chat(self, prompt: str) -> Running:
        return start_louise(["chat", "--agent", self.name, prompt], cwd=self.workspace,
                            env=self.env)

    def come_back_later(self) -> None:
        """Before a session is loaded by another process: gemini-cli 0.61 names a chat's
        file by the minute it started, and loading the session in a new process within
        that minute starts the same file again, so there is nothing left to load ("No
        previous sessions found for this project"). A person comes back later: the test
        dates gemini's chat files back, as another minute would have named them."""
        if self.name != "gemini":
            return
        chats = list((self.home / ".gemini" / "tmp").glob("*/chats/session-*.json*"))
        assert chats, "gemini-cli keeps its chats elsewhere now: see come_back_later"
        for path in chats:
            short = path.name.rsplit("-", 1)[-1]
            path.rename(path.with_name(f"session-2000-01-01T00-00-{short}"))

    def session_ids(self) -> list[str]:
        """Sessions created through louise (session/new replies on the wire), oldest first."""
        ids = []
        for _, reply in self.wire.pairs("session/new", ">>"):
            result = reply.get("result") if reply else None
            if isinstance(result, dict) and isinstance(result.get("sessionId"), str):
                ids.append(result["sessionId"])
        return ids

    def stop_reasons(self) -> list[str]:
        """The stopReason of every session/prompt reply on the wire."""
        return [str(reply["result"].get("stopReason"))
                for _, reply in self.wire.pairs("session/prompt", ">>")
                if reply is not None and isinstance(reply.get("result"), dict)]


def make_real_agent(name: str, root: Path, installed: Installed, mock: MockModel,
                    envs: dict[str, dict[str, str]]) -> RealAgent:
    available(installed, name)
    workspace = root / "work"
    wire_dir = root / "wire"
    for folder in (workspace, wire_dir):
        folder.mkdir(parents=True, exist_ok=True)
    config_path = root / "config.toml"
    config_path.write_text(louise_config(
        {n: (installed.agents[n], envs[n]) for n in envs}, wire_dir, default_agent=name))
    return RealAgent(name, workspace, root / "state", config_path, wire_dir, mock,
                     Path(envs[name]["HOME"]))


@pytest.fixture(params=FULL)
def agent(request: pytest.FixtureRequest, tmp_path: Path, installed: Installed,
          mock_model: MockModel, agent_envs: dict[str, dict[str, str]]) -> RealAgent:
    """The agent named by the test's parameter (by default each of `FULL`), in a fresh
    workspace (cwd of louise)."""
    return make_real_agent(str(request.param), tmp_path, installed, mock_model, agent_envs)


@pytest.fixture
def nvim_agent(request: pytest.FixtureRequest, tmp_path: Path, installed: Installed,
               mock_model: MockModel, agent_envs: dict[str, dict[str, str]],
               monkeypatch: pytest.MonkeyPatch) -> RealAgent:
    """As `agent`, for the Neovim tests: louise's engine (a child of Neovim) reads the
    config and state directories from the environment the `nvim` fixture inherits."""
    real = make_real_agent(str(request.param), tmp_path / "real", installed, mock_model,
                           agent_envs)
    monkeypatch.setenv("LOUISE_CONFIG", str(real.config_path))
    monkeypatch.setenv("LOUISE_STATE_DIR", str(real.state_dir))
    return real


@pytest.fixture
def agent_nvim(nvim_agent: RealAgent, request: pytest.FixtureRequest) -> Driver:
    """A headless Neovim (tests/e2e's fixture) started after `nvim_agent` configured the
    environment it inherits."""
    driver: Driver = request.getfixturevalue("nvim")
    return driver


def shown(text: str) -> str:
    """Text as a terminal shows it, for comparisons (no trailing spaces)."""
    return re.sub(r"[ \t]+\n", "\n", text)


def sessions_json(result: Result) -> list[dict[str, Any]]:
    import json

    assert result.status == 0, str(result)
    data = json.loads(result.stdout)
    assert isinstance(data, list), str(result)
    return data


