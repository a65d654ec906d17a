"""The typed frame outbox: how each kind of UI work merges within one frame (pure)."""

from __future__ import annotations

from typing import Any

from louise.nvim import outbox as ob
from louise.nvim.outbox import FsConflict, Notification, Outbox, TerminalFeed


def test_two_fs_conflicts_in_one_frame_are_both_delivered_in_order() -> None:
    box = Outbox()
    assert box.fs_conflicts.put(FsConflict(1, "/ws/a.txt", "demo"))
    assert box.fs_conflicts.put(FsConflict(2, "/ws/b.txt", "demo", "changed"))
    batch = box.take()
    assert batch == {"fs_conflict": [
        {"id": 1, "path": "/ws/a.txt", "agent": "demo", "reason": "modified"},
        {"id": 2, "path": "/ws/b.txt", "agent": "demo", "reason": "changed"}]}
    assert box.take() == {}, "taken once"


def test_a_full_queue_says_so_instead_of_dropping_silently() -> None:
    box = Outbox()
    for n in range(ob.MAX_PENDING_CONFLICTS):
        assert box.fs_conflicts.put(FsConflict(n, f"/ws/{n}", "demo"))
    assert not box.fs_conflicts.put(FsConflict(999, "/ws/late", "demo"))
    assert len(box.take()["fs_conflict"]) == ob.MAX_PENDING_CONFLICTS


def test_a_permission_shown_and_settled_in_one_frame_sends_nothing() -> None:
    box = Outbox()
    box.permission.show(7, {"id": 7})
    box.permission.settle(7)
    assert not box.pending
    assert box.take() == {}, "no show and close pair that could leave a dead float"


def test_a_shown_permission_is_taken_off_the_screen_by_its_settle() -> None:
    box = Outbox()
    box.permission.show(7, {"id": 7})
    assert box.take() == {"permission": {"id": 7}}
    box.permission.settle(7)
    assert box.take() == {"permission": False}
    box.permission.settle(7)
    assert box.take() == {}, "settling twice changes nothing"


def test_the_next_permission_replaces_the_settled_one_within_a_frame() -> None:
    box = Outbox()
    box.permission.show(1, {"id": 1})
    box.take()
    box.permission.settle(1)
    box.permission.show(2, {"id": 2})
    assert box.take() == {"permission": {"id": 2}}


def test_settling_an_older_permission_keeps_the_newer_one_on_screen() -> None:
    box = Outbox()
    box.permission.show(2, {"id": 2})
    box.permission.settle(1)
    assert box.take() == {"permission": {"id": 2}}
    box.permission.settle(1)
    assert box.take() == {}


def test_resend_delivers_the_current_state_again() -> None:
    box = Outbox()
    box.permission.show(3, {"id": 3})
    box.queue.put(2)
    box.take()
    box.permission.resend()
    box.queue.resend()
    assert box.take() == {"permission": {"id": 3}, "queue": 2}
    box.permission.settle(3)
    box.take()
    box.permission.resend()
    assert box.take() == {"permission": False}, "nothing on screen is a state too"


def test_notifications_are_queued_bounded_and_say_how_many_were_dropped() -> None:
    box = Outbox()
    for n in range(ob.MAX_NOTIFY_PER_FRAME + 5):
        box.notify.put(Notification(f"note {n}", "warn"))
    notes = box.take()["notify"]
    assert notes[:2] == [["note 0", "warn"], ["note 1", "warn"]]
    assert len(notes) == ob.MAX_NOTIFY_PER_FRAME + 1
    assert "5 more message(s) were dropped" in notes[-1][0]
    box.notify.put(Notification("later"))
    assert box.take() == {"notify": [["later", "info"]]}, "the count starts over"


def test_a_later_picker_replaces_an_earlier_one_in_the_same_frame() -> None:
    box = Outbox()
    box.picker.put({"kind": "session", "data": []})
    box.picker.put({"kind": "mode", "data": {"key": "k"}})
    assert box.take() == {"picker": {"kind": "mode", "data": {"key": "k"}}}
    box.picker.resend()
    assert box.take() == {"picker": {"kind": "mode", "data": {"key": "k"}}}


def test_labels_keep_the_newest_per_agent() -> None:
    box = Outbox()
    box.limits.put("demo", ["limits 80%", "ok"])
    box.limits.put("claude", ["limits 10%", "error"])
    box.limits.put("demo", ["limits 79%", "ok"])
    assert box.take() == {"limits": {"demo": ["limits 79%", "ok"],
                                     "claude": ["limits 10%", "error"]}}


def drain(box: Outbox, terminal: str = "t1") -> list[dict[str, Any]]:
    """Every frame's wire entry for `terminal` until the outbox is empty (bounded)."""
    frames = []
    for _ in range(10_000):
        if not box.pending:
            return frames
        frames.append(box.take().get("term", {}).get(terminal, {}))
    raise AssertionError("the outbox never emptied")


def test_terminal_output_goes_out_in_bounded_slices_and_nothing_is_dropped() -> None:
    box = Outbox()
    feed = box.terminals.entry("t1", lambda: TerminalFeed("demo:s1"))
    assert feed is not None
    feed.command = "seq 100000"
    output = b"".join(b"%d\n" % n for n in range(100_000))  # 589 KB
    for at in range(0, len(output), 4096):
        feed.append(output[at:at + 4096])
    assert box.terminals.entry("t1", lambda: TerminalFeed("other")) is feed
    feed.exit = {"exitCode": 0, "signal": None}
    frames = drain(box)
    assert len(frames) > 1
    assert frames[0]["key"] == "demo:s1" and frames[0]["command"] == "seq 100000"
    assert all(len(f.get("data", b"")) <= ob.TERMINAL_SLICE_BYTES for f in frames)
    assert all(f.get("data", b"").count(b"\n") <= ob.TERMINAL_SLICE_LINES for f in frames)
    assert all(f.get("data", b"\n").endswith(b"\n") for f in frames), "cut after newlines"
    assert b"".join(f.get("data", b"") for f in frames) == output
    assert [f for f in frames if "exit" in f] == [frames[-1]], "the exit status comes last"
    assert frames[-1]["exit"] == {"exitCode": 0, "signal": None}


def test_output_past_the_limit_is_counted_and_a_marker_says_so() -> None:
    box = Outbox()
    feed = box.terminals.entry("t1", lambda: TerminalFeed("demo:s1", limit=1000))
    assert feed is not None
    feed.append(b"a" * 600)
    feed.append(b"b" * 600)
    feed.append(b"c" * 50)  # after a cut: not shown either (the marker comes first)
    data = b"".join(f.get("data", b"") for f in drain(box))
    assert data.startswith(b"a" * 600 + b"b" * 400)
    assert data[1000:].startswith(b"\r\n[louise: 250 more bytes of output not shown here")
    assert data.endswith(b"]\r\n") and b"cc" not in data
    feed = box.terminals.entry("t1", lambda: TerminalFeed("demo:s1", limit=1000))
    assert feed is not None
    feed.append(b"later\n")
    assert drain(box)[0]["data"] == b"later\n", "kept again once the backlog is on screen"


def test_a_slice_never_splits_a_character() -> None:
    box = Outbox()
    box.terminals.slice_bytes = 1000
    feed = box.terminals.entry("t1", lambda: TerminalFeed("k"))
    assert feed is not None
    text = "é€😀" * 2000  # no newline: cut on character boundaries
    feed.append(text.encode())
    frames = drain(box)
    assert len(frames) > 1
    assert "".join(f["data"].decode("utf-8") for f in frames) == text


def test_terminals_share_one_slice_per_frame() -> None:
    box = Outbox()
    for name in ("t1", "t2"):
        feed = box.terminals.entry(name, lambda: TerminalFeed("k"))
        assert feed is not None
        feed.append(b"x\n" * ob.TERMINAL_SLICE_BYTES)
    while box.pending:
        batch = box.take().get("term", {})
        assert sum(len(entry.get("data", b"")) for entry in batch.values()) \
            <= ob.TERMINAL_SLICE_BYTES
        assert sum(entry.get("data", b"").count(b"\n") for entry in batch.values()) \
            <= ob.TERMINAL_SLICE_LINES


def test_too_many_terminals_in_one_frame_are_refused() -> None:
    box = Outbox()
    for n in range(ob.MAX_TERMINALS_PER_FRAME):
        assert box.terminals.entry(f"t{n}", lambda: TerminalFeed("k")) is not None
    assert box.terminals.entry("late", lambda: TerminalFeed("k")) is None


def test_files_to_reload_are_a_bounded_set_that_becomes_every_buffer() -> None:
    outbox = Outbox()
    outbox.reloads.put("/w/a.py", "claude")
    outbox.reloads.put("/w/a.py", "claude")
    outbox.reloads.put("/w/b.py", "codex")
    assert outbox.take()["reload"] == {"/w/a.py": "claude", "/w/b.py": "codex"}
    assert "reload" not in outbox.take()
    for n in range(ob.MAX_RELOADS_PER_FRAME + 1):
        outbox.reloads.put(f"/w/{n}", "claude")
    assert outbox.take()["reload"] is True, "past the bound none is left behind: all buffers"
    outbox.reloads.put("/w/c.py", "claude")
    assert outbox.take()["reload"] == {"/w/c.py": "claude"}
