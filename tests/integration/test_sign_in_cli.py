"""Signing in from the command line, against the demo agent with
LOUISE_DEMO_AUTH=required: `louise chat` asks on the terminal and runs a terminal method
in it (after showing the command), `louise login`/`logout`, and no terminal, no question."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.integration.cli_helpers import Terminal, environment, louise


def authed_env(tmp_path: Path, login_env: dict[str, str] | None = None) -> dict[str, str]:
    """The demo agent as `authed`, requiring a sign-in; `login_env`: more variables its
    terminal method sets."""
    config = tmp_path / "config.toml"
    extra = f", LOUISE_DEMO_LOGIN_ENV = {json.dumps(json.dumps(login_env))}" \
        if login_env else ""
    config.write_text(
        'default_agent = "authed"\n'
        "[agents.authed]\n"
        f"command = {sys.executable!r}\n"
        "args = ['-P', '-m', 'louise.demo_agent']\n"
        f"env = {{ LOUISE_DEMO_AUTH = 'required', LOUISE_DEMO_STATE_DIR = "
        f"{str(tmp_path / 'authed-state')!r}, LOUISE_DEMO_SAVED_SESSIONS = '0'{extra} }}\n")
    return environment(config, LOUISE_STATE_DIR=str(tmp_path / "state"))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return authed_env(tmp_path)


def test_chat_on_a_terminal_signs_in_with_a_terminal_method(env: dict[str, str],
                                                            tmp_path: Path) -> None:
    term = Terminal("chat", "hello", env=env, cwd=tmp_path)
    term.expect("choose (q: not now): ")
    assert "1. Demo token" in term.text
    assert "2. Demo login (runs in this terminal)" in term.text
    term.send("2\n")
    term.expect("Run it? [y/N] ")
    assert "LOUISE_DEMO_LOGIN=1" in term.text and "louise.demo_agent --login" in term.text
    term.send("y\n")
    term.expect("Type yes to sign in: ")  # the agent's own command, in this terminal
    term.send("yes\n")
    term.expect("Signed in.")
    assert term.wait() == 0, term.text
    assert "Hello from the demo agent" in term.text
    assert (tmp_path / "authed-state" / "signed-in").exists()


def test_a_padded_command_shows_what_runs_first_and_can_be_viewed_whole(
        tmp_path: Path) -> None:
    env = authed_env(tmp_path, {"LOUISE_DEMO_PAD": "p" * 8000})
    term = Terminal("chat", "hello", env=env, cwd=tmp_path)
    term.expect("choose (q: not now): ")
    term.send("2\n")
    term.expect("Run it? [y/N, v: view the whole command] ")
    text = term.text.replace("\r\n", "\n")
    shown = text.split("louise runs:\n  ", 1)[1].split("\n", 1)[0]
    # What runs, first and whole; the padding shortened; the cut said.
    assert shown.startswith(f"{sys.executable} -P -m louise.demo_agent --login with "
                            "LOUISE_DEMO_LOGIN=1 LOUISE_DEMO_PAD=ppp")
    assert "[shortened: the whole command is" in shown
    assert len(shown) < 1000
    term.send("v\n")
    term.expect("Run it? [y/N, v: view the whole command] ", count=2)
    assert "  LOUISE_DEMO_PAD=" + "p" * 8000 in term.text.replace("\r\n", "\n")
    term.send("y\n")
    term.expect("Type yes to sign in: ")
    term.send("yes\n")
    assert term.wait() == 0, term.text


def test_a_method_setting_a_foreign_variable_is_refused_and_says_which(
        tmp_path: Path) -> None:
    env = authed_env(tmp_path, {"BASH_ENV": "/tmp/evil.sh"})
    term = Terminal("chat", "hello", env=env, cwd=tmp_path)
    term.expect("choose (q: not now): ")
    term.send("2\n")
    status = term.wait()
    assert status == 1, term.text
    assert "Run it?" not in term.text and "Type yes" not in term.text
    assert ("'Demo login' would set BASH_ENV, which is not one of the agent's own settings "
            "(a sign-in may set only AUTHED_… or LOUISE_…); louise does not run it") in \
        term.text.replace("\r\n", " ").replace("\n", " ")
    assert not (tmp_path / "authed-state" / "signed-in").exists()


def test_declining_the_command_runs_nothing(env: dict[str, str], tmp_path: Path) -> None:
    term = Terminal("chat", "hello", env=env, cwd=tmp_path)
    term.expect("choose (q: not now): ")
    term.send("2\n")
    term.expect("Run it? [y/N] ")
    term.send("\n")  # no answer is no
    assert term.wait() == 3, term.text
    assert "Type yes" not in term.text
    assert "requires authentication" in term.text
    assert not (tmp_path / "authed-state" / "signed-in").exists()


def test_without_a_terminal_nothing_is_asked(env: dict[str, str], tmp_path: Path) -> None:
    result = louise("chat", "hello", env=env, cwd=tmp_path)
    assert result.returncode == 3
    assert "requires authentication" in result.stderr and "louise login" in result.stderr
    assert "choose" not in result.stderr
    assert louise("login", env=env, cwd=tmp_path).returncode == 3


def test_login_with_an_agent_method_then_logout(env: dict[str, str], tmp_path: Path) -> None:
    listed = louise("login", "--list", env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    # No terminal here: only the agent's own method is offered (no auth.terminal).
    assert listed.stdout.split("\t")[:2] == ["demo-token", "agent"]
    done = louise("login", "authed", "--method", "demo-token", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "signed in to authed"
    # The demo agent keeps a token only in its process: a new `louise chat` starts a new
    # one. A terminal sign-in leaves a marker the next process finds: log out removes it.
    term = Terminal("login", env=env, cwd=tmp_path)
    term.expect("choose (q: not now): ")
    term.send("2\n")
    term.expect("Run it? [y/N] ")
    term.send("y\n")
    term.expect("Type yes to sign in: ")
    term.send("yes\n")
    assert term.wait() == 0, term.text
    assert "signed in to authed" in term.text
    assert louise("chat", "hello", env=env, cwd=tmp_path).returncode == 0
    out = louise("logout", env=env, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "logged out of authed"
    assert louise("chat", "hello", env=env, cwd=tmp_path).returncode == 3


def test_logout_where_the_agent_does_not_offer_it(env: dict[str, str],
                                                  tmp_path: Path) -> None:
    result = louise("logout", "demo", env=env, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == "louise: demo does not support logout"
