"""`louise attach` and `louise serve --stdio`, the front end's side of the session host:
one host started under concurrency, the byte pipe both ways (socket and `--via`
command), a host that goes away said in one line, and the next attach starting a new
host. Against tests/fakes/echo_host.py where the host's own behaviour does not matter."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.integration.cli_helpers import FAKES, LOUISE
from tests.integration.serve_clients import host_pids

ECHO_HOST = [sys.executable, "-P", str(FAKES / "echo_host.py")]
TIMEOUT = 60


def _starter_script(socket_path: Path, pids: Path) -> str:
    """A process that connects to the host at `socket_path`, starting the echo host when
    none listens (daemon.connect_or_start), and proves the connection with one echo."""
    return textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from louise.serve import daemon
        sock = daemon.connect_or_start(
            Path({str(socket_path)!r}),
            argv={ECHO_HOST!r} + [{str(socket_path)!r}, {str(pids)!r}])
        sock.sendall(b"ping\\n")
        print(sock.recv(100).decode().strip())
    """)


def _pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def _stop(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_four_front_ends_at_once_start_one_host(tmp_path: Path) -> None:
    socket_path = tmp_path / "state" / "host" / "host.sock"
    pids = tmp_path / "pids"
    script = _starter_script(socket_path, pids)
    starters = [subprocess.Popen([sys.executable, "-P", "-c", script], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(4)]
    try:
        results = [starter.communicate(timeout=TIMEOUT) for starter in starters]
        assert [out.strip() for out, _ in results] == ["ping"] * 4, results
        assert len(_pids(pids)) == 1  # one host for all four
        assert oct(socket_path.parent.stat().st_mode & 0o777) == "0o700"
    finally:
        _stop(_pids(pids))


def _echo_host(socket_path: Path, pids: Path) -> subprocess.Popen[bytes]:
    import time

    from louise.serve import daemon

    socket_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    host = subprocess.Popen([*ECHO_HOST, str(socket_path), str(pids)])
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:  # listening once its pid is written
        if _pids(pids) and (sock := daemon.connect(socket_path)) is not None:
            sock.close()
            return host
        if host.poll() is not None:
            raise AssertionError("the echo host did not start")
        time.sleep(0.01)
    host.kill()
    raise AssertionError("the echo host did not listen")


def test_attach_sends_the_hello_then_pipes_both_ways(tmp_path: Path) -> None:
    socket_path = tmp_path / "host.sock"
    host = _echo_host(socket_path, tmp_path / "pids")
    spec = {"command": "/bin/agent", "args": ["--acp"], "env": {"TOKEN": "x"}, "cwd": None}
    try:
        attach = subprocess.run(
            [*LOUISE, "attach", "--socket", str(socket_path), "--agent", "claude",
             "--front-end", "nvim"],
            input=b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n',
            capture_output=True, timeout=TIMEOUT,
            env={**os.environ, "LOUISE_ATTACH_SPEC": json.dumps(spec)})
    finally:
        host.kill()
        host.wait()
    assert attach.returncode == 0, attach.stderr
    hello, request = attach.stdout.decode().splitlines()
    params = json.loads(hello)["params"]
    assert json.loads(hello)["method"] == "_louise/attach"
    assert params["agent"] == "claude" and params["agentCommand"] == spec
    assert params["frontEnd"] == {"name": "nvim", "pid": os.getpid(), "sameMachine": True}
    assert json.loads(request)["method"] == "initialize"
    assert attach.stderr == b""


def test_a_killed_host_is_said_in_one_line_and_the_next_start_makes_a_new_one(
        tmp_path: Path) -> None:
    socket_path = tmp_path / "host.sock"
    pids = tmp_path / "pids"
    host = _echo_host(socket_path, pids)
    attach = subprocess.Popen([*LOUISE, "attach", "--socket", str(socket_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    assert attach.stdin is not None and attach.stdout is not None
    try:
        attach.stdin.write(b"one\n")
        attach.stdin.flush()
        assert attach.stdout.readline() == b"one\n"  # connected, piping
        host.kill()
        host.wait()
        assert attach.wait(timeout=TIMEOUT) == 1
        stderr = attach.stderr.read().decode() if attach.stderr else ""
        assert stderr.splitlines() == [
            "louise attach: the session host closed the connection (it stopped or crashed);"
            " starting the Agent again starts a new host"]
        # The next front end finds the socket dead and starts a new host.
        restart = subprocess.run([sys.executable, "-P", "-c", _starter_script(socket_path, pids)],
                                 capture_output=True, text=True, timeout=TIMEOUT)
        assert restart.stdout.strip() == "ping", restart.stderr
        assert len(_pids(pids)) == 2
    finally:
        attach.kill()
        _stop(_pids(pids))


def test_attach_via_a_command_pipes_through_its_stdio(tmp_path: Path) -> None:
    """`--via` runs the command without a shell (split as a shell would) and sends no
    agent command: the far host resolves the name itself, and it is not the same
    machine."""
    echo = f"{sys.executable} -P -c 'import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())'"
    attach = subprocess.run(
        [*LOUISE, "attach", "--agent", "demo", "--via", f"sh -c \"{echo}\""],
        input=b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n',
        capture_output=True, timeout=TIMEOUT,
        env={**os.environ, "LOUISE_ATTACH_SPEC": json.dumps({"command": "x"})})
    assert attach.returncode == 0, attach.stderr
    hello, request = attach.stdout.decode().splitlines()
    params = json.loads(hello)["params"]
    assert params["agentCommand"] is None
    assert params["frontEnd"]["sameMachine"] is False
    assert json.loads(request)["id"] == 0


def test_a_via_command_that_is_missing_is_one_line(tmp_path: Path) -> None:
    attach = subprocess.run([*LOUISE, "attach", "--via", "no-such-transport-x1 host"],
                            capture_output=True, text=True, timeout=TIMEOUT,
                            stdin=subprocess.DEVNULL)
    assert attach.returncode == 2
    assert attach.stderr.splitlines() == [
        "louise attach: could not run 'no-such-transport-x1': No such file or directory"]


def test_a_socket_deeper_than_an_address_holds_is_still_reached(tmp_path: Path) -> None:
    """sun_path holds about 100 bytes; a deep state directory is reached through its
    directory held open (paths.short_address)."""
    import socket

    from louise.serve import daemon, paths

    deep = tmp_path.joinpath(*["d" * 40] * 4)
    deep.mkdir(parents=True)
    target = deep / "host.sock"
    assert len(str(target)) > paths.MAX_SOCKET_ADDRESS
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with paths.short_address(target) as address:
        server.bind(address)
    server.listen(1)
    try:
        client = daemon.connect(target)
        assert client is not None
        client.close()
    finally:
        server.close()


# ---------------------------------------------------------------- with the real host


class HostPlace:
    """An isolated state directory (short: a socket's address is bounded) and config, and
    the hosts started there, stopped at the end (they run detached by design)."""

    def __init__(self, root: Path, config: str) -> None:
        self.root = root
        self.state = root / "state"
        self.config = root / "config.toml"
        self.config.write_text(config)
        self.env = {**os.environ, "LOUISE_STATE_DIR": str(self.state),
                    "LOUISE_CONFIG": str(self.config)}
        self.env.pop("LOUISE_LOG", None)
        self.socket = self.state / "host" / "host.sock"

    def hosts(self) -> list[int]:
        """The host processes serving this place's socket (by their command lines)."""
        return host_pids(self.socket, with_stdio=False)

    def stop(self) -> None:
        _stop(self.hosts())


def _place(config: str = '[host]\nmode = "auto"\n') -> HostPlace:
    import tempfile

    return HostPlace(Path(tempfile.mkdtemp(prefix="lse", dir="/tmp")), config)


INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'


def test_four_attaches_at_once_start_one_real_host() -> None:
    place = _place()
    try:
        attaches = [subprocess.Popen([*LOUISE, "attach", "--agent", "demo"], env=place.env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE) for _ in range(4)]
        answers = [attach.communicate(INITIALIZE, timeout=TIMEOUT) for attach in attaches]
        for (out, err), attach in zip(answers, attaches, strict=True):
            assert attach.returncode == 0, err
            assert json.loads(out.splitlines()[0])["result"]["protocolVersion"] == 1
        assert len(place.hosts()) == 1
        assert oct(place.socket.stat().st_mode & 0o777) == "0o600"
        assert oct(place.socket.parent.stat().st_mode & 0o777) == "0o700"
    finally:
        place.stop()


def test_a_chat_through_the_host_started_on_demand_and_kept() -> None:
    place = _place()
    try:
        first = subprocess.run([*LOUISE, "chat", "--agent", "demo", "hello host"],
                               env=place.env, capture_output=True, text=True, timeout=TIMEOUT,
                               cwd=place.root, stdin=subprocess.DEVNULL)
        assert first.returncode == 0, first.stderr
        assert "You wrote: *hello host*" in first.stdout
        hosts = place.hosts()
        assert len(hosts) == 1  # it outlives the front end that started it
        second = subprocess.run([*LOUISE, "chat", "--agent", "demo", "again"],
                                env=place.env, capture_output=True, text=True,
                                timeout=TIMEOUT, cwd=place.root, stdin=subprocess.DEVNULL)
        assert second.returncode == 0, second.stderr
        assert place.hosts() == hosts  # the same host
    finally:
        place.stop()


def test_a_host_killed_mid_turn_is_one_line_and_the_next_chat_starts_a_new_one() -> None:
    from tests.integration.cli_helpers import Running

    place = _place()
    try:
        chat = Running("chat", "--agent", "demo", "/scenario slow delay_ms=50", env=place.env,
                       cwd=place.root)
        chat.wait_for("tick 3")
        [host] = place.hosts()
        os.kill(host, signal.SIGKILL)
        code, _out, err = chat.finish()
        assert code == 1
        assert err.splitlines() == [
            "louise: the session host closed the connection (it stopped or crashed); "
            "starting the Agent again starts a new host"], err
        again = subprocess.run([*LOUISE, "chat", "--agent", "demo", "after the crash"],
                               env=place.env, capture_output=True, text=True,
                               timeout=TIMEOUT, cwd=place.root, stdin=subprocess.DEVNULL)
        assert again.returncode == 0, again.stderr
        assert "You wrote: *after the crash*" in again.stdout
        assert len(place.hosts()) == 1 and place.hosts() != [host]
    finally:
        place.stop()


def test_a_session_driven_through_a_command_transport() -> None:
    """`[host] via`: the host is reached through a command's stdio, here a shell running
    `louise serve --stdio` (what ssh or docker exec would run on the far side)."""
    place = _place()
    serve = f"exec {sys.executable} -P -m louise.cli serve --stdio --socket {place.socket}"
    place.config.write_text(f'[host]\nmode = "auto"\nvia = "sh -c \'{serve}\'"\n')
    try:
        chat = subprocess.run([*LOUISE, "chat", "--agent", "demo", "over a pipe"],
                              env=place.env, capture_output=True, text=True, timeout=TIMEOUT,
                              cwd=place.root, stdin=subprocess.DEVNULL)
        assert chat.returncode == 0, chat.stderr
        assert "You wrote: *over a pipe*" in chat.stdout
        assert len(place.hosts()) == 1  # `serve --stdio` started the far side's host
    finally:
        place.stop()


def test_louise_chat_attach_shows_the_session_once_and_who_answered(tmp_path: Path) -> None:
    """A raw ACP client and `louise chat --attach` on one session of a real host: the chat
    shows what happened so far once, then the stream; without a terminal it leaves the
    permission to the other front end and, once that answers, says who did."""
    from tests.integration.cli_helpers import Running
    from tests.integration.serve_clients import Client, new_session, prompt, running_host

    with running_host() as host:
        first = Client(host.socket, "acp")
        session = new_session(first, tmp_path)
        assert first.answer(prompt(first, session, "before the chat"))["result"][
            "stopReason"] == "end_turn"
        env = {**os.environ, "LOUISE_STATE_DIR": str(host.socket.parent.parent),
               "LOUISE_CONFIG": str(tmp_path / "none.toml")}
        chat = Running("chat", "--agent", "demo", "--attach", session, "--cwd", str(tmp_path),
                       env=env)
        try:
            chat.wait_for("You wrote: *before the chat*")  # the history, shown
            done = prompt(first, session, "/scenario edit")
            asked = first.wait(lambda m: m.get("method") == "session/request_permission",
                               "the permission request")
            chat.wait_for("answer it in another window", stderr=True)
            allow = next(o["optionId"] for o in asked["params"]["options"]
                         if o["kind"] == "allow_once")
            first.send({"jsonrpc": "2.0", "id": asked["id"],
                        "result": {"outcome": {"outcome": "selected", "optionId": allow}}})
            chat.wait_for("[info] answered in another window: allowed once", stderr=True)
            assert first.answer(done)["result"]["stopReason"] == "end_turn"
            chat.wait_for("[info] the turn prompted in another window ended", stderr=True)
        finally:
            chat.interrupt()
            _code, out, err = chat.finish()
        assert out.count("You wrote: *before the chat*") == 1, out
        assert "> before the chat" in err and "> /scenario edit" in err
        assert "— by an ACP client (pid " in err


def test_louise_chat_attached_mid_reply_continues_the_replys_line(tmp_path: Path) -> None:
    """Attached while a reply streams, the chat prints the reply so far, then the rest of
    it on the same line: no line break where the history ended (a CI run with vibe once
    showed "Here is a streamed \nreply from …" that way)."""
    from tests.integration.cli_helpers import Running
    from tests.integration.serve_clients import Client, new_session, prompt, running_host

    def ticks(client: Client) -> str:
        return "".join(m["params"]["update"]["content"]["text"] for m in client.seen
                       if m.get("method") == "session/update"
                       and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk")

    with running_host() as host:
        first = Client(host.socket, "acp")
        session = new_session(first, tmp_path)
        done = prompt(first, session, "/scenario slow delay_ms=100 chunks=200")
        first.wait(lambda _m: "tick 2 " in ticks(first), "the reply's third chunk")
        env = {**os.environ, "LOUISE_STATE_DIR": str(host.socket.parent.parent),
               "LOUISE_CONFIG": str(tmp_path / "none.toml")}
        chat = Running("chat", "--agent", "demo", "--attach", session, "--cwd", str(tmp_path),
                       env=env)
        try:
            chat.wait_for("tick 0 ")  # the history
            later = bytes(chat.stdout).count(b"tick") + 2
            chat.wait_for(f"tick {later} ")  # and the stream after it
            first.send({"jsonrpc": "2.0", "method": "session/cancel",
                        "params": {"sessionId": session}})
            assert first.answer(done)["result"]["stopReason"] == "cancelled"
            chat.wait_for("[info] the turn prompted in another window was cancelled",
                          stderr=True)
        finally:
            chat.interrupt()
            _code, out, err = chat.finish()
        reply = ticks(first)
    assert out == reply + "\n", f"stdout:\n{out!r}\nthe agent sent:\n{reply!r}\n{err}"


def test_a_permission_answered_in_another_window_covers_this_windows_write(
        tmp_path: Path) -> None:
    """louise sends the prompt through the host; a raw client on the same session allows
    the edit first. louise's question is withdrawn, and the write the agent then asks
    louise for (same machine: louise's fs) is not asked again by louise's gate: it lands,
    the turn ends."""
    import anyio

    from louise.config.loading import load_config_mapping
    from louise.registry import SessionRegistry
    from tests.integration.serve_clients import Client, load_session, running_host

    class Waiting:
        """A person who never answers here (the other window does)."""

        def __init__(self) -> None:
            self.asked = 0
            self.cancelled = 0

        async def decide(self, request: object, queue: object) -> str | None:
            self.asked += 1
            try:
                await anyio.sleep_forever()
            finally:
                self.cancelled += 1
            return None

    async def scenario(host_dir: Path, socket_path: Path) -> None:
        os.environ["LOUISE_STATE_DIR"] = str(host_dir)
        decider = Waiting()
        config = load_config_mapping({"host": {"mode": "auto"}})
        async with SessionRegistry(config, decider=decider, limits_cache=None,
                                   permission_memory=None, transcripts_dir=None,
                                   remembered=None) as registry:
            session = await registry.new_session("demo", str(tmp_path))
            acp_id = session.session_id.partition(":")[2]
            other = Client(socket_path, "nvim")
            await anyio.to_thread.run_sync(load_session, other, acp_id, tmp_path)
            async with anyio.create_task_group() as tg:
                ended: list[str | None] = []

                async def turn() -> None:
                    ended.append(await registry.prompt(session.session_id, "/scenario edit"))

                tg.start_soon(turn)
                asked = await anyio.to_thread.run_sync(lambda: other.wait(
                    lambda m: m.get("method") == "session/request_permission", "the request"))
                allow = next(o["optionId"] for o in asked["params"]["options"]
                             if o["kind"] == "allow_once")
                other.send({"jsonrpc": "2.0", "id": asked["id"], "result": {
                    "outcome": {"outcome": "selected", "optionId": allow}}})
                with anyio.move_on_after(TIMEOUT):
                    while not ended:
                        await anyio.sleep(0.05)
                if not ended:
                    model = registry.session(session.session_id)
                    raise AssertionError(f"no end: asked {decider.asked} cancelled "
                                         f"{decider.cancelled} status {model.status} "
                                         f"{[getattr(e, 'text', e) for e in model.entries]}")
            assert ended == ["end_turn"]
            # Withdrawn (asked and cancelled, or cancelled before it was asked here), and
            # the gate never asked again for the write it allowed.
            assert decider.asked == decider.cancelled <= 1
            assert (tmp_path / "hello.py").exists()
            lines = [getattr(e, "text", "") for e in registry.session(session.session_id).entries]
            assert any(line.startswith("answered in another window: allowed once")
                       for line in lines), lines

    with running_host() as host:
        old = os.environ.get("LOUISE_STATE_DIR")
        try:
            anyio.run(scenario, host.socket.parent.parent, host.socket)
        finally:
            if old is None:
                os.environ.pop("LOUISE_STATE_DIR", None)
            else:
                os.environ["LOUISE_STATE_DIR"] = old


def test_a_host_that_fails_to_start_is_one_line_with_its_reason(tmp_path: Path) -> None:
    from louise.serve import daemon

    failing = [sys.executable, "-c", "import sys; print('no such config', file=sys.stderr);"
               " sys.exit(3)"]
    try:
        daemon.connect_or_start(tmp_path / "host" / "host.sock", argv=failing)
    except daemon.HostUnreachable as exc:
        assert str(exc) == "the session host exited at its start (status 3): no such config"
    else:
        raise AssertionError("a host that exits at its start was reported as reached")


def test_a_slow_host_start_is_said_once_with_what_is_awaited(tmp_path: Path) -> None:
    """Past 2 s of waiting for the host to listen, the front end hears once what it waits
    for (then it connects when the host listens)."""
    from louise.serve import daemon

    socket_path = tmp_path / "host" / "host.sock"
    slow = [sys.executable, "-c", "import os, sys, time; time.sleep(3);"
            f" os.execv(sys.executable, {[*ECHO_HOST, str(socket_path), str(tmp_path / 'p')]!r})"]
    said: list[str] = []
    sock = daemon.connect_or_start(socket_path, argv=slow, say=said.append)
    try:
        assert len(said) == 1
        assert said[0].startswith(f"waiting for the session host to listen on {socket_path}")
    finally:
        sock.close()
        _stop(_pids(tmp_path / "p"))


def test_a_host_closing_in_answer_to_the_front_ends_end_is_not_a_host_lost() -> None:
    """The front end closes; the host answers by closing too. That is the front end's
    end (exit 0), however the two ends cross: repeated, since it is a race."""
    import socket
    import threading

    from louise.serve import pipe

    for _ in range(200):
        front_read, front_write = os.pipe()  # what the front end writes (then closes)
        out_read, out_write = os.pipe()  # what the front end reads
        ours, theirs = socket.socketpair()

        def host(sock: socket.socket = theirs) -> None:
            while sock.recv(4096):
                pass
            sock.close()  # at the front end's end, at once

        threading.Thread(target=host, daemon=True).start()
        os.write(front_write, b"{}\n")
        os.close(front_write)

        def close_out(fd: int = out_write) -> None:
            os.close(fd)

        ended = pipe.pump(pipe.Channel(front_read, out_write, close_out),
                          pipe.socket_channel(ours), linger=5)
        assert ended is pipe.Ended.FRONT_END
        for fd in (front_read, out_read):
            os.close(fd)
        ours.close()
