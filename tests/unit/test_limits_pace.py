"""Pace: projecting when a window runs out, its detail line and its alert."""

from __future__ import annotations

from louise import limits as lim
from louise.limits import pace

T0 = 1_800_000_000.0
RESET = int(T0) + 5 * 3600


def state(used: float, at: float, *, reset: int = RESET, status: str = "fresh") -> lim.LimitsState:
    snapshot = lim.parse_snapshot({"defaultBucketId": "claude", "buckets": [{
        "id": "claude", "label": "Claude",
        "windows": [{"usedPercent": used, "windowDurationMins": 300, "resetsAt": reset}]}]})
    fresh = lim.translated("claude", snapshot, "claude rate-limit metadata", at)
    return fresh if status == "fresh" else lim.failed(fresh, "x")


KEY = ("claude", 300, RESET)


def history_of(*points: tuple[float, float]) -> pace.PaceHistory:
    history: pace.PaceHistory | None = None
    for used, at in points:
        history = pace.record(history, state(used, at), at)
    assert history is not None
    return history


def test_projection_that_lasts_until_the_reset() -> None:
    # 10 → 20 % in one hour: 10 points/h; 80 left needs 8 h, the reset is 4 h away.
    history = history_of((10, T0), (20, T0 + 3600))
    projection = pace.project(history, KEY)
    assert projection is not None
    assert projection.rate_per_hour == 10
    assert projection.work_left == 8 * 3600
    assert not projection.runs_out_before_reset(T0 + 3600)
    line = pace.pace_line("claude", lim.Window(20, 300, RESET), history, T0 + 3600)
    assert line == "Pace: lasts until its reset at this pace (+10 %/h)"


def test_runs_out_before_reset_says_when() -> None:
    history = history_of((10, T0), (50, T0 + 3600))  # 40 points/h, 50 left: 1h15 more
    projection = pace.project(history, KEY)
    assert projection is not None and projection.work_left == 75 * 60
    line = pace.pace_line("claude", lim.Window(50, 300, RESET), history, T0 + 3600)
    assert line == "Pace: out after ~1h15 of work at this pace (+40 %/h)"
    detail = lim.render_detail(state(50, T0 + 3600), T0 + 3600, pace=history)
    assert line in detail


def test_nothing_projected_from_too_little() -> None:
    assert pace.project(history_of((10, T0)), KEY) is None
    assert pace.project(history_of((10, T0), (20, T0 + 30)), KEY) is None  # < 60 s apart
    assert pace.project(history_of((10, T0), (10, T0 + 3600)), KEY) is None  # not rising
    assert pace.project(None, KEY) is None


def test_usage_falling_restarts_the_history() -> None:
    history = history_of((40, T0), (10, T0 + 600), (30, T0 + 4200))
    projection = pace.project(history, KEY)
    assert projection is not None and projection.rate_per_hour == 20


def test_only_fresh_new_observations_are_recorded_and_history_is_bounded() -> None:
    history = history_of((10, T0))
    assert pace.record(history, state(90, T0 + 100, status="stale"), T0 + 100) == history
    same = pace.record(history, state(10, T0), T0 + 5)
    assert same == history
    for i in range(1, 40):
        history = pace.record(history, state(10 + i, T0 + 60 * i), T0 + 60 * i)
    assert len(history[KEY]) == pace.MAX_SAMPLES
    # A finished cycle is forgotten.
    assert pace.record(history, state(1, RESET + 1, reset=RESET + 18000), RESET + 1).get(
        KEY) is None


def test_format_eta() -> None:
    assert pace.format_eta(10) == "~1m"
    assert pace.format_eta(45 * 60) == "~45m"
    assert pace.format_eta(80 * 60) == "~1h20"
    assert pace.format_eta(2 * 3600) == "~2h"
    assert pace.format_eta(51 * 3600) == "~2d3h"


def test_pace_alert_before_the_threshold_once_per_cycle() -> None:
    history = history_of((10, T0), (50, T0 + 3600))
    current = state(50, T0 + 3600)
    alerts, memory = pace.pace_alerts(current, history, None, T0 + 3600)
    assert [a.message for a in alerts] == [
        "claude Claude 5h window: out after ~1h15 of work at this pace (resets in 4h)"]
    assert alerts[0].level == "warning"
    again, memory = pace.pace_alerts(current, history, memory, T0 + 3700)
    assert again == []
    # Past the warning threshold the threshold alerts speak instead.
    late = history_of((10, T0), (85, T0 + 3600))
    assert pace.pace_alerts(state(85, T0 + 3600), late, None, T0 + 3600)[0] == []
    # A window that lasts until its reset raises nothing; neither does stale data.
    slow = history_of((10, T0), (11, T0 + 3600))
    assert pace.pace_alerts(state(11, T0 + 3600), slow, None, T0 + 3600)[0] == []
    stale = state(50, T0 + 3600, status="stale")
    assert pace.pace_alerts(stale, history, None, T0 + 3600)[0] == []


def test_rates_in_plain_figures() -> None:
    assert pace.format_rate(1666.7) == "+1,667 %/h"
    assert pace.format_rate(12.4) == "+12 %/h"
    assert pace.format_rate(0.5) == "+0.5 %/h"
    assert pace.format_rate(3.0) == "+3 %/h"
    assert pace.format_rate(0.01) == "+<0.1 %/h"


def test_pace_over_active_time_never_contradicts_the_figure() -> None:
    """Issue 26 item 5: 10 % → 80 % in 42 minutes of work, then a night of idle time. On
    the wall clock the rate was extrapolated through the idle night ("full by now" under
    "20% left"); over active time the rate is that of the work, and what is left is what
    the last figure says."""
    clock = pace.ActiveClock()
    history: pace.PaceHistory | None = None
    clock.start(T0)
    history = pace.record(history, state(10, T0), T0, active=clock.read(T0))
    at = T0 + 42 * 60
    history = pace.record(history, state(80, at), at, active=clock.read(at))
    clock.stop(at)
    later = at + 6 * 3600  # idle: nothing ran
    assert clock.read(later) == 42 * 60
    projection = pace.project(history, KEY, now=clock.read(later))
    assert projection is not None
    assert projection.rate_per_hour == 100.0  # 70 points in 42 minutes of work
    assert projection.work_left == 12 * 60  # 20 % left at 100 %/h
    line = pace.pace_line("claude", lim.Window(80, 300, RESET), history, at + 60)
    assert line == "Pace: out after ~12m of work at this pace (+100 %/h)"
    assert "full by now" not in (line or "")


def test_a_change_while_no_turn_ran_starts_the_history_again() -> None:
    history = pace.record(None, state(10, T0), T0, active=100.0)
    history = pace.record(history, state(20, T0 + 600), T0 + 600, active=200.0)
    # Another client spent 30 points while this Agent's turns were idle.
    history = pace.record(history, state(50, T0 + 3600), T0 + 3600, active=200.0)
    assert history[KEY] == ((200.0, 50),)
