"""A session host reached through ssh: `louise attach --via "ssh … 127.0.0.1 louise serve
--stdio"`, against an sshd this test starts on a loopback port with a throwaway host key
and a key it authorizes itself. `.ci/run` installs the ssh server where it is missing; a
machine without one fails here with one line saying so (never a skip)."""

from __future__ import annotations

import getpass
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cli_helpers import LOUISE
from tests.integration.test_serve_edge import _place

TIMEOUT = 90


def _sshd_binary() -> str:
    found = shutil.which("sshd") or next(
        (path for path in ("/usr/sbin/sshd", "/usr/local/sbin/sshd") if os.access(path, os.X_OK)),
        None)
    if found is None or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        pytest.fail("no ssh server here (sshd, ssh, ssh-keygen): install openssh-server "
                    "(.ci/run does) to run the ssh transport test", pytrace=False)
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def sshd() -> Iterator[tuple[int, Path, Path]]:
    """An sshd on 127.0.0.1:PORT accepting this user with a key made here; (port, the
    client's key, the directory)."""
    binary = _sshd_binary()
    root = Path(tempfile.mkdtemp(prefix="lssh", dir="/tmp"))
    os.chmod(root, 0o700)
    host_key, client_key = root / "host_key", root / "client_key"
    for key in (host_key, client_key):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                       check=True, capture_output=True)
    authorized = root / "authorized_keys"
    authorized.write_text((root / "client_key.pub").read_text())
    os.chmod(authorized, 0o600)
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # its privilege separation dir
    port = _free_port()
    config = root / "sshd_config"
    config.write_text("\n".join([
        f"ListenAddress 127.0.0.1:{port}", f"HostKey {host_key}",
        f"AuthorizedKeysFile {authorized}", f"PidFile {root / 'sshd.pid'}",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
        "StrictModes no", "PermitRootLogin prohibit-password", f"AllowUsers {getpass.getuser()}",
        "AcceptEnv LANG", ""]))
    server = subprocess.Popen([binary, "-D", "-e", "-f", str(config)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if server.poll() is not None or time.monotonic() > deadline:
                output = server.stdout.read().decode(errors="replace") if server.stdout else ""
                pytest.fail(f"the test's sshd did not start: {output.strip()[-300:]}",
                            pytrace=False)
            time.sleep(0.05)
        yield port, client_key, root
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_a_session_through_ssh_to_a_host_on_this_machine(
        sshd: tuple[int, Path, Path]) -> None:
    port, key, _root = sshd
    place = _place()
    # What the far side runs: louise (this interpreter) with its own state directory.
    far = shlex.join(["env", f"LOUISE_STATE_DIR={place.state}",
                      f"LOUISE_CONFIG={place.root / 'far.toml'}",
                      sys.executable, "-P", "-m", "louise.cli", "serve", "--stdio"])
    via = shlex.join(["ssh", "-o", "StrictHostKeyChecking=no", "-o",
                      "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o",
                      "LogLevel=ERROR", "-p", str(port), "-i", str(key), "127.0.0.1", far])
    place.config.write_text("[host]\nmode = \"auto\"\nvia = '''" + via + "'''\n")
    try:
        chat = subprocess.run([*LOUISE, "chat", "--agent", "demo", "over ssh"],
                              env=place.env, capture_output=True, text=True, timeout=TIMEOUT,
                              cwd=place.root, stdin=subprocess.DEVNULL)
        assert chat.returncode == 0, chat.stderr
        assert "You wrote: *over ssh*" in chat.stdout
        assert len(place.hosts()) == 1  # started on the far side by `serve --stdio`
    finally:
        place.stop()
