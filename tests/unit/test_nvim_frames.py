"""The frame pacer: frames on the leading edge after idle, then a steady pace (a clock is
passed in: no time is measured here)."""

from __future__ import annotations

from louise.nvim.frames import FRAME_BURST, FramePacer


def test_after_idle_the_prompt_frame_and_the_first_chunk_frame_both_go_at_once() -> None:
    pacer = FramePacer(interval=0.012, burst=2)
    assert pacer.delay(100.0) == 0  # the frame announcing the prompt
    pacer.spend(100.0)
    assert pacer.delay(100.002) == 0  # its first chunk, 2 ms later: no wait
    pacer.spend(100.002)
    assert pacer.delay(100.003) > 0  # then the stream is paced


def test_a_prompt_sent_as_the_chat_is_ready_has_its_first_chunk_shown_at_once() -> None:
    """Issue 25 item 2: the chat's ready frame, then a prompt sent at once (typed while the
    agent started) and its first chunk, all within two frame intervals: no frame waits."""
    pacer = FramePacer(interval=0.012, burst=FRAME_BURST)
    for now in (100.0, 100.008, 100.0095):  # ready, the prompt, its first chunk
        assert pacer.delay(now) == 0
        pacer.spend(now)


def test_a_steady_stream_gets_one_frame_per_interval() -> None:
    pacer = FramePacer(interval=0.010, burst=FRAME_BURST)
    now = 0.0
    sent = []
    for _ in range(50):  # something is always waiting: send as soon as allowed
        now += pacer.delay(now)
        pacer.spend(now)
        sent.append(now)
    steady = [b - a for a, b in zip(sent[FRAME_BURST:], sent[FRAME_BURST + 1:], strict=False)]
    assert all(abs(gap - 0.010) < 1e-9 for gap in steady)


def test_the_burst_comes_back_only_after_an_idle_spell() -> None:
    pacer = FramePacer(interval=0.010, burst=2)
    for t in (0.0, 0.0, 0.010, 0.020):
        pacer.spend(t)
    assert pacer.delay(0.025) > 0  # half an interval later: wait
    assert pacer.delay(0.040) == 0
    pacer.spend(0.040)
    assert pacer.delay(0.040) == 0  # two intervals idle: two frames at once again


def test_the_read_slot_is_now_after_idle_and_the_next_frame_while_streaming() -> None:
    pacer = FramePacer(interval=0.010, burst=2)
    assert pacer.next_slot(5.0, pending=False) == 5.0  # idle: read at once (leading edge)
    assert pacer.next_slot(5.0, pending=True) == 5.0  # a frame due now leaves one token
    for t in (5.0, 5.0):
        pacer.spend(t)
    # Streaming, no frame due: read when the next frame may go.
    assert abs(pacer.next_slot(5.004, pending=False) - 5.010) < 1e-9
    # A frame is due at 5.010 already (marked): read for the one after it.
    assert abs(pacer.next_slot(5.004, pending=True) - 5.020) < 1e-9
