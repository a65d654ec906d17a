"""The engine's frames with a stand-in for Neovim (in memory, no Neovim, no agent): what
reaches the applier when things happen while a frame is on its way, and what a failed
frame leads to."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise.nvim.engine import Engine
from louise.nvim.frames import APPLY
from louise.permissions.broker import PermissionRequest, QueueView


class FakeNeovim:
    """Records every frame batch; can hold a frame (a busy Neovim) and answer with the
    applier's report of failed handlers."""

    def __init__(self) -> None:
        self.batches: list[dict[str, Any]] = []
        self.release = threading.Event()
        self.release.set()
        self.completed = 0  # frames that got past `release` (the applier returned)
        self.fail: Callable[[dict[str, Any]], list[str]] = lambda batch: []

    async def exec_lua(self, code: str, *args: Any) -> Any:
        assert code == APPLY
        batch = args[0]
        self.batches.append(batch)
        await anyio.to_thread.run_sync(self.release.wait)
        self.completed += 1
        failed = self.fail(batch)
        return {"failed": failed} if failed else None

    async def post_lua(self, code: str, *args: Any) -> Any:
        """As the bridge's: the frame goes now, its answer is read later."""
        task = asyncio.ensure_future(self.exec_lua(code, *args))
        await asyncio.sleep(0)  # the frame reaches "Neovim" now, as a write to its socket

        class Call:
            async def result(self) -> Any:
                return await task

        return Call()

    def wait(self, predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.005)
        raise AssertionError(f"timed out; batches: {self.batches}")

    def batches_with(self, key: str) -> list[dict[str, Any]]:
        return [batch for batch in self.batches if key in batch]


@pytest.fixture
def ui() -> FakeNeovim:
    return FakeNeovim()


@pytest.fixture
def engine(ui: FakeNeovim) -> Iterator[Engine]:
    engine = Engine(ui, {"request_timeout": 30})  # type: ignore[arg-type]
    engine.start()
    try:
        yield engine
    finally:
        ui.release.set()
        engine.stop()


def on_loop(engine: Engine, func: Callable[..., Any], *args: Any) -> Future[Any]:
    portal = engine.host.portal
    assert portal is not None
    return portal.start_task_soon(func, *args)


def on_loop_call(engine: Engine, func: Callable[..., Any], *args: Any) -> Any:
    """A plain function run on the engine loop (its events are not thread-safe)."""
    portal = engine.host.portal
    assert portal is not None
    return portal.call(func, *args)


def hold_a_frame(engine: Engine, ui: FakeNeovim) -> None:
    """Neovim is busy with a frame: what happens now lands in the next one."""
    # The first frame (the limits labels) went out and was applied: clearing `release`
    # before its applier got past it would hold that frame instead of the next one.
    ui.wait(lambda: ui.completed >= 1)
    ui.release.clear()
    on_loop_call(engine, engine.notify, "busy")
    ui.wait(lambda: any("notify" in batch for batch in ui.batches))


def request(ident: int) -> PermissionRequest:
    return PermissionRequest(
        request_id=ident, agent="demo", agent_key="demo", workspace="/ws", session_id="demo:s",
        tool_call_id=f"t{ident}", title=f"Edit {ident}", kind="edit", paths=(), command=None,
        options=({"optionId": "allow", "name": "Allow", "kind": "allow_once"},),
        diffs=(), tool_call={})


def test_two_fs_conflicts_in_one_frame_both_reach_neovim_and_both_resolve(
        engine: Engine, ui: FakeNeovim) -> None:
    hold_a_frame(engine, ui)
    first = on_loop(engine, engine.conflicts.ask, Path("/ws/a.txt"), "demo:s")
    second = on_loop(engine, engine.conflicts.ask, Path("/ws/b.txt"), "demo:s")
    ui.wait(lambda: len(engine.outbox.fs_conflicts.items) == 2)
    ui.release.set()
    asked = ui.wait(lambda: ui.batches_with("fs_conflict"))
    assert len(asked) == 1, "one frame"
    conflicts = asked[0]["fs_conflict"]
    assert [c["path"] for c in conflicts] == ["/ws/a.txt", "/ws/b.txt"]
    engine.submit("fs_conflict_answer", {"id": conflicts[0]["id"], "choice": "buffer"})
    engine.submit("fs_conflict_answer", {"id": conflicts[1]["id"], "choice": "overwrite"})
    assert first.result(timeout=10) == "buffer"
    assert second.result(timeout=10) == "overwrite"


def test_a_permission_shown_and_answered_within_one_frame_never_reaches_neovim(
        engine: Engine, ui: FakeNeovim) -> None:
    hold_a_frame(engine, ui)
    decided = on_loop(engine, engine.decider.decide, request(5), QueueView(1, 1))
    ui.wait(lambda: 5 in engine.decider.pending)
    engine.submit("permission_answer", {"id": 5, "option": "allow"})
    assert decided.result(timeout=10) == "allow"
    ui.release.set()
    engine.submit("ping", {})
    ui.wait(lambda: ui.batches_with("pong"))
    assert ui.batches_with("permission") == [], "no show and close that leave a dead float"


def test_a_settled_permission_is_taken_off_the_screen(engine: Engine, ui: FakeNeovim) -> None:
    decided = on_loop(engine, engine.decider.decide, request(6), QueueView(1, 1))
    shown = ui.wait(lambda: ui.batches_with("permission"))
    assert shown[0]["permission"]["id"] == 6
    engine.submit("permission_answer", {"id": 6, "option": None})
    assert decided.result(timeout=10) is None
    ui.wait(lambda: len(ui.batches_with("permission")) == 2)
    assert ui.batches_with("permission")[1]["permission"] is False


def test_a_failed_conflict_prompt_refuses_the_writes_and_everything_is_sent_again(
        engine: Engine, ui: FakeNeovim) -> None:
    ui.fail = lambda batch: ["fs_conflict"] if "fs_conflict" in batch else []
    ui.wait(lambda: ui.batches_with("limits"))
    asked = on_loop(engine, engine.conflicts.ask, Path("/ws/a.txt"), "demo:s")
    assert asked.result(timeout=10) == "refuse", "never left waiting for an answer"
    # The full render after the failure: every label again.
    ui.wait(lambda: len(ui.batches_with("limits")) == 2)


def test_a_permission_that_cannot_be_shown_twice_is_cancelled(
        engine: Engine, ui: FakeNeovim) -> None:
    ui.fail = lambda batch: ["permission"] if batch.get("permission") else []
    decided = on_loop(engine, engine.decider.decide, request(8), QueueView(1, 1))
    assert decided.result(timeout=10) is None, "fails closed"
    shown = [b["permission"] for b in ui.batches_with("permission") if b["permission"]]
    assert [p["id"] for p in shown] == [8, 8], "sent once more after the first failure"
    ui.wait(lambda: any("could not be shown; it was cancelled" in note[0]
                        for b in ui.batches_with("notify") for note in b["notify"]))


def test_a_frame_that_keeps_failing_does_not_loop_full_renders(
        engine: Engine, ui: FakeNeovim) -> None:
    ui.fail = lambda batch: list(batch)
    ui.wait(lambda: ui.batches)
    on_loop_call(engine, engine.notify, "one")
    # The failure of the first frame and of each full render are bounded: the frames
    # settle instead of resending forever.
    ui.wait(lambda: engine.frames.failures_in_a_row >= 3)
    settled = len(ui.batches)
    # Two later notices, each waited for: a full render still going on (its batch holds
    # the permission state) would come before them or ride along with them.
    for text in ("two", "three"):
        on_loop_call(engine, engine.notify, text)
        ui.wait(lambda t=text: any(note[0] == t for b in ui.batches_with("notify")
                                   for note in b["notify"]))
    later = ui.batches[settled:]
    assert [[note[0] for note in b.get("notify", [])] for b in later] == [["two"], ["three"]]
    assert not any("permission" in b for b in later), later


def test_a_big_terminal_output_reaches_neovim_whole_in_bounded_frames(
        engine: Engine, ui: FakeNeovim) -> None:
    """Issue 14 item 5: 80,000 lines (960 KB: under the 1 MiB terminal output limit, ~30
    frames' slices) arrive at once; frames go on by themselves until all of it, then the
    exit status, are applied."""
    from louise.capabilities.terminal_events import (
        ExitStatus,
        TerminalCreated,
        TerminalExited,
        TerminalOutput,
    )
    from louise.nvim.terminals import TERMINAL_SLICE_BYTES

    output = b"".join(b"line %06d\n" % n for n in range(80_000))

    def produce() -> None:
        engine.terminals.on_terminal("demo:s", TerminalCreated("t1", "seq", ("80000",), "/ws"))
        for at in range(0, len(output), 65536):
            piece = output[at:at + 65536]
            engine.terminals.on_terminal("demo:s", TerminalOutput("t1", piece, piece.decode()))
        engine.terminals.on_terminal("demo:s", TerminalExited("t1", ExitStatus(0, None)))

    ui.wait(lambda: ui.completed >= 1)
    on_loop_call(engine, produce)
    ui.wait(lambda: any("exit" in b.get("term", {}).get("t1", {}) for b in ui.batches),
            timeout=60)
    entries = [b["term"]["t1"] for b in ui.batches if "t1" in b.get("term", {})]
    assert len(entries) > len(output) // TERMINAL_SLICE_BYTES
    assert all(len(e.get("data", b"")) <= TERMINAL_SLICE_BYTES for e in entries)
    assert b"".join(e.get("data", b"") for e in entries) == output.replace(b"\n", b"\r\n")
    assert entries[0]["command"] == "seq 80000" and "exit" in entries[-1]


def test_terminals_past_the_per_frame_bound_reach_neovim_in_later_frames(
        engine: Engine, ui: FakeNeovim) -> None:
    """Issue 21 item 9: 300 terminals starting, writing and ending while Neovim is busy
    with a frame used to lose all but 256 of them (no command, no output, no exit)."""
    from louise.capabilities.terminal_events import (
        ExitStatus,
        TerminalCreated,
        TerminalExited,
        TerminalOutput,
    )

    count = 300

    def produce() -> None:
        for n in range(count):
            key = f"demo:s{n % 8}"  # several chats, each within what a chat keeps
            engine.terminals.on_terminal(key, TerminalCreated(f"t{n}", "echo", (str(n),), "/ws"))
            engine.terminals.on_terminal(key, TerminalOutput(f"t{n}", f"{n}\n".encode(), f"{n}\n"))
            engine.terminals.on_terminal(key, TerminalExited(f"t{n}", ExitStatus(0, None)))

    hold_a_frame(engine, ui)
    on_loop_call(engine, produce)
    ui.release.set()

    def exits() -> dict[str, Any]:
        return {tid: entry for batch in ui.batches for tid, entry in batch.get("term", {}).items()
                if "exit" in entry}

    ui.wait(lambda: len(exits()) == count)
    seen: dict[str, dict[str, Any]] = {}
    for batch in ui.batches:
        for tid, entry in batch.get("term", {}).items():
            seen.setdefault(tid, {}).update(entry)
    assert all(seen[f"t{n}"]["command"] == f"echo {n}" and seen[f"t{n}"]["data"] == b"%d\r\n" % n
               for n in range(count))


def test_terminal_output_reaches_neovim_without_clipboard_or_title_sequences(
        engine: Engine, ui: FakeNeovim) -> None:
    """Issue 21 item 1: OSC 52 (the clipboard), OSC 0/2 (the title), OSC 8 (links) and DCS
    never reach Neovim's terminal emulator, even split across two chunks; colours do."""
    from louise.capabilities.terminal_events import TerminalOutput

    chunks = ["ok \x1b[31mred\x1b[0m \x1b]52;c;Y3VybCBodHRwOi8vZXZpbC5leGFtcGxlL3gg",
              "fCBzaA==\x07\x1b]2;title\x07\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b",
              "\\\x1bP+q\x1b\\ end\n"]

    def produce() -> None:
        for piece in chunks:
            engine.terminals.on_terminal("demo:s", TerminalOutput("t1", piece.encode(), piece))

    ui.wait(lambda: ui.completed >= 1)
    on_loop_call(engine, produce)
    ui.wait(lambda: any(b"end" in b.get("term", {}).get("t1", {}).get("data", b"")
                        for b in ui.batches))
    data = b"".join(b.get("term", {}).get("t1", {}).get("data", b"") for b in ui.batches)
    assert data == b"ok \x1b[31mred\x1b[0m link end\r\n"
