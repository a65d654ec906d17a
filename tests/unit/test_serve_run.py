"""Where the session host will not listen (louise.serve.run.run_host): each refusal is
one `HostError` line, before anything is served: a name too long for a socket, a file
in the socket's place, a live host already there, a directory that is not this user's,
a socket that cannot be made."""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from louise.config.model import Config
from louise.serve.run import HostError, run_host


@pytest.fixture
def short_dir() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="lsr-"))  # sun_path is short
    yield directory / "host"


def refusal(path: Path) -> str:
    with pytest.raises(HostError) as raised:
        run_host(path, idle_exit_seconds=0.1, config=Config())
    return str(raised.value)


def test_a_socket_name_too_long_for_a_socket(short_dir: Path) -> None:
    # A long path is bound through its directory (`paths.short_address`); its own name
    # must still fit a socket's address.
    assert "too long" in refusal(short_dir / ("x" * 120))


def test_a_file_in_the_sockets_place(short_dir: Path) -> None:
    short_dir.mkdir(mode=0o700)
    (short_dir / "host.sock").write_text("")
    assert "is not a socket" in refusal(short_dir / "host.sock")


def test_a_live_host_is_not_taken_over(short_dir: Path) -> None:
    short_dir.mkdir(mode=0o700)
    live = socket.socket(socket.AF_UNIX)
    live.bind(str(short_dir / "host.sock"))
    live.listen()
    try:
        assert "already listens" in refusal(short_dir / "host.sock")
    finally:
        live.close()


def test_a_directory_of_another_user(short_dir: Path) -> None:
    assert os.geteuid() == 0, "run as root (as CI does) to give a directory away"
    short_dir.mkdir(mode=0o700)
    os.chown(short_dir, 65534, 65534)
    assert "not a private directory of this user" in refusal(short_dir / "host.sock")


def test_a_socket_that_cannot_be_made_is_one_line(short_dir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    async def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(asyncio, "start_unix_server", refuse)
    assert refusal(short_dir / "host.sock") == (
        f"cannot listen on {short_dir / 'host.sock'}: Permission denied")
