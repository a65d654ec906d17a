"""Quota for agents without the v1 extension (issue 13): the registry reads each agent's own
rate-limit signals (claude `_claude/rateLimit`, codex `_codex/rateLimits` and its push, a
refused turn) from real agent processes speaking NDJSON over stdio (tests/fakes), and
shows, caches and ages them like v1 figures. Expected labels come from `louise.limits`
applied to what the fake sends, never copied from output."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from louise import limits as lim
from louise.config.loading import load_config_mapping
from louise.limits import pace
from louise.limits.alerts import window_key
from louise.registry import SessionRegistry
from louise.registry.events import LimitsChanged, RegistryEvent
from louise.registry.limits_observer import MAX_IGNORED_LOGS
from louise.registry.records import RegistryError
from louise.storage.limits_cache import LimitsCache
from tests.integration.agents import FAKES, wait_until

pytestmark = pytest.mark.anyio

CLAUDE_SOURCE = "claude rate-limit metadata"


def fake(name: str, **env: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-P", str(FAKES / f"{name}.py")], "env": env}


@asynccontextmanager
async def registry(events: list[RegistryEvent] | None = None,
                   clock: Callable[[], float] | None = None,
                   **agents: dict[str, Any]) -> AsyncIterator[SessionRegistry]:
    config = load_config_mapping({"agents": agents})
    extra: dict[str, Any] = {} if clock is None else {"clock": clock}
    async with SessionRegistry(config, grace_seconds=0.5, **extra) as reg:
        if events is not None:
            reg.subscribe(events.append)
        yield reg


def windows(state: lim.LimitsState, bucket_id: str) -> list[tuple[int, float]]:
    assert state.snapshot is not None
    bucket = next(b for b in state.snapshot.buckets if b.id == bucket_id)
    return [(w.duration_mins, w.used_percent) for w in bucket.windows]


def five_hour_of(reg: SessionRegistry, agent: str) -> float | None:
    """The default bucket's 5h window's used percent, None before a reading (one sent
    before a prompt's reply may still be handled after it)."""
    snapshot = reg.inspect_limits(agent).snapshot
    bucket = snapshot.default_bucket if snapshot is not None else None
    used = [w.used_percent for w in bucket.windows if w.duration_mins == 300] if bucket else []
    return used[0] if used else None


def five_hour_used(reg: SessionRegistry) -> float | None:
    return five_hour_of(reg, "claude")


def label_of(reg: SessionRegistry, agent: str) -> lim.Label:
    label = lim.render_label(reg.inspect_limits(agent), reg.clock())
    assert label is not None
    return label


def expected_label(state: lim.LimitsState, now: float) -> str:
    """What the label must read for `state` seen fresh at `now`."""
    label = lim.render_label(lim.LimitsState(state.agent, "fresh", state.snapshot,
                                             state.updated_at, None, state.source), now)
    assert label is not None
    return label.text


async def inspect_json(agent: str) -> dict[str, Any]:
    """`louise inspect AGENT --json` in its own process (reads only the cache)."""
    result = await anyio.run_process(
        [sys.executable, "-P", "-m", "louise.cli", "inspect", agent, "--json"], check=False)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    return dict(document["agents"][0])


# ----------------------------------------------------------------------------- claude


async def test_claude_windows_reach_the_label_the_cache_and_louise_inspect(
    tmp_path: Path,
) -> None:
    events: list[RegistryEvent] = []
    cache = LimitsCache()
    async with registry(events, claude=fake("claude_limits_agent")) as reg:
        session = await reg.new_session("claude", str(tmp_path))
        # No rate-limit data yet, and no extension: nothing to show but "n/a".
        assert reg.inspect_limits("claude").status == "unsupported"
        assert await reg.prompt(session.session_id, "hello") == "end_turn"
        await wait_until(lambda: reg.inspect_limits("claude").status == "fresh")
        state = reg.inspect_limits("claude")
        assert state.source == CLAUDE_SOURCE
        # The fake's first reading: 5h at 0.24, 7d at 0.13 (utilization × 100 used).
        assert windows(state, "claude") == [(300, 24.0), (10080, 13.0)]
        assert state.snapshot is not None and state.snapshot.default_bucket is not None
        assert state.snapshot.default_bucket.plan_type == "Claude Max"  # _auth/status_update
        label = label_of(reg, "claude")
        assert label.text == expected_label(state, reg.clock())
        assert label.text.startswith("limits 76%/5h ↻") and " 87%/7d ↻" in label.text
        assert label.level == "ok"
        detail = lim.render_detail(state, reg.clock())
        assert f"Source: {CLAUDE_SOURCE}" in detail
        assert "Plan: Claude Max" in detail

        # Cached with its provenance, and this process holds it live: another process's
        # `louise inspect` shows it fresh while the session lives.
        await wait_until(lambda: (cached := cache.load().states.get("claude")) is not None
                         and cached.status == "fresh" and cache.load().is_live("claude"))
        live = await inspect_json("claude")
        assert live["status"] == "fresh" and live["source"] == CLAUDE_SOURCE
        assert live["label"].startswith("limits 76%/5h ↻") and " 87%/7d ↻" in live["label"]
        assert [(w["windowDurationMins"], w["usedPercent"])
                for w in live["snapshot"]["buckets"][0]["windows"]] == [(300, 24), (10080, 13)]

        # The last session closes: stale, kept, with the reason.
        await reg.close_session(session.session_id)
        closed = reg.inspect_limits("claude")
        assert closed.status == "stale" and closed.snapshot == state.snapshot
        assert closed.error == lim.ERROR_NO_LIVE_SESSION
        assert label_of(reg, "claude").text.endswith(" stale")
        await wait_until(lambda: not cache.load().is_live("claude"))
    after = await inspect_json("claude")
    assert after["status"] == "stale" and after["source"] == CLAUDE_SOURCE
    assert "76%/5h" in after["label"] and "87%/7d" in after["label"]
    statuses = [e.state.status for e in events
                if isinstance(e, LimitsChanged) and e.agent == "claude"]
    # `n/a` until its own figures arrive; nothing is read.
    assert statuses[:2] == ["unsupported", "fresh"] and "loading" not in statuses


async def test_cached_figures_stay_stale_when_a_session_opens_until_new_ones_arrive(
    tmp_path: Path,
) -> None:
    """Figures cached by another process (one that died without saying so) are not
    confirmed by a new session of this one: only a new reading is."""
    import time

    now = time.time()
    old = lim.translated("claude", lim.parse_snapshot({"defaultBucketId": "claude", "buckets": [
        {"id": "claude", "windows": [{"usedPercent": 90, "windowDurationMins": 300,
                                      "resetsAt": int(now) + 3600}]}]}), CLAUDE_SOURCE, now - 60)
    LimitsCache().record_state("claude", old)
    async with registry(claude=fake("claude_limits_agent")) as reg:
        assert reg.inspect_limits("claude").status == "stale"
        session = await reg.new_session("claude", str(tmp_path))
        assert reg.inspect_limits("claude").status == "stale"
        await reg.prompt(session.session_id, "hello")
        await wait_until(lambda: reg.inspect_limits("claude").status == "fresh")
        assert windows(reg.inspect_limits("claude"), "claude")[0] == (300, 24.0)


async def test_an_agent_without_the_extension_is_announced_n_a_once_its_session_is_ready(
    tmp_path: Path,
) -> None:
    """`unsupported` is derived by inspection, never stored: the registry still announces
    it (and its end) when a session makes it so, so a label can say `limits n/a` at once
    instead of at its next periodic re-render."""
    events: list[RegistryEvent] = []

    def announced() -> list[lim.LimitsState]:
        return [e.state for e in events if isinstance(e, LimitsChanged) and e.agent == "claude"]

    async with registry(events, claude=fake("claude_limits_agent")) as reg:
        assert announced() == []
        first = await reg.new_session("claude", str(tmp_path))
        await wait_until(lambda: bool(announced()))
        assert announced() == [lim.LimitsState("claude", "unsupported")]
        assert announced()[-1] == reg.inspect_limits("claude")
        label = lim.render_label(announced()[-1], reg.clock())
        assert label == lim.Label("limits n/a", "neutral")
        # Announced once per change: another session (and a turn) changes nothing.
        second = await reg.new_session("claude", str(tmp_path))
        await reg.close_session(first.session_id)
        assert announced() == [lim.LimitsState("claude", "unsupported")]
        # No initialized session left: `not_observed` again, announced too (no label).
        await reg.close_session(second.session_id)
        assert reg.inspect_limits("claude").status == "not_observed"
        assert announced()[-1] == lim.LimitsState("claude", "not_observed")
        assert lim.render_label(announced()[-1], reg.clock()) is None
    assert LimitsCache().load().states.get("claude") is None  # never stored


async def test_claude_limits_are_account_wide_across_sessions(tmp_path: Path) -> None:
    async with registry(claude=fake("claude_limits_agent")) as reg:
        first = await reg.new_session("claude", str(tmp_path))
        second = await reg.new_session("claude", str(tmp_path))
        await reg.prompt(first.session_id, "one")
        await wait_until(lambda: reg.inspect_limits("claude").status == "fresh")
        assert windows(reg.inspect_limits("claude"), "claude")[0] == (300, 24.0)
        # A reading on another session replaces the Agent's one state.
        await reg.prompt(second.session_id, "two")
        await wait_until(lambda: windows(reg.inspect_limits("claude"), "claude")[0][1] > 24)
        assert windows(reg.inspect_limits("claude"), "claude")[0] == (300, pytest.approx(29.0))
        # One session left: the figures stay fresh; none left: stale.
        await reg.close_session(first.session_id)
        assert reg.inspect_limits("claude").status == "fresh"
        await reg.close_session(second.session_id)
        assert reg.inspect_limits("claude").status == "stale"


async def test_a_refused_turn_marks_the_limit_reached_without_a_reset(tmp_path: Path) -> None:
    async with registry(claude=fake("claude_limits_agent")) as reg:
        session = await reg.new_session("claude", str(tmp_path))
        with pytest.raises(RegistryError):
            await reg.prompt(session.session_id, "REJECT")
        state = reg.inspect_limits("claude")
        assert state.status == "fresh" and state.source == CLAUDE_SOURCE
        assert state.snapshot is not None
        [bucket] = state.snapshot.buckets
        assert bucket.reached_type == "rate_limit" and bucket.windows == ()  # no reset invented
        label = label_of(reg, "claude")
        assert (label.text, label.level) == ("limits reached", "error")

        # After figures arrived, a refusal keeps the windows and their resets.
        await reg.prompt(session.session_id, "hello")
        await wait_until(lambda: windows(reg.inspect_limits("claude"), "claude") != [])
        before = reg.inspect_limits("claude").snapshot
        with pytest.raises(RegistryError):
            await reg.prompt(session.session_id, "REJECT")
        reached = reg.inspect_limits("claude").snapshot
        assert reached is not None and before is not None
        assert reached.default_bucket is not None and before.default_bucket is not None
        assert reached.default_bucket.reached_type == "rate_limit"
        assert reached.default_bucket.windows == before.default_bucket.windows
        assert label_of(reg, "claude").level == "error"


async def test_garbage_rate_limit_data_is_ignored_with_one_bounded_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="louise.registry")
    async with registry(claude=fake("claude_limits_agent")) as reg:
        session = await reg.new_session("claude", str(tmp_path))
        await reg.prompt(session.session_id, "GARBAGE")
        # The good reading after the garbage is taken; the garbage is one log line.
        await wait_until(lambda: reg.inspect_limits("claude").status == "fresh")
        ignored = [r for r in caplog.records if "ignored claude rate-limit metadata" in r.message]
        assert len(ignored) == 1, [r.message for r in caplog.records]
        assert "claude: ignored claude rate-limit metadata: " in ignored[0].message
        # Garbage over and over: the log stays bounded, and the session keeps working.
        for _ in range(MAX_IGNORED_LOGS + 5):
            assert await reg.prompt(session.session_id, "GARBAGE") == "end_turn"
        await wait_until(lambda: any("will not be logged" in r.message for r in caplog.records))
        # The last reading handled (the 7d window rises by 1 point per prompt).
        await wait_until(lambda: windows(reg.inspect_limits("claude"), "claude")[1] == (
            10080, pytest.approx(13 + MAX_IGNORED_LOGS + 5)))
        ignored = [r for r in caplog.records if "ignored claude rate-limit metadata" in r.message]
        assert len(ignored) == MAX_IGNORED_LOGS
        assert any("will not be logged" in r.message for r in caplog.records)
        assert reg.inspect_limits("claude").status == "fresh"


async def test_the_v1_extension_wins_over_rate_limit_metadata(tmp_path: Path) -> None:
    async with registry(claude=fake("claude_limits_agent", FAKE_V1="1")) as reg:
        session = await reg.new_session("claude", str(tmp_path))
        await wait_until(lambda: reg.inspect_limits("claude").status == "fresh")
        await reg.prompt(session.session_id, "hello")  # sends `_claude/rateLimit` too
        with pytest.raises(RegistryError):
            await reg.prompt(session.session_id, "REJECT")
        await reg.refresh_limits("claude")
        state = reg.inspect_limits("claude")
        assert state.status == "fresh" and state.source is None
        assert state.snapshot is not None
        assert [b.id for b in state.snapshot.buckets] == ["requests"]
        assert state.snapshot.buckets[0].reached_type is None


# ----------------------------------------------------------------------------- codex, gemini


async def test_codex_rate_limits_on_usage_updates_and_pushes(tmp_path: Path) -> None:
    async with registry(codex=fake("codex_limits_agent")) as reg:
        session = await reg.new_session("codex", str(tmp_path))
        assert reg.inspect_limits("codex").status == "unsupported"
        await reg.prompt(session.session_id, "hello")  # `_codex/rateLimits` after the reply
        await wait_until(lambda: reg.inspect_limits("codex").status == "fresh")
        state = reg.inspect_limits("codex")
        assert state.source == "codex rate-limit metadata"
        assert windows(state, "codex") == [(300, 40.0), (10080, 20.0)]
        assert state.snapshot is not None and state.snapshot.default_bucket is not None
        codex = state.snapshot.default_bucket
        assert codex.plan_type == "plus" and codex.credits is not None
        assert codex.credits.balance == 12.5
        label = label_of(reg, "codex")
        assert label.text == expected_label(state, reg.clock())
        assert label.text.startswith("limits 60%/5h ↻") and " 80%/7d ↻" in label.text

        # The push adds its limit; the codex limit stays (and then moves on).
        await reg.prompt(session.session_id, "PUSH")
        await wait_until(lambda: windows(reg.inspect_limits("codex"), "codex")[0][1] == 45.0)
        pushed = reg.inspect_limits("codex")
        assert pushed.snapshot is not None
        assert [b.id for b in pushed.snapshot.buckets] == ["codex", "codex_other"]
        assert windows(pushed, "codex_other") == [(300, 70.0)]


async def test_gemini_429_marks_the_limit_reached(tmp_path: Path) -> None:
    async with registry(gemini=fake("gemini_limits_agent")) as reg:
        session = await reg.new_session("gemini", str(tmp_path))
        assert await reg.prompt(session.session_id, "hello") == "end_turn"
        assert reg.inspect_limits("gemini").status == "unsupported"
        with pytest.raises(RegistryError) as refused:
            await reg.prompt(session.session_id, "QUOTA")
        assert "Rate limit exceeded" in str(refused.value)
        state = reg.inspect_limits("gemini")
        assert state.status == "fresh" and state.source == "gemini rate-limit error"
        assert state.snapshot is not None
        [bucket] = state.snapshot.buckets
        assert (bucket.id, bucket.reached_type, bucket.windows) == ("gemini", "rate_limit", ())
        assert label_of(reg, "gemini").text == "limits reached"
        await reg.close_session(session.session_id)
        assert reg.inspect_limits("gemini").status == "stale"


# ----------------------------------------------------------------------------- pace


async def test_pace_from_successive_readings(tmp_path: Path) -> None:
    """Readings two minutes of work apart (the registry's clock moves on while each turn
    runs): the detail says how much work is left in the 5h window, and `pace_alerts` warns
    once. The pace is measured over the time turns ran (issue 26 item 5)."""
    from louise.session import TURN_STATUSES, StatusChanged

    offset = [0.0]

    def clock() -> float:
        import time

        return time.time() + offset[0]

    def two_minutes_of_work(event: object) -> None:
        # Seen before the limits observer's own status hook: the turn "took" 2 minutes.
        if isinstance(event, StatusChanged) and event.old in TURN_STATUSES \
                and event.new not in TURN_STATUSES:
            offset[0] += 120.0

    async with registry(clock=clock, claude=fake("claude_limits_agent")) as reg:
        reg.subscribe(two_minutes_of_work)
        session = await reg.new_session("claude", str(tmp_path))
        assert reg.limits_pace("claude") is None
        for prompt in range(3):
            await reg.prompt(session.session_id, f"prompt {prompt}")
            await wait_until(lambda prompt=prompt: five_hour_used(reg) == pytest.approx(
                24 + 5 * prompt))
            offset[0] += 900.0  # a quarter of an hour idle between turns: not counted
        state = reg.inspect_limits("claude")
        history = reg.limits_pace("claude")
        assert state.snapshot is not None and state.snapshot.default_bucket is not None
        five_hour = state.snapshot.default_bucket.windows[0]
        projection = pace.project(history, window_key("claude", five_hour))
        now = reg.clock()
        assert projection is not None and projection.runs_out_before_reset(now)
        assert projection.rate_per_hour == pytest.approx(150.0, rel=0.05)
        detail = lim.render_detail(state, now, pace=history)
        assert any(line.startswith("Pace: out after ") for line in detail), detail
        alerts, memory = lim.pace_alerts(state, history, None, now)
        # Both windows rise (5h by 5 points, 7d by 1 point per reading): both run out first.
        assert sorted((a.bucket_id, a.duration_mins) for a in alerts) == [
            ("claude", 300), ("claude", 10080)]
        assert lim.pace_alerts(state, history, memory, now)[0] == []


# ----------------------------------------------------------------------------- v1 reads


async def test_a_read_that_never_answers_after_a_good_snapshot_leaves_it_stale(
    tmp_path: Path,
) -> None:
    """Issue 11.14: a hung read times out once (no retry on the same source), and the state
    after it is stale with the reason, never fresh again; the state returned is the one
    held (the detail float and the label agree)."""
    reads = tmp_path / "reads.log"
    config = load_config_mapping({
        "request_timeout": 0.5,
        "agents": {"hung": fake("v1_limits_agent", FAKE_HANG_FROM="2",
                                FAKE_READ_LOG=str(reads))}})
    events: list[RegistryEvent] = []
    async with SessionRegistry(config, grace_seconds=0.5) as reg:
        reg.subscribe(events.append)
        await reg.new_session("hung", str(tmp_path))
        await wait_until(lambda: reg.inspect_limits("hung").status == "fresh")
        good = reg.inspect_limits("hung").snapshot
        state = await reg.refresh_limits("hung")  # read 2: never answered
        assert state.status == "stale" and state.snapshot == good
        assert state.error is not None and "timed out" in state.error
        assert reg.inspect_limits("hung") == state
        label = lim.render_label(state, reg.clock())
        assert label is not None and label.text.endswith(" stale")
        # Whatever the read left to run (a follow-up, a retry started at once) has run
        # once every task waits.
        await anyio.wait_all_tasks_blocked()
        assert reg.inspect_limits("hung") == state
        assert [e.state.status for e in events if isinstance(e, LimitsChanged)][-1] == "stale"
    assert reads.read_text().splitlines() == ["read 1", "read 2"]


async def test_a_read_that_never_answers_without_a_snapshot_is_unavailable(
    tmp_path: Path,
) -> None:
    config = load_config_mapping({
        "request_timeout": 0.5, "agents": {"hung": fake("v1_limits_agent", FAKE_HANG_FROM="1")}})
    async with SessionRegistry(config, grace_seconds=0.5) as reg:
        await reg.new_session("hung", str(tmp_path))
        state = await reg.refresh_limits("hung")
        assert state.status == "unavailable" and state.snapshot is None
        assert state.error is not None and "timed out" in state.error
        await wait_until(lambda: reg.inspect_limits("hung").status == "unavailable")
        assert lim.render_label(reg.inspect_limits("hung"), reg.clock()) == lim.Label(
            "limits unavailable", "error")


async def test_an_invalid_snapshot_note_names_its_origin(tmp_path: Path) -> None:
    """Issue 17.4: `malformed account limits snapshot: <message>`."""
    demo = {"command": sys.executable, "args": ["-P", "-m", "louise.demo_agent"]}
    async with registry(other=demo) as reg:
        session = await reg.new_session("other", str(tmp_path))
        await wait_until(lambda: reg.inspect_limits("other").status == "fresh")
        await reg.prompt(session.session_id, "/scenario limits state=invalid")
        await wait_until(lambda: reg.inspect_limits("other").status == "stale")
        assert reg.inspect_limits("other").error == (
            "malformed account limits snapshot: account limit window is malformed")


async def test_limits_are_read_again_after_a_mode_or_model_change(tmp_path: Path) -> None:
    """Issue 17.3: `session/set_mode` and `session/set_config_option` re-read the limits."""
    reads = tmp_path / "reads.log"

    def count() -> int:
        return len(reads.read_text().splitlines()) if reads.exists() else 0

    async with registry(v1=fake("v1_limits_agent", FAKE_READ_LOG=str(reads))) as reg:
        session = await reg.new_session("v1", str(tmp_path))
        await wait_until(lambda: count() == 1 and reg.inspect_limits("v1").status == "fresh")
        await reg.set_mode(session.session_id, "code")
        # Read 2 answered (10 + 2 % used) before the next change, so that one is not
        # folded into a read already in flight.
        await wait_until(lambda: count() == 2 and five_hour_of(reg, "v1") == 12.0)
        await reg.set_config_option(session.session_id, "model", "large")
        await wait_until(lambda: count() == 3 and five_hour_of(reg, "v1") == 13.0)
        assert reg.inspect_limits("v1").status == "fresh"
