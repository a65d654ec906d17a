"""Pace in the editor (issue 13.3), with the in-memory stand-in for Neovim of
tests/unit/test_nvim_engine.py and the real demo agent: a window that runs out before its
reset at the current rate raises one notification through the threshold alerts' path
(once per window cycle), and the `:LouiseLimits` detail shows the projection. The pace
samples are the registry's (`SessionRegistry.limits_pace`); here they are built with
`louise.limits.pace.record` because real readings would have to be a minute apart."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from louise import limits as lim
from louise.limits import pace
from louise.nvim.engine import Engine
from louise.registry.events import LimitsChanged
from tests.unit.test_nvim_engine import FakeNeovim, on_loop

RESETS = int(time.time()) + 2 * 3600


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


def state_at(used: float, at: float) -> lim.LimitsState:
    snapshot = lim.parse_snapshot({"defaultBucketId": "claude", "buckets": [{
        "id": "claude", "label": "Claude", "windows": [
            {"usedPercent": used, "windowDurationMins": 300, "resetsAt": RESETS}]}]})
    return lim.translated("claude", snapshot, "claude rate-limit metadata", at)


def pace_notes(ui: FakeNeovim) -> list[list[str]]:
    return [note for batch in ui.batches for note in batch.get("notify", [])
            if "at this pace" in note[0]]


def test_a_pace_alert_is_one_notification_per_window_cycle(
    engine: Engine, ui: FakeNeovim, monkeypatch: pytest.MonkeyPatch,
) -> None:
    ui.wait(lambda: ui.completed >= 1)  # the engine runs and pushed its first labels
    now = time.time()
    first, second = state_at(20, now - 600), state_at(40, now - 60)  # 133 %/h, 60 % left
    history = pace.record(pace.record(None, first, now - 600), second, now - 60)
    registry = engine.registry
    assert registry is not None
    monkeypatch.setattr(registry, "limits_pace", lambda agent: history)

    def changed(state: lim.LimitsState) -> Any:
        async def emit() -> None:
            engine._on_event(LimitsChanged("claude", state))
        return on_loop(engine, emit).result(10)

    changed(second)
    note = ui.wait(lambda: pace_notes(ui))[0]
    assert note[0].startswith("louise: claude Claude 5h window: out after ~")
    assert note[1] == "warn"
    # The same window cycle again (another reading): no second notification.
    changed(state_at(40, now - 30))

    async def marker() -> None:  # on the engine's loop, as every notification is made:
        engine.notify("marker")  # from this thread its wake-up could go unnoticed

    on_loop(engine, marker).result(10)
    ui.wait(lambda: any(n[0] == "marker" for b in ui.batches for n in b.get("notify", [])))
    assert len(pace_notes(ui)) == 1


def test_the_limits_detail_shows_the_pace(
    engine: Engine, ui: FakeNeovim, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    ui.wait(lambda: ui.completed >= 1)
    registry = engine.registry
    assert registry is not None

    async def open_demo() -> None:
        await registry.new_session("demo", str(tmp_path))

    on_loop(engine, open_demo).result(30)
    ui.wait(lambda: registry.inspect_limits("demo").status == "fresh", timeout=30)
    state = registry.inspect_limits("demo")
    assert state.snapshot is not None and state.updated_at is not None
    # An earlier reading of the same windows, 10 minutes before, 4 points lower each.
    earlier = lim.accepted("demo", lim.parse_snapshot({
        **lim.snapshot_to_wire(state.snapshot),
        "buckets": [{**bucket, "windows": [{**w, "usedPercent": max(0, w["usedPercent"] - 4)}
                                           for w in bucket["windows"]]}
                    for bucket in lim.snapshot_to_wire(state.snapshot)["buckets"]]}),
        state.updated_at - 600)
    history = pace.record(pace.record(None, earlier, earlier.updated_at or 0), state,
                          state.updated_at)
    monkeypatch.setattr(registry, "limits_pace", lambda agent: history)

    async def detail() -> None:
        await engine.commands.cmd_limits("demo", refresh=False)

    on_loop(engine, detail).result(10)
    shown = ui.wait(lambda: [b["limits_detail"] for b in ui.batches if "limits_detail" in b])
    lines = shown[-1]["lines"]
    assert any(line.startswith("Pace: ") and "%/h" in line for line in lines), lines


def test_an_rfd_meter_the_agent_grades_warning_alerts_once(
    engine: Engine, ui: FakeNeovim,
) -> None:
    """Issue 26: the agent's own `warning` on a meter alerts, though 58 % are left (the
    percentage thresholds alone would not)."""
    from louise.limits.quota import format_instant, parse_quota_snapshot

    ui.wait(lambda: ui.completed >= 1)
    now = time.time()
    quota = parse_quota_snapshot({"updatedAt": format_instant(now), "pools": [
        {"id": "codex", "meters": [{"id": "primary", "label": "5-hour limit",
                                    "usedPercent": 42, "window": "PT5H",
                                    "resetsAt": format_instant(RESETS), "status": "warning"}]}]})
    state = lim.accepted_quota("demo", quota, now, "quota_update")

    async def emit() -> None:
        engine._on_event(LimitsChanged("demo", state))
        engine._on_event(LimitsChanged("demo", state))

    on_loop(engine, emit).result(10)
    notes = ui.wait(lambda: [note for batch in ui.batches for note in batch.get("notify", [])
                             if "5-hour limit" in note[0]])
    assert notes == [["louise: demo codex 5-hour limit: 58% left; resets in 2h", "warn"]]
