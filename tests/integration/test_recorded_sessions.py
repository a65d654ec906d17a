"""An agent that loads sessions but cannot list them (gemini-cli: `session/load`, no
`session/list`): `louise sessions`, `louise chat --continue` and `:LouiseResume`'s listing
offer the sessions louise recorded for it, from its transcripts (`registry/recorded.py`),
and load them. Over real stdio with the attach fake (`FAKE_CAPS=load`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from louise.config.loading import load_config_mapping
from louise.registry import SessionRegistry
from tests.integration.cli_helpers import FAKES, environment, louise

ATTACH = str(FAKES / "attach_agent.py")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text(
        "[agents.loader]\n"
        f"command = {sys.executable!r}\n"
        f"args = [{ATTACH!r}]\n"
        f'env = {{ FAKE_CAPS = "load", FAKE_STORE = {str(tmp_path / "store.json")!r},'
        f' FAKE_LOG = {str(tmp_path / "agent.log")!r} }}\n')
    return environment(config, LOUISE_STATE_DIR=str(tmp_path / "state"))


def test_sessions_and_continue_use_what_louise_recorded(env: dict[str, str],
                                                       tmp_path: Path) -> None:
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    assert louise("chat", "--agent", "loader", "remember the pelican", env=env,
                  cwd=work).returncode == 0
    assert louise("chat", "--agent", "loader", "somewhere else", env=env,
                  cwd=elsewhere).returncode == 0
    listed = louise("sessions", "--agent", "loader", "--json", env=env, cwd=work)
    assert listed.returncode == 0, listed.stderr
    sessions = json.loads(listed.stdout)
    assert [(s["sessionId"], s["cwd"], s["title"]) for s in sessions] == [
        ("fake-2", str(elsewhere), "somewhere else"),
        ("fake-1", str(work), "remember the pelican")]
    assert all(s["updatedAt"].endswith("Z") for s in sessions), sessions
    here = louise("sessions", "--agent", "loader", "--cwd", str(work), env=env)
    assert here.returncode == 0 and here.stdout.splitlines()[1].startswith("fake-1\t"), here
    # --continue takes the newest session of this directory and loads it.
    again = louise("chat", "--agent", "loader", "--continue", "and again", env=env, cwd=work)
    assert again.returncode == 0, again.stderr
    methods = (tmp_path / "agent.log").read_text().splitlines()
    assert "session/load" in methods and "session/list" not in methods, methods
    assert methods.count("session/new") == 2, methods


def test_the_listing_of_every_agent_offers_them_to_load(env: dict[str, str],
                                                        tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert louise("chat", "--agent", "loader", "a session to resume", env=env,
                  cwd=tmp_path).returncode == 0
    for name in ("LOUISE_CONFIG", "LOUISE_STATE_DIR"):
        monkeypatch.setenv(name, env[name])

    async def listing() -> list[object]:
        from louise.config.loading import load_config

        async with SessionRegistry(load_config(), transcripts_dir=None) as registry:
            return list(await registry.list_all_sessions(str(tmp_path), ["loader"]))

    [agent] = anyio.run(listing)
    assert agent.error is None and agent.can_load  # type: ignore[attr-defined]
    assert [s["sessionId"] for s in agent.sessions] == ["fake-1"]  # type: ignore[attr-defined]


def test_an_agent_that_lists_its_sessions_is_asked(tmp_path: Path) -> None:
    """With `session/list` advertised the agent's own list counts, not the transcripts."""
    config = load_config_mapping({"agents": {"lister": {
        "command": sys.executable, "args": [str(FAKES / "cli_agent.py")]}}})
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    (transcripts / "lister@recorded@0000.jsonl").write_text(json.dumps({
        "type": "session", "agent": "lister", "cwd": str(tmp_path),
        "sessionId": "recorded"}) + "\n")

    async def listing() -> list[dict[str, object]]:
        async with SessionRegistry(config, transcripts_dir=transcripts) as registry:
            return await registry.list_sessions("lister")

    assert "recorded" not in [s.get("sessionId") for s in anyio.run(listing)]
    assert os.path.exists(transcripts)


def test_a_history_streamed_after_the_load_answer_is_not_printed_again(
        tmp_path: Path) -> None:
    """gemini-cli answers session/load first and streams the history after it: louise
    takes it as the replay until its end (the available_commands_update), so `louise chat
    --session` prints only the new turn's reply, and the export has each message once."""
    config = tmp_path / "config.toml"
    config.write_text(
        "[agents.gem]\n"
        f"command = {sys.executable!r}\n"
        f"args = [{ATTACH!r}]\n"
        f'env = {{ FAKE_CAPS = "load", FAKE_AGENT_NAME = "gemini-cli",'
        f' FAKE_STORE = {str(tmp_path / "store.json")!r} }}\n')
    env = environment(config, LOUISE_STATE_DIR=str(tmp_path / "state"))
    first = louise("chat", "--agent", "gem", "remember the pelican", env=env, cwd=tmp_path)
    assert first.returncode == 0 and first.stdout == "echo: remember the pelican\n", first
    again = louise("chat", "--agent", "gem", "--session", "fake-1", "and again", env=env,
                   cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == "echo: and again\n", again.stdout
    exported = louise("export", "gem:fake-1", env=env, cwd=tmp_path)
    assert exported.stdout.count("echo: remember the pelican") == 1, exported.stdout
    assert exported.stdout.count("## You") == 2, exported.stdout
    assert exported.stdout.count("echo: and again") == 1, exported.stdout
