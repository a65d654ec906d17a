"""Sign-in for the demo agent (`LOUISE_DEMO_AUTH=required`), as real agents do it.

Until signed in, session/new, load, resume, list and prompt answer -32000 (authentication
required). Two methods, as the spec has them: `demo-token` is handled by the agent
(`authenticate`); `demo-login` is a terminal method, advertised only to a client with
`auth.terminal`: the client runs this agent's own command with `--login`, which asks on
the terminal and, on "yes", leaves a `signed-in` marker next to the stored sessions, so the
restarted agent finds it. `logout` removes it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

JsonObject = dict[str, Any]
MARKER = "signed-in"
TOKEN_METHOD = {"id": "demo-token", "name": "Demo token",
                "description": "The demo agent signs itself in (no terminal needed)"}
LOGIN_ENV = {"LOUISE_DEMO_LOGIN": "1"}
LOGIN_METHOD: JsonObject = {"id": "demo-login", "name": "Demo login", "type": "terminal",
                            "description": "Sign in on a terminal (answer yes)",
                            "args": ["--login"], "env": LOGIN_ENV}


class Credentials:
    """Whether this agent is signed in: in memory, and as a marker file when sessions are
    stored on disk (so a restarted agent is still signed in)."""

    def __init__(self, directory: Path | None, required: bool) -> None:
        self.directory = directory
        self.required = required
        self._memory = False

    @property
    def marker(self) -> Path | None:
        return self.directory / MARKER if self.directory is not None else None

    @property
    def signed_in(self) -> bool:
        if not self.required or self._memory:
            return True
        marker = self.marker
        return marker is not None and marker.exists()

    def sign_in(self) -> None:
        self._memory = True
        write_marker(self.marker)

    def sign_out(self) -> None:
        self._memory = False
        marker = self.marker
        if marker is not None:
            marker.unlink(missing_ok=True)

    def methods(self, terminal: bool) -> list[JsonObject]:
        if not self.required:
            return []
        return [TOKEN_METHOD, login_method()] if terminal else [TOKEN_METHOD]


def login_method() -> JsonObject:
    """demo-login, with the variables of LOUISE_DEMO_LOGIN_ENV (a JSON object) added."""
    try:
        extra = json.loads(os.environ.get("LOUISE_DEMO_LOGIN_ENV") or "{}")
    except ValueError:
        extra = {}
    if not isinstance(extra, dict):
        extra = {}
    return {**LOGIN_METHOD, "env": {**LOGIN_ENV, **extra}}


def write_marker(marker: Path | None) -> None:
    if marker is None:
        return
    marker.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    os.close(fd)


def login(directory: Path | None) -> int:
    """`louise-demo-agent --login`: the interactive sign-in a terminal method runs."""
    print("Sign in to the louise demo agent.", flush=True)
    if os.environ.get("LOUISE_DEMO_LOGIN") != "1":
        print("(LOUISE_DEMO_LOGIN is not set: the client did not apply the method's env)",
              flush=True)
        return 3
    sys.stdout.write("Type yes to sign in: ")
    sys.stdout.flush()
    answer = sys.stdin.readline(100).strip().lower()
    if answer != "yes":
        print("Not signed in.", flush=True)
        return 1
    if directory is None:
        print("No state directory (LOUISE_DEMO_STATE_DIR=off): nothing to keep the sign-in "
              "in.", flush=True)
        return 2
    write_marker(directory / MARKER)
    print("Signed in.", flush=True)
    return 0
