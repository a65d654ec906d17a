"""Agent terminals on their way to Neovim (louise/nvim/terminals.py, pure): output fed in
bounded slices, filtered, nothing dropped unsaid; a bounded number of terminals per frame
(the rest wait) and per chat (the oldest released, and all with the chat)."""

from __future__ import annotations

from typing import Any

from louise.nvim import terminals as tm
from louise.nvim.outbox import Outbox
from louise.nvim.terminals import TerminalFeeds


def drain(feeds: TerminalFeeds, terminal: str = "t1") -> list[dict[str, Any]]:
    """Every frame's wire entry for `terminal` until nothing waits (bounded)."""
    frames = []
    for _ in range(10_000):
        if not feeds.pending:
            return frames
        frames.append(feeds.take().get(terminal, {}))
    raise AssertionError("the feeds never emptied")


def frames_of(feeds: TerminalFeeds) -> list[dict[str, Any]]:
    frames = []
    for _ in range(10_000):
        if not feeds.pending:
            return frames
        frames.append(feeds.take())
    raise AssertionError("the feeds never emptied")


def test_terminal_output_goes_out_in_bounded_slices_and_nothing_is_dropped() -> None:
    feeds = TerminalFeeds("term")
    feeds.created("demo:s1", "t1", "seq 100000")
    output = "".join(f"{n}\n" for n in range(100_000))  # 589 KB
    for at in range(0, len(output), 4096):
        feeds.output("demo:s1", "t1", output[at:at + 4096])
    feeds.exited("demo:s1", "t1", {"exitCode": 0, "signal": None})
    frames = drain(feeds)
    assert len(frames) > 1
    assert frames[0]["key"] == "demo:s1" and frames[0]["command"] == "seq 100000"
    assert frames[0]["scrollback"] == tm.TERMINAL_SCROLLBACK_LINES
    assert all(len(f.get("data", b"")) <= tm.TERMINAL_SLICE_BYTES for f in frames)
    assert all(f.get("data", b"").count(b"\n") <= tm.TERMINAL_SLICE_LINES for f in frames)
    assert all(f.get("data", b"\n").endswith(b"\n") for f in frames), "cut after newlines"
    assert b"".join(f.get("data", b"") for f in frames) == \
        output.replace("\n", "\r\n").encode(), "the process wrote to a pipe: CR LF for Neovim"
    assert [f for f in frames if "exit" in f] == [frames[-1]], "the exit status comes last"
    assert frames[-1]["exit"] == {"exitCode": 0, "signal": None}


def test_output_past_the_limit_is_counted_and_a_marker_says_so() -> None:
    feeds = TerminalFeeds("term")
    feeds.limit_for = lambda key: 1000
    feeds.output("demo:s1", "t1", "a" * 600)
    feeds.output("demo:s1", "t1", "b" * 600)
    feeds.output("demo:s1", "t1", "c" * 50)  # after a cut: not shown either (marker first)
    data = b"".join(f.get("data", b"") for f in drain(feeds))
    assert data.startswith(b"a" * 600 + b"b" * 400)
    assert data[1000:].startswith(b"\r\n[louise: 250 more bytes of output not shown here")
    assert data.endswith(b"]\r\n") and b"cc" not in data
    feeds.output("demo:s1", "t1", "later")
    assert drain(feeds)[0]["data"] == b"later", "kept again once the backlog is on screen"


def test_all_terminals_together_wait_within_one_backlog() -> None:
    feeds = TerminalFeeds("term", max_backlog=1500)
    feeds.output("k", "t1", "a" * 1000)
    feeds.output("k", "t2", "b" * 1000)
    assert feeds.backlog == 1500
    frames = frames_of(feeds)
    second = b"".join(f.get("t2", {}).get("data", b"") for f in frames)
    assert second.startswith(b"b" * 500 + b"\r\n[louise: 500 more bytes")
    assert feeds.backlog == 0


def test_a_slice_never_splits_a_character() -> None:
    feeds = TerminalFeeds("term", slice_bytes=1000)
    text = "é€😀" * 2000  # no newline: cut on character boundaries
    feeds.output("k", "t1", text)
    frames = drain(feeds)
    assert len(frames) > 1
    assert "".join(f["data"].decode("utf-8") for f in frames) == text


def test_terminals_share_one_slice_per_frame() -> None:
    feeds = TerminalFeeds("term")
    for name in ("t1", "t2"):
        feeds.output("k", name, "x\n" * tm.TERMINAL_SLICE_BYTES)
    while feeds.pending:
        batch = feeds.take()
        assert sum(len(entry.get("data", b"")) for entry in batch.values()) \
            <= tm.TERMINAL_SLICE_BYTES
        assert sum(entry.get("data", b"").count(b"\n") for entry in batch.values()) \
            <= tm.TERMINAL_SLICE_LINES


def test_output_is_filtered_with_each_terminals_own_state() -> None:
    feeds = TerminalFeeds("term")
    feeds.output("k", "t1", "copy\x1b]52;c;Y3Vy")  # the sequence goes on in the next chunk
    feeds.output("k", "t2", "bGw=\x07 t2 is plain")
    feeds.output("k", "t1", "bA==\x07\x1b[32mdone\x1b[0m\n")
    frames = frames_of(feeds)
    t1 = b"".join(f.get("t1", {}).get("data", b"") for f in frames)
    t2 = b"".join(f.get("t2", {}).get("data", b"") for f in frames)
    assert t1 == b"copy\x1b[32mdone\x1b[0m\r\n"
    assert t2 == b"bGw= t2 is plain", "another terminal's state is its own"


def test_terminals_past_the_per_frame_bound_wait_for_the_next_frame() -> None:
    feeds = TerminalFeeds("term")
    count = tm.MAX_TERMINALS_PER_FRAME + 44
    for n in range(count):  # several chats: each within its own bound
        key = f"chat{n % 8}"
        feeds.created(key, f"t{n}", f"cmd {n}")
        feeds.output(key, f"t{n}", f"out {n}\n")
        feeds.exited(key, f"t{n}", {"exitCode": n, "signal": None})
    frames = frames_of(feeds)
    assert len(frames) == 2
    assert all(len(frame) <= tm.MAX_TERMINALS_PER_FRAME for frame in frames)
    seen = {tid: entry for frame in frames for tid, entry in frame.items()}
    assert len(seen) == count
    assert all(seen[f"t{n}"]["command"] == f"cmd {n}" and seen[f"t{n}"]["exit"]["exitCode"] == n
               for n in range(count))


def test_a_chat_keeps_its_newest_terminals_and_releases_the_oldest() -> None:
    feeds = TerminalFeeds("term", max_chat_terminals=3)
    released: list[tuple[str, str]] = []
    feeds.on_release = lambda key, tid: released.append((key, tid))
    for n in range(3):
        feeds.created("k", f"t{n}", f"cmd {n}")
    feeds.created("other", "o1", "cmd")
    assert set(feeds.take()) == {"t0", "t1", "t2", "o1"}
    feeds.created("k", "t3", "cmd 3")
    feeds.created("k", "t4", "cmd 4")
    assert released == [("k", "t0"), ("k", "t1")]
    frame = feeds.take()
    assert frame["t0"] == {"key": "k", "release": True}
    assert frame["t1"] == {"key": "k", "release": True}
    assert set(frame) == {"t0", "t1", "t3", "t4"}
    feeds.output("k", "t0", "late output of a released terminal")
    feeds.exited("k", "t0", {"exitCode": 0, "signal": None})
    assert not feeds.pending, "a released terminal does not come back"
    feeds.created("k", "t5", "cmd 5")
    feeds.created("k", "t6", "cmd 6")
    assert released[-2:] == [("k", "t2"), ("k", "t3")]
    frame = feeds.take()
    assert frame.get("t5", {}).get("command") == "cmd 5" and "t5" in feeds.feeds


def test_a_terminal_released_before_neovim_saw_it_sends_nothing() -> None:
    feeds = TerminalFeeds("term", max_chat_terminals=1)
    feeds.created("k", "t0", "cmd 0")
    feeds.output("k", "t0", "x" * 1000)
    feeds.created("k", "t1", "cmd 1")
    assert set(feeds.take()) == {"t1"}
    assert feeds.backlog == 0


def test_a_chat_keeps_a_bounded_number_of_lines_of_output() -> None:
    feeds = TerminalFeeds("term", max_chat_lines=250)
    released: list[str] = []
    feeds.on_release = lambda key, tid: released.append(tid)
    for n in range(3):
        feeds.output("k", f"t{n}", "line\n" * 100)
        frames_of(feeds)
    each = tm.screen_lines(b"line\r\n" * 100)  # 100 lines, and the bytes' share
    assert released == ["t0"] and feeds.chat_lines["k"] == 2 * each
    feeds.output("k", "t3", "x" * tm.TERMINAL_COLUMNS * 1000)  # one long line wraps
    assert released == ["t0", "t1", "t2"], "the terminal being fed stays, however long"
    assert feeds.chat_lines["k"] == 1000
    feeds.output("k", "t4", "line\n" * 20_000)
    assert feeds.feeds["t4"].lines == tm.TERMINAL_SCROLLBACK_LINES, \
        "Neovim keeps no more than its scrollback of one terminal"


def test_closing_a_chat_forgets_its_terminals() -> None:
    box = Outbox()
    box.terminals.created("k", "t1", "cmd")
    box.terminals.output("k", "t1", "pending")
    box.terminals.created("other", "o1", "cmd")
    box.chat_closed("k")
    batch = box.take()
    assert batch["closed"] == ["k"], "Lua releases the chat's terminals with it"
    assert set(batch["term"]) == {"o1"}
    assert "k" not in box.terminals.chats and "t1" not in box.terminals.feeds
    assert box.terminals.backlog == 0
    box.terminals.output("k", "t1", "late")
    assert not box.pending
