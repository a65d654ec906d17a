"""The typed frame outbox: how each kind of UI work merges within one frame (pure)."""

from __future__ import annotations

from louise.nvim import outbox as ob
from louise.nvim.outbox import FsConflict, Outbox, VimNotice


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
    box.permission_count.put(2)
    box.take()
    box.permission.resend()
    box.permission_count.resend()
    assert box.take() == {"permission": {"id": 3}, "permission_count": 2}
    box.permission.settle(3)
    box.take()
    box.permission.resend()
    assert box.take() == {"permission": False}, "nothing on screen is a state too"


def test_notifications_are_queued_bounded_and_say_how_many_were_dropped() -> None:
    box = Outbox()
    for n in range(ob.MAX_NOTIFY_PER_FRAME + 5):
        box.notify.put(VimNotice(f"note {n}", "warn"))
    notes = box.take()["notify"]
    assert notes[:2] == [["note 0", "warn"], ["note 1", "warn"]]
    assert len(notes) == ob.MAX_NOTIFY_PER_FRAME + 1
    assert "5 more message(s) were dropped" in notes[-1][0]
    box.notify.put(VimNotice("later"))
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


def test_every_kind_of_work_wakes_an_outbox_found_empty() -> None:
    """`pending` skips the slots while nothing rang since they were all found empty: each
    slot's every way to get work must ring (else that work would wait for another's)."""
    ways = [
        lambda box: box.notify.put(VimNotice("hi")),
        lambda box: box.open.put(ob.OpenChat("k", "demo")),
        lambda box: box.closed.put("k"),
        lambda box: box.fs_conflicts.put(FsConflict(1, "/ws/a", "demo")),
        lambda box: box.ask.put({"id": 1}),
        lambda box: box.limits.put("demo", ["5h"]),
        lambda box: box.prompt_queue.entry("k", dict),
        lambda box: box.signin.put("demo", True),
        lambda box: box.terminals.created("k", "t1", "ls"),
        lambda box: box.terminals.output("k", "t1", "out\n"),
        lambda box: box.terminals.exited("k", "t1", {"exitCode": 0}),
        lambda box: box.reloads.put("/ws/a", "demo"),
        lambda box: box.reloads.put_everything(),
        lambda box: box.permission_count.put(2),
        lambda box: box.permission.show(3, {"id": 3}),
        lambda box: box.picker.put({"items": []}),
        lambda box: box.pong.put(1),
    ]
    for way in ways:
        box = Outbox()
        assert not box.pending
        assert not box.pending, "asked again: still nothing"
        way(box)
        assert box.pending
        box.take()
        assert box.pending == box.terminals.pending  # (terminal output goes in slices)


def test_a_permission_settled_or_resent_after_the_outbox_was_found_empty_is_sent() -> None:
    box = Outbox()
    box.permission.show(3, {"id": 3})
    box.take()
    assert not box.pending
    box.permission.settle(3)
    assert box.pending and box.take() == {"permission": False}
    assert not box.pending
    box.permission.resend()
    assert box.pending
    box.take()
    box.picker.put({"items": []})
    box.take()
    assert not box.pending
    box.picker.resend()
    assert box.pending
