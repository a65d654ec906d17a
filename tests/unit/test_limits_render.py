"""render_label and the formatting helpers: every format edge and rule (render_detail:
test_limits_detail.py)."""

from __future__ import annotations

from datetime import UTC
from typing import Any

import pytest

from louise.limits import (
    Label,
    LimitsState,
    Snapshot,
    accepted,
    failed,
    format_age,
    format_duration,
    format_percent,
    format_remaining,
    format_until,
    format_utc,
    inspect,
    loading,
    parse_snapshot,
    render_label,
    sanitize,
)

NOW = 4_102_437_600  # 2099-12-31T22:00:00Z
H = 3600
D = 86400


def window(used: float = 10, mins: int = 300, resets: int = NOW + 2 * H) -> dict[str, Any]:
    return {"usedPercent": used, "windowDurationMins": mins, "resetsAt": resets}


def bucket(bucket_id: str, *windows: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": bucket_id, "windows": list(windows), **extra}


def snapshot(*buckets: dict[str, Any], default: str | None = None, **extra: Any) -> Snapshot:
    payload: dict[str, Any] = {"buckets": list(buckets), **extra}
    if buckets:
        payload["defaultBucketId"] = default or buckets[0]["id"]
    return parse_snapshot(payload)


def fresh(
    *buckets: dict[str, Any], agent: str = "codex", default: str | None = None
) -> LimitsState:
    return accepted(agent, snapshot(*buckets, default=default), NOW)


def label(state: LimitsState, now: float = NOW) -> Label:
    result = render_label(state, now)
    assert result is not None
    return result


# --------------------------------------------------------------------------- formats


@pytest.mark.parametrize(
    ("minutes", "text"),
    [
        (1, "1m"),
        (59, "59m"),
        (60, "1h"),
        (61, "61m"),
        (90, "90m"),
        (120, "2h"),
        (300, "5h"),
        (1380, "23h"),
        (1440, "1d"),
        (1500, "25h"),
        (2160, "36h"),
        (2880, "2d"),
        (10080, "7d"),
        (43200, "30d"),
        (525600, "365d"),
        (1441, "1441m"),
    ],
)
def test_duration_uses_the_largest_unit_that_divides_exactly(minutes: int, text: str) -> None:
    assert format_duration(minutes) == text


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (-100, "1m"),  # passed: at least 1m (inspection marks such data stale)
        (0, "1m"),
        (1, "1m"),
        (59, "1m"),
        (60, "1m"),
        (61, "2m"),
        (119, "2m"),
        (120, "2m"),
        (3540, "59m"),
        (3541, "60m"),
        (3599, "60m"),
        (3600, "1h"),
        (3601, "2h"),
        (7200, "2h"),
        (86399, "24h"),
        (86400, "1d"),
        (86401, "2d"),
        (2 * D, "2d"),
        (2 * D + 1, "3d"),
        (7 * D, "7d"),
        (10**30, f"{-(-(10**30) // D)}d"),
    ],
)
def test_relative_reset_rounds_up(delta: int, text: str) -> None:
    assert format_until(NOW + delta, NOW) == text


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (3600, "60m"),  # 3599.5 s left: still under an hour
        (86400, "24h"),  # 86399.5 s left
        (2 * D, "2d"),  # 172799.5 s left
        (2 * D + 1, "3d"),  # 172800.5 s left
        (1, "1m"),
    ],
)
def test_relative_reset_with_a_fractional_now(delta: int, text: str) -> None:
    assert format_until(NOW + delta, NOW + 0.5) == text


@pytest.mark.parametrize(
    ("remaining", "text"),
    [
        (100, "100%"),
        (0, "0%"),
        (0.0, "0%"),
        (1e-9, "<1%"),
        (0.5, "<1%"),
        (0.999, "<1%"),
        (1, "1%"),
        (1.4, "1%"),
        (18, "18%"),
        (18.5, "18%"),  # %.0f rounds half to even, like the reference
        (19.5, "20%"),
        (59.5, "60%"),
        (99.6, "100%"),
    ],
)
def test_remaining_percent(remaining: float, text: str) -> None:
    assert format_remaining(remaining) == text


def test_detail_percent_keeps_fractions() -> None:
    assert format_percent(40.5) == "40.5%"
    assert format_percent(100 - 82.3) == "17.7%"
    assert format_percent(0.5) == "<1%"
    assert format_percent(0) == "0%"
    assert format_percent(100) == "100%"


@pytest.mark.parametrize(
    ("age", "text"),
    [
        (-5, "just now"),
        (0, "just now"),
        (59.9, "just now"),
        (60, "1m ago"),
        (3599, "59m ago"),
        (3600, "1h ago"),
        (86399, "23h ago"),
        (86400, "1d ago"),
        (10 * D + 5, "10d ago"),
    ],
)
def test_age(age: float, text: str) -> None:
    assert format_age(NOW - age, NOW) == text


def test_age_without_time_is_never() -> None:
    assert format_age(None, NOW) == "never"


def test_utc_and_out_of_range_times() -> None:
    assert format_utc(4102444800) == "2100-01-01 00:00 UTC"
    assert format_utc(4102444801, seconds=True) == "2100-01-01 00:00:01 UTC"
    assert format_utc(10**30) == f"Unix time {10**30}"


def test_times_show_in_the_local_zone_too_and_balances_without_exponents() -> None:
    from datetime import timedelta, timezone

    from louise.limits.text import format_number

    cet = timezone(timedelta(hours=1), "CET")
    assert format_utc(4102444800, local=cet) == "2100-01-01 00:00 UTC · 01:00 CET"
    est = timezone(timedelta(hours=-5), "EST")
    assert format_utc(4102444800, local=est) == "2100-01-01 00:00 UTC · 2099-12-31 19:00 EST"
    assert format_utc(4102444800, local=UTC) == "2100-01-01 00:00 UTC"
    assert [format_number(v) for v in (1e6, 0.0001, 24.5, 10**40)] == \
        ["1000000", "0.0001", "24.5", str(10**40)]


def test_sanitize_turns_control_characters_into_spaces() -> None:
    assert sanitize("a\nb\tc\x1b[31md\x7fe\x85f\u2028g\u2029h\x00") == "a b c [31md e f g h "
    assert sanitize("Requêtes 界") == "Requêtes 界"


# --------------------------------------------------------------------------- label: states


def test_not_observed_has_no_label() -> None:
    assert render_label(LimitsState("codex", "not_observed"), NOW) is None


def test_unsupported_is_a_neutral_na() -> None:
    assert label(LimitsState("codex", "unsupported")) == Label("limits n/a", "neutral")


def test_loading_without_snapshot() -> None:
    assert label(loading(None, agent="codex")) == Label("limits loading", "active")


def test_unavailable() -> None:
    assert label(failed(None, "x", agent="codex")) == Label("limits unavailable", "error")
    no_live = inspect(loading(None, agent="codex"), "codex", NOW, False, False)
    assert label(no_live) == Label("limits unavailable", "error")


def test_unlimited() -> None:
    state = accepted("codex", parse_snapshot({"buckets": [], "unlimited": True}), NOW)
    assert label(state) == Label("limits unlimited", "ok")


def test_unlimited_flag_wins_even_with_metered_buckets() -> None:
    state = accepted("codex", snapshot(bucket("b", window(used=100)), unlimited=True), NOW)
    assert label(state) == Label("limits unlimited", "ok")


def test_empty_is_no_data() -> None:
    state = accepted("codex", parse_snapshot({"buckets": []}), NOW)
    assert label(state) == Label("limits no data", "warning")


def test_stale_and_loading_unlimited_or_empty_say_so() -> None:
    unlimited = accepted("codex", parse_snapshot({"buckets": [], "unlimited": True}), NOW)
    assert label(failed(unlimited, "x")) == Label("limits unlimited stale", "warning")
    assert label(loading(unlimited)) == Label("limits unlimited loading", "warning")
    empty = accepted("codex", parse_snapshot({"buckets": []}), NOW)
    assert label(failed(empty, "x")) == Label("limits no data stale", "warning")
    assert label(loading(empty)) == Label("limits no data loading", "warning")


# --------------------------------------------------------------------------- label: text


def test_reference_readme_example() -> None:
    state = fresh(bucket("codex", window(used=2, mins=10080, resets=NOW + 7 * D), label="Codex"))
    assert label(state) == Label("limits 98%/7d ↻7d", "ok")


def test_doc_example_label() -> None:
    state = fresh(
        bucket(
            "requests",
            window(used=82, mins=300, resets=NOW + 2 * H),
            window(used=40.5, mins=10080, resets=NOW + 4 * H),
            label="Requests",
            reachedType="short_window",
        )
    )
    assert label(state) == Label("limits Requests 18%/5h ↻2h 60%/7d ↻4h", "error")


def test_two_shortest_windows_sorted_by_duration_then_plus_n() -> None:
    windows = [window(mins=43200), window(mins=300), window(mins=10080), window(mins=60)]
    state = fresh(bucket("b", *windows, label="B"))
    assert label(state).text == "limits B 90%/1h ↻2h 90%/5h ↻2h +2"
    three = fresh(bucket("b", *windows[:3], label="B"))
    assert label(three).text == "limits B 90%/5h ↻2h 90%/7d ↻2h +1"
    two = fresh(bucket("b", *windows[:2], label="B"))
    assert label(two).text == "limits B 90%/5h ↻2h 90%/30d ↻2h"


def test_equal_durations_keep_wire_order() -> None:
    state = fresh(bucket("b", window(used=1, mins=300), window(used=2, mins=300), label="B"))
    assert label(state).text == "limits B 99%/5h ↻2h 98%/5h ↻2h"


def test_bucket_without_windows_shows_only_its_name() -> None:
    assert label(fresh(bucket("b", label="Tokens"))) == Label("limits Tokens", "ok")


def test_less_than_one_percent_and_zero() -> None:
    assert label(fresh(bucket("b", window(used=99.5), label="B"))).text == "limits B <1%/5h ↻2h"
    assert label(fresh(bucket("b", window(used=100), label="B"))).text == "limits B 0%/5h ↻2h"


def test_relative_reset_in_label_rounds_up() -> None:
    state = fresh(bucket("b", window(resets=NOW + 61), window(mins=10080, resets=NOW + D + 1)))
    assert label(state).text == "limits b 90%/5h ↻2m 90%/7d ↻2d"


def test_stale_and_loading_suffixes_force_warning() -> None:
    base = fresh(bucket("b", window(used=99), label="B", reachedType="weekly"))
    assert label(base).level == "error"
    assert label(failed(base, "x")) == Label("limits B 1%/5h ↻2h stale", "warning")
    assert label(loading(base)) == Label("limits B 1%/5h ↻2h loading", "warning")
    calm = fresh(bucket("b", window(used=1), label="B"))
    assert label(failed(calm, "x")).level == "warning"
    no_live = inspect(calm, "codex", NOW, False, True)
    assert label(no_live) == Label("limits B 99%/5h ↻2h stale", "warning")


def test_control_characters_in_labels_become_spaces() -> None:
    state = fresh(bucket("b", window(used=1), label="Re\nq\tu\x1bests\u2028"))
    assert label(state).text == "limits Re q u ests  99%/5h ↻2h"


# --------------------------------------------------------------------------- label omission


def test_default_bucket_label_equal_to_agent_is_omitted_case_insensitively() -> None:
    state = fresh(bucket("main", window(used=1), label="CODEX"), agent="codex")
    assert label(state).text == "limits 99%/5h ↻2h"
    unicode = fresh(bucket("main", window(used=1), label="ÉQUIPE"), agent="équipe")
    assert label(unicode).text == "limits 99%/5h ↻2h"


def test_default_bucket_id_equal_to_agent_without_label_is_omitted() -> None:
    assert label(fresh(bucket("Codex", window(used=1)), agent="codex")).text == "limits 99%/5h ↻2h"


def test_default_bucket_with_another_label_is_shown() -> None:
    state = fresh(bucket("codex", window(used=1), label="Requests"), agent="codex")
    assert label(state).text == "limits Requests 99%/5h ↻2h"


def test_non_default_bucket_named_like_the_agent_is_shown() -> None:
    state = fresh(
        bucket("main", window(used=1), label="Main"),
        bucket("other", window(used=85), label="codex"),
        agent="codex",
    )
    assert label(state).text == "limits codex 15%/5h ↻2h"


# --------------------------------------------------------------------------- levels


@pytest.mark.parametrize(
    ("used", "level"),
    [
        (0, "ok"),
        (79.5, "ok"),
        (80, "warning"),  # 20 % left
        (89.5, "warning"),
        (90, "error"),  # 10 % left
        (100, "error"),
    ],
)
def test_level_from_remaining(used: float, level: str) -> None:
    assert label(fresh(bucket("b", window(used=used)))).level == level


def test_reached_is_error_whatever_the_percentages() -> None:
    state = fresh(bucket("b", window(used=0), reachedType="weekly"))
    assert label(state).level == "error"


def test_reached_is_never_inferred_from_percentages() -> None:
    # 100 % used without reachedType: urgent by percentage, but a bucket that does report
    # reachedType still outranks it.
    state = fresh(
        bucket("full", window(used=100), label="Full"),
        bucket("flagged", window(used=50), label="Flagged", reachedType="daily"),
    )
    assert label(state).text.startswith("limits Flagged 50%")


# --------------------------------------------------------------------------- bucket choice


def test_low_secondary_bucket_beats_a_calm_default() -> None:
    state = fresh(
        bucket("main", window(used=10), label="Main"), bucket("s", window(used=85), label="S")
    )
    assert label(state) == Label("limits S 15%/5h ↻2h", "warning")


def test_exhausted_default_is_not_hidden_behind_a_low_secondary() -> None:
    state = fresh(
        bucket("main", window(used=100), label="Main", reachedType="daily"),
        bucket("s", window(used=85), label="S"),
    )
    assert label(state) == Label("limits Main 0%/5h ↻2h", "error")
    by_percent = fresh(
        bucket("main", window(used=95), label="Main"), bucket("s", window(used=85), label="S")
    )
    assert label(by_percent) == Label("limits Main 5%/5h ↻2h", "error")


def test_default_wins_ties() -> None:
    state = fresh(
        bucket("s", window(used=95), label="S"),
        bucket("main", window(used=91), label="Main"),
        default="main",
    )
    assert label(state).text == "limits Main 9%/5h ↻2h"
    calm = fresh(bucket("s", window(used=1), label="S"), bucket("main", window(used=2), label="M"),
                 default="main")
    assert label(calm).text == "limits M 98%/5h ↻2h"


def test_first_non_default_wins_ties_among_secondaries() -> None:
    state = fresh(
        bucket("main", window(used=1), label="Main"),
        bucket("a", window(used=85), label="A"),
        bucket("b", window(used=88), label="B"),
    )
    assert label(state).text == "limits A 15%/5h ↻2h"


def test_more_urgent_secondary_beats_a_low_default() -> None:
    state = fresh(
        bucket("main", window(used=85), label="Main"),
        bucket("a", window(used=92), label="A"),
        bucket("b", window(used=1), label="B", reachedType="monthly"),
    )
    assert label(state) == Label("limits B 99%/5h ↻2h", "error")


def test_rank_uses_the_most_urgent_window_of_a_bucket() -> None:
    state = fresh(
        bucket("main", window(used=85), label="Main"),
        bucket("a", window(used=1), window(used=95, mins=10080), label="A"),
    )
    assert label(state).text == "limits A 99%/5h ↻2h 5%/7d ↻2h"
