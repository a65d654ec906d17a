"""The session host for real: a host process on a temporary socket, the bundled demo
agent, raw ACP clients. Same stream to every front end of a session; the first answer
to a permission request wins and the others are told; prompts queue in one queue; a
turn goes on when its front end leaves, and a front end that loads the session again
sees it once; a front end that stops reading is cut off while the other keeps going; the
socket is private; an idle host ends."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from louise.serve import daemon
from louise.serve.hello import AgentCommand, Hello, build_hello
from tests.integration.serve_clients import (
    WAIT,
    Client,
    load_session,
    new_session,
    prompt,
    running_host,
    update_text,
    wait_for,
)

SLOW = "/scenario slow delay_ms=20 chunks={n}"


def test_every_front_end_of_a_session_sees_the_same_stream(tmp_path: Path) -> None:
    with running_host() as host:
        first, second = Client(host.socket, "nvim"), Client(host.socket, "cli")
        session = new_session(first, tmp_path)
        load_session(second, session, tmp_path)
        done = prompt(first, session, SLOW.format(n=8))
        assert first.answer(done)["result"]["stopReason"] == "end_turn"
        second.wait(lambda m: "tick 7" in update_text(m), "the last tick at the second")
        assert "tick 7" in first.texts()
        assert first.texts() == second.texts()
        # The second saw the first's prompt as a user message; the first did not get it
        # back.
        said = [update_text(m, "user_message_chunk") for m in second.seen]
        assert SLOW.format(n=8) in said
        assert not any(update_text(m, "user_message_chunk") for m in first.seen)


def test_the_first_answer_to_a_permission_request_wins(tmp_path: Path) -> None:
    with running_host() as host:
        first, second = Client(host.socket, "nvim"), Client(host.socket, "cli")
        session = new_session(first, tmp_path)
        load_session(second, session, tmp_path)
        done = prompt(first, session, "/scenario edit")
        asked = [client.wait(lambda m: m.get("method") == "session/request_permission",
                             "the permission request") for client in (first, second)]
        allow = next(o["optionId"] for o in asked[1]["params"]["options"]
                     if o["kind"] == "allow_once")
        second.send({"jsonrpc": "2.0", "id": asked[1]["id"],
                     "result": {"outcome": {"outcome": "selected", "optionId": allow}}})
        cancel = first.wait(lambda m: m.get("method") == "$/cancel_request",
                            "the cancel of the first's question")
        assert cancel["params"]["requestId"] == asked[0]["id"]
        told = first.wait(lambda m: m.get("method") == "_louise/permission_answered",
                          "who answered")["params"]
        assert told["sessionId"] == session
        assert told["outcome"] == {"outcome": "selected", "optionId": allow}
        assert told["optionKind"] == "allow_once"
        assert told["by"].startswith("louise chat")
        assert first.answer(done)["result"]["stopReason"] == "end_turn"
        assert (tmp_path / "hello.py").exists(), first.texts()  # the host wrote it
        assert not any(m.get("method") == "_louise/permission_answered" for m in second.seen)


def test_prompts_from_two_front_ends_queue_in_one_queue(tmp_path: Path) -> None:
    with running_host() as host:
        first, second = Client(host.socket, "nvim"), Client(host.socket, "cli")
        session = new_session(first, tmp_path)
        load_session(second, session, tmp_path)
        running = prompt(first, session, SLOW.format(n=30))
        first.wait(lambda m: "tick 0" in update_text(m), "the first turn running")
        queued = prompt(second, session, "hello from the second")
        assert first.answer(running)["result"]["stopReason"] == "end_turn"
        assert second.answer(queued)["result"]["stopReason"] == "end_turn"
        first.wait(lambda m: bool(update_text(m, "user_message_chunk")), "the second's prompt")
        # Queued, not interleaved: the second prompt reached the agent after the first
        # turn's last tick, as every front end's stream shows.
        kinds = [("user" if update_text(m, "user_message_chunk") else "tick"
                  if "tick" in update_text(m) else None) for m in first.seen]
        kinds = [k for k in kinds if k]
        assert kinds[-1] == "user" and kinds.count("user") == 1
        assert "tick 29" in second.texts()


def test_a_turn_goes_on_without_its_front_end_and_a_reload_sees_it_once(
        tmp_path: Path) -> None:
    with running_host() as host:
        first = Client(host.socket, "nvim")
        session = new_session(first, tmp_path)
        prompt(first, session, SLOW.format(n=25))
        first.wait(lambda m: "tick 1" in update_text(m), "the turn running")
        first.close()  # Neovim quit mid-turn
        again = Client(host.socket, "nvim")
        loaded = load_session(again, session, tmp_path)
        if loaded["_meta"]["louise"]["turnRunning"]:  # else it ended before the load
            ended = again.wait(lambda m: m.get("method") == "_louise/turn_ended",
                               "the turn's end")
            assert ended["params"] == {"sessionId": session, "stopReason": "end_turn"}
        text = again.texts()
        for index in range(25):
            assert text.count(f"tick {index} ") == 1, (index, text)
        said = [update_text(m, "user_message_chunk") for m in again.seen]
        assert said.count(SLOW.format(n=25)) == 1
        replayed = [m for m in again.seen if m.get("method") == "session/update"
                    and (m["params"].get("_meta") or {}).get("louise", {}).get("replay")]
        assert replayed  # what happened before it attached came as the replay


def test_a_question_asked_with_nobody_attached_waits_for_the_next(tmp_path: Path) -> None:
    with running_host() as host:
        first = Client(host.socket, "nvim")
        session = new_session(first, tmp_path)
        prompt(first, session, "/scenario edit")
        first.wait(lambda m: m.get("method") == "session/request_permission", "the question")
        first.close()
        again = Client(host.socket, "nvim")
        load_session(again, session, tmp_path)
        asked = again.wait(lambda m: m.get("method") == "session/request_permission",
                           "the question again")
        waited = asked["params"]["_meta"]["louise"]
        assert waited["waitedSeconds"] >= 0 and waited["askedAt"] > 0
        reject = next(o["optionId"] for o in asked["params"]["options"]
                      if o["kind"] == "reject_once")
        again.send({"jsonrpc": "2.0", "id": asked["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": reject}}})
        again.wait(lambda m: "unchanged" in update_text(m), "the agent's answer to the reject")
        assert not (tmp_path / "hello.py").exists()


def _read_until(sock: socket.socket, needle: bytes) -> bytes:
    """Read raw bytes until `needle` came (bounded by the socket's timeout)."""
    data = b""
    while needle not in data:
        chunk = sock.recv(65536)
        assert chunk, "the host closed the connection"
        data += chunk
    return data


def test_a_front_end_that_stops_reading_is_cut_off_and_the_other_keeps_going(
        tmp_path: Path) -> None:
    # Far more than the budget and the sockets' buffers; paced, and the budget roomy
    # enough, that the client that reads keeps within it even on a loaded machine.
    stream = 400 * 16384
    with running_host(budget=2 * 1024 * 1024) as host:
        reading = Client(host.socket, "cli")
        session = new_session(reading, tmp_path)
        stuck = Client(host.socket, "nvim", read=False)
        stuck.sock.settimeout(WAIT)
        stuck.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        stuck.request("session/load", {"sessionId": session, "cwd": str(tmp_path),
                                       "mcpServers": []})
        _read_until(stuck.sock, b'"id":2,')  # attached; from now on it reads nothing
        done = prompt(reading, session, "/scenario stream chunks=400 size=16384 delay_ms=1")
        assert reading.answer(done)["result"]["stopReason"] == "end_turn"
        assert len(reading.texts()) >= stream
        wait_for(lambda: b"stopped reading" in host.stderr, "the host's note of the cut")
        # The stuck one was cut off: what it can still read ends well short of the stream.
        got = 0
        try:
            while chunk := stuck.sock.recv(1 << 20):
                got += len(chunk)
        except ConnectionResetError:
            pass
        assert got < stream
        # And the host still serves: a new front end loads the session.
        later = Client(host.socket, "nvim")
        load_session(later, session, tmp_path)


def test_the_socket_is_private_and_refuses_other_users(tmp_path: Path) -> None:
    with running_host() as host:
        assert stat.S_IMODE(os.stat(host.socket.parent).st_mode) == 0o700
        assert stat.S_IMODE(os.lstat(host.socket).st_mode) == 0o600
        assert os.geteuid() == 0, "run as root (as CI does) to test another user's refusal"
        # Another user connecting (the directory's mode aside: root may pass it, so the
        # peer-credentials check is what refuses): the host closes without a word.
        os.chmod(host.socket.parent, 0o755)
        os.chmod(host.socket, 0o666)
        code = (
            "import os, socket, sys\n"
            "os.setgid(65534); os.setuid(65534)\n"
            "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(60)\n"
            "try:\n"  # the host may close before, while or after it reads this
            "    s.sendall(b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",'\n"
            "              b'\"params\":{\"protocolVersion\":1}}\\n')\n"
            "    print('read', repr(s.recv(65536)))\n"
            "except (ConnectionResetError, BrokenPipeError):\n"
            "    print('closed')\n")
        out = subprocess.run([sys.executable, "-c", code, str(host.socket)],
                             capture_output=True, text=True, timeout=WAIT)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() in ("closed", "read b''"), out.stdout
        wait_for(lambda: b"refused a connection from uid 65534" in host.stderr,
                 "the host's note of the refusal")


def test_an_idle_host_ends_and_removes_its_socket(tmp_path: Path) -> None:
    with running_host(idle_exit=1.0) as host:
        client = Client(host.socket, "nvim")
        session = new_session(client, tmp_path)
        done = prompt(client, session, SLOW.format(n=3))
        client.answer(done)
        client.close()
        assert host.proc.wait(WAIT) == 0
        assert not host.socket.exists()


def test_a_plain_acp_client_without_the_hello_gets_the_default_agent(tmp_path: Path) -> None:
    with running_host() as host:
        client = Client(host.socket, hello=False)
        session = new_session(client, tmp_path)
        done = prompt(client, session, "hi")
        assert client.answer(done)["result"]["stopReason"] == "end_turn"


def test_an_agent_that_exits_mid_turn_fails_the_turn_and_the_next_attach_starts_it_again(
        tmp_path: Path) -> None:
    with running_host() as host:
        first, second = Client(host.socket, "nvim"), Client(host.socket, "cli")
        session = new_session(first, tmp_path)
        load_session(second, session, tmp_path)
        done = prompt(first, session, "/scenario fail crash")
        failed = first.answer(done)
        assert "error" in failed and "exited" in failed["error"]["message"]
        first.wait_closed()
        second.wait_closed()  # both are told, by the end of their connection
        # A new front end gets a new agent, which loads the session from its own store.
        again = Client(host.socket, "nvim")
        load_session(again, session, tmp_path)
        assert host.proc.poll() is None


def test_one_connection_served_on_a_pair_of_descriptors(tmp_path: Path) -> None:
    code = ("import sys\n"
            "from louise.config.model import Config\n"
            "from louise.serve.run import serve_stdio_connection\n"
            "sys.exit(serve_stdio_connection(0, 1, config=Config()))\n")
    proc = subprocess.Popen([sys.executable, "-P", "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        def send(message: dict[str, object]) -> None:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()

        def answer(request_id: int) -> dict[str, Any]:
            assert proc.stdout is not None
            while True:
                message = json.loads(proc.stdout.readline())
                if message.get("id") == request_id and "method" not in message:
                    return message  # type: ignore[no-any-return]

        proc.stdin.write(build_hello(Hello(agent="demo")))
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": 1, "clientCapabilities": {}}})
        assert answer(1)["result"]["agentInfo"]["name"] == "louise-demo-agent"
        send({"jsonrpc": "2.0", "id": 2, "method": "session/new",
              "params": {"cwd": str(tmp_path), "mcpServers": []}})
        session = answer(2)["result"]["sessionId"]
        send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
              "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}})
        assert answer(3)["result"]["stopReason"] == "end_turn"
        proc.stdin.close()
        assert proc.wait(WAIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_agent_gets_what_the_first_front_end_offers_and_asks_the_prompting_one(
        tmp_path: Path) -> None:
    with running_host() as host:
        first, second = Client(host.socket, "nvim"), Client(host.socket, "cli")
        first.call("initialize", {"protocolVersion": 1,
                                  "clientCapabilities": {"elicitation": {"form": {}}}})
        session = first.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})[
            "sessionId"]
        load_session(second, session, tmp_path)
        done = prompt(second, session, "/scenario ask")
        asked = second.wait(lambda m: m.get("method") == "elicitation/create", "the form")
        second.send({"jsonrpc": "2.0", "id": asked["id"],
                     "result": {"action": "accept", "content": {"name": "x", "count": 2}}})
        assert second.answer(done)["result"]["stopReason"] == "end_turn"
        assert "Thanks: count=2, name='x'" in second.texts()
        assert not any(m.get("method") == "elicitation/create" for m in first.seen)


def test_the_agent_command_in_the_hello_is_the_agent_started(tmp_path: Path) -> None:
    with running_host() as host:
        command = AgentCommand(sys.executable, ("-P", "-m", "louise.demo_agent"),
                               {"LOUISE_DEMO_AGENT_NAME_FOR_TEST": "1"})
        client = Client(host.socket, "nvim", agent="only-in-setup", command=command)
        session = new_session(client, tmp_path)
        done = prompt(client, session, "hi")
        assert client.answer(done)["result"]["stopReason"] == "end_turn"
        missing = Client(host.socket, "nvim", agent="gone",
                         command=AgentCommand("no-such-agent-command-anywhere"))
        refused = missing.answer(missing.request("initialize", {"protocolVersion": 1}))
        assert refused["error"]["message"] == (
            "agent command not found: 'no-such-agent-command-anywhere'")
        unknown = Client(host.socket, "nvim", agent="nobody")
        refused = unknown.answer(unknown.request("initialize", {"protocolVersion": 1}))
        assert refused["error"]["message"].startswith("unknown Agent 'nobody'")


def test_files_are_read_by_the_prompting_front_end_on_this_machine_else_by_the_host(
        tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("on disk\n")
    with running_host() as host:
        editor = Client(host.socket, "nvim")
        remote = Client(host.socket, "nvim", same_machine=False)
        editor.call("initialize", {"protocolVersion": 1, "clientCapabilities": {
            "fs": {"readTextFile": True, "writeTextFile": True}}})
        session = editor.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})[
            "sessionId"]
        done = prompt(editor, session, "/scenario read path=notes.txt")
        asked = editor.wait(lambda m: m.get("method") == "fs/read_text_file", "the read")
        assert asked["params"]["path"] == str(tmp_path / "notes.txt")
        editor.send({"jsonrpc": "2.0", "id": asked["id"],
                     "result": {"content": "in the editor's buffer\n"}})
        editor.answer(done)
        assert "in the editor's buffer" in editor.texts()
        # A front end that is not on this machine: the host reads the file itself.
        remote.call("initialize", {"protocolVersion": 1, "clientCapabilities": {
            "fs": {"readTextFile": True, "writeTextFile": True}}})
        remote.call("session/load", {"sessionId": session, "cwd": str(tmp_path),
                                     "mcpServers": []})
        done = remote.request("session/prompt", {
            "sessionId": session,
            "prompt": [{"type": "text", "text": "/scenario read path=notes.txt"}]})
        remote.answer(done)
        assert "on disk" in remote.texts()
        assert not any(m.get("method") == "fs/read_text_file" for m in remote.seen)


def test_after_a_host_is_killed_a_new_one_loads_the_session_from_the_agent(
        tmp_path: Path) -> None:
    with running_host() as host:
        first = Client(host.socket, "nvim")
        session = new_session(first, tmp_path)
        done = prompt(first, session, "remember the word marmalade")
        first.answer(done)
        host.proc.kill()
        host.proc.wait(WAIT)
        first.wait_closed()  # the front end sees its host go
        assert host.socket.exists()  # left behind by the killed host
        socket_path = host.socket
    with running_host(socket_path=socket_path) as host:  # the stale socket is replaced
        again = Client(host.socket, "nvim")
        load_session(again, session, tmp_path)
        said = [update_text(m, "user_message_chunk") for m in again.seen]
        assert "remember the word marmalade" in said  # the agent's own replay
        done = prompt(again, session, "and now?")
        assert again.answer(done)["result"]["stopReason"] == "end_turn"


def test_the_agents_terminal_runs_at_the_host(tmp_path: Path) -> None:
    with running_host() as host:
        client = Client(host.socket, "nvim")
        session = new_session(client, tmp_path)
        done = prompt(client, session, "/scenario execute")
        asked = client.wait(lambda m: m.get("method") == "session/request_permission",
                            "the question")
        allow = next(o["optionId"] for o in asked["params"]["options"]
                     if o["kind"] == "allow_once")
        client.send({"jsonrpc": "2.0", "id": asked["id"],
                     "result": {"outcome": {"outcome": "selected", "optionId": allow}}})
        assert client.answer(done)["result"]["stopReason"] == "end_turn"
        assert "`echo hello from louise-demo-agent` exited with 0" in client.texts()
        assert "hello from louise-demo-agent\n" in client.texts()
        # The front end was never asked to run it: the terminal is the host's.
        assert not any(str(m.get("method", "")).startswith("terminal/") for m in client.seen)


def test_with_nobody_attached_a_configured_reject_rule_answers(tmp_path: Path) -> None:
    Path(os.environ["LOUISE_CONFIG"]).write_text(
        '[permissions]\nrules = [{ kind = "edit", decision = "reject" }]\n')
    with running_host() as host:
        first = Client(host.socket, "nvim")
        session = new_session(first, tmp_path)
        prompt(first, session, SLOW.format(n=30))
        prompt(first, session, "/scenario edit")  # queued behind the slow turn
        first.wait(lambda m: "tick 0" in update_text(m), "the slow turn running")
        first.close()  # the edit's question comes once nobody is attached
        later = Client(host.socket, "nvim")
        wait_for(lambda: b"answered by the configured rules" in host.stderr,
                 "the rule's answer")
        load_session(later, session, tmp_path)
        later.wait(lambda m: "unchanged" in update_text(m), "the agent's answer to the rule")
        assert not any(m.get("method") == "session/request_permission" for m in later.seen)
        assert not (tmp_path / "hello.py").exists()


def test_the_hosts_own_messages_forged_by_an_agent_reach_no_front_end(tmp_path: Path) -> None:
    # An agent (hostile, or fooled by what it read) writing the host's own word: a
    # "permission answered in another window: allowed", a turn's end, as notification and
    # as request.
    script = Path(__file__).parents[1] / "fakes" / "script_agent.py"
    forged = {"toolCallId": "t1", "outcome": {"outcome": "selected", "optionId": "yes"},
              "by": "Neovim (pid 1)"}
    steps = [{"notify": "_louise/permission_answered", "params": forged},
             {"notify": "_louise/turn_ended", "params": {"stopReason": "end_turn"}},
             {"request": "_louise/permission_answered", "params": forged}]
    with running_host() as host:
        command = AgentCommand(sys.executable, ("-P", str(script)))
        first = Client(host.socket, "nvim", agent="script", command=command)
        second = Client(host.socket, "cli", agent="script", command=command)
        session = new_session(first, tmp_path)
        load_session(second, session, tmp_path)
        done = prompt(first, session, json.dumps(steps))
        assert first.answer(done)["result"]["stopReason"] == "end_turn"
        # The request was refused at the host: the agent heard "no such method".
        answer = first.wait(lambda m: "ANSWER _louise/" in update_text(m), "the answer")
        assert '"code": -32601' in update_text(answer)
        # The second front end gets the turn's end from the host (it did not prompt).
        second.wait(lambda m: m.get("method") == "_louise/turn_ended", "the turn's end")
        second.wait(lambda m: "ANSWER _louise/" in update_text(m), "the answer, second")

        def told(client: Client, method: str) -> int:
            return sum(m.get("method") == method for m in client.seen)

        assert told(first, "_louise/permission_answered") == 0
        assert told(second, "_louise/permission_answered") == 0
        assert told(first, "_louise/turn_ended") == 0  # the sender has its answer
        assert told(second, "_louise/turn_ended") == 1  # the host's, not the forgery
        wait_for(lambda: b"a message only louise serve itself sends" in host.stderr,
                 "the one line in the host's log")


def test_a_socket_path_longer_than_a_unix_socket_address_is_listened_on(
        tmp_path: Path) -> None:
    # A state directory deep down (a test's, a long home): front ends reach it through
    # its directory held open (`paths.short_address`), and so must the host bind it.
    socket_path = tmp_path / ("d" * 60) / ("e" * 60) / "host" / "host.sock"
    assert len(os.fsencode(socket_path)) > 108
    with running_host(socket_path=socket_path) as host:
        assert stat.S_IMODE(os.lstat(socket_path).st_mode) == 0o600
        reached = daemon.connect(socket_path)  # as `louise attach` and Neovim connect
        assert reached is not None
        reached.close()
        client = Client(host.socket, "nvim")
        session = new_session(client, tmp_path)
        done = prompt(client, session, "hi")
        assert client.answer(done)["result"]["stopReason"] == "end_turn"
