"""LimitsCache in one process: merge rules, holders, inspection at read time, file format."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from louise.limits import (
    ERROR_NO_LIVE_SESSION,
    ERROR_RESET_PASSED,
    LimitsState,
    Snapshot,
    accepted,
    failed,
    loading,
    parse_snapshot,
    state_to_json,
)
from louise.storage.limits_cache import LimitsCache
from louise.storage.limits_cache_bounds import (
    MAX_AGENTS,
    MAX_BUCKETS,
    MAX_CACHE_BYTES,
    MAX_RESET_CREDITS,
    MAX_TEXT,
    MAX_WINDOWS,
)
from louise.storage.limits_cache_file import CACHE_VERSION, merge_states
from louise.storage.limits_liveness import MAX_HOLDERS, Holder, current_holder

NOW = 4_000_000_000


def metered(used: float = 10, resets: int = NOW + 7200) -> Snapshot:
    return parse_snapshot(
        {
            "defaultBucketId": "b",
            "buckets": [
                {"id": "b", "windows": [
                    {"usedPercent": used, "windowDurationMins": 300, "resetsAt": resets}
                ]}
            ],
        }
    )


OLD = accepted("codex", metered(used=10), NOW - 100)
NEW = accepted("codex", metered(used=20), NOW - 10)


@pytest.fixture
def cache(tmp_path: Path) -> LimitsCache:
    return LimitsCache(tmp_path / "state" / "limits.json")


# --------------------------------------------------------------------------- merge rules


def test_merge_into_nothing_stores_the_incoming_state() -> None:
    for state in (OLD, failed(None, "x", agent="codex"), loading(None, agent="codex")):
        assert merge_states(None, state) == state


def test_merge_over_a_state_without_snapshot_stores_the_incoming_state() -> None:
    unavailable = failed(None, "x", agent="codex")
    assert merge_states(unavailable, OLD) == OLD
    assert merge_states(unavailable, loading(None, agent="codex")).status == "loading"
    assert merge_states(loading(None, agent="codex"), unavailable) == unavailable


def test_newer_accepted_snapshot_wins() -> None:
    assert merge_states(OLD, NEW) == NEW


def test_older_accepted_snapshot_never_replaces_a_newer_one() -> None:
    assert merge_states(NEW, OLD) == NEW
    stale_new = failed(NEW, "later failure")
    assert merge_states(stale_new, OLD) == stale_new


def test_equal_receipt_times_let_the_last_writer_win() -> None:
    same_time = accepted("codex", metered(used=99), NEW.updated_at or 0)
    assert merge_states(NEW, same_time) == same_time


def test_failure_over_the_same_snapshot_is_recorded_as_is() -> None:
    stale = failed(NEW, "read failed")
    assert merge_states(NEW, stale) == stale


def test_failure_with_an_older_snapshot_marks_the_newer_one_stale() -> None:
    merged = merge_states(NEW, failed(OLD, "read failed"))
    assert merged == LimitsState("codex", "stale", NEW.snapshot, NEW.updated_at, "read failed")


def test_failure_without_snapshot_keeps_the_good_snapshot_but_records_the_error() -> None:
    merged = merge_states(NEW, failed(None, "read failed", agent="codex"))
    assert merged == LimitsState("codex", "stale", NEW.snapshot, NEW.updated_at, "read failed")


def test_stale_state_with_a_newer_snapshot_replaces() -> None:
    newer_stale = failed(accepted("codex", metered(used=50), NOW), "x")
    assert merge_states(NEW, newer_stale) == newer_stale


def test_loading_keeps_the_newest_snapshot_visible() -> None:
    assert merge_states(NEW, loading(None, agent="codex")) == LimitsState(
        "codex", "loading", NEW.snapshot, NEW.updated_at
    )
    assert merge_states(NEW, loading(OLD)) == LimitsState(
        "codex", "loading", NEW.snapshot, NEW.updated_at
    )
    assert merge_states(OLD, loading(NEW)) == loading(NEW)


# --------------------------------------------------------------------------- record/load


def test_record_and_load_round_trip(cache: LimitsCache) -> None:
    assert cache.record_state("codex", NEW) == NEW
    view = cache.load()
    assert view.file_status == "ok"
    assert view.warnings == ()
    assert view.states == {"codex": NEW}
    assert view.agents == ("codex",)


def test_record_applies_the_merge_rules(cache: LimitsCache) -> None:
    cache.record_state("codex", NEW)
    assert cache.record_state("codex", OLD) == NEW
    stored = cache.record_state("codex", failed(None, "boom", agent="codex"))
    assert stored == LimitsState("codex", "stale", NEW.snapshot, NEW.updated_at, "boom")
    assert cache.load().states["codex"] == stored


def test_agents_are_independent(cache: LimitsCache) -> None:
    claude = accepted("claude", parse_snapshot({"buckets": []}), NOW)
    cache.record_state("codex", NEW)
    cache.record_state("claude", claude)
    assert cache.load().states == {"codex": NEW, "claude": claude}


def test_record_refuses_a_mismatched_agent_or_an_absence_state(cache: LimitsCache) -> None:
    with pytest.raises(ValueError):
        cache.record_state("claude", NEW)
    for status in ("not_observed", "unsupported"):
        with pytest.raises(ValueError):
            cache.record_state("codex", LimitsState("codex", status))  # type: ignore[arg-type]
    assert not cache.path.exists()


def test_file_format_is_versioned_json(cache: LimitsCache) -> None:
    cache.record_state("codex", NEW)
    cache.add_holder("codex")
    document = json.loads(cache.path.read_text())
    assert document["version"] == CACHE_VERSION == 1
    entry = document["agents"]["codex"]
    assert entry["state"]["status"] == "fresh"
    assert entry["holders"] == [{"pid": os.getpid(), "start": current_holder().start}]
    assert (cache.path.stat().st_mode & 0o777) == 0o600


def test_default_path_honours_louise_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOUISE_STATE_DIR", str(tmp_path / "elsewhere"))
    assert LimitsCache().path == tmp_path / "elsewhere" / "limits.json"


# --------------------------------------------------------------------------- holders


def test_this_process_as_holder_is_live(cache: LimitsCache) -> None:
    cache.record_state("codex", NEW)
    cache.add_holder("codex")
    view = cache.load()
    assert view.holders["codex"] == (current_holder(),)
    assert view.is_live("codex")
    assert cache.inspect("codex", NOW) == NEW


def test_add_holder_is_idempotent_per_process(cache: LimitsCache) -> None:
    cache.add_holder("codex")
    cache.add_holder("codex")
    assert cache.load().holders["codex"] == (current_holder(),)


def test_removing_the_last_holder_makes_the_state_stale(cache: LimitsCache) -> None:
    cache.record_state("codex", NEW)
    cache.add_holder("codex")
    cache.remove_holder("codex")
    assert "codex" not in cache.load().holders
    assert cache.inspect("codex", NOW) == LimitsState(
        "codex", "stale", NEW.snapshot, NEW.updated_at, ERROR_NO_LIVE_SESSION
    )


def test_release_process_removes_this_process_everywhere(cache: LimitsCache) -> None:
    cache.add_holder("codex")
    cache.add_holder("claude")
    cache.release_process()
    assert cache.load().holders == {}
    # Entries with neither a state nor a holder are dropped entirely.
    assert cache.load().agents == ()


def test_release_process_drops_the_resume_probe_it_leaves_out(cache: LimitsCache) -> None:
    """A process leaving with its resend of a parked turn unsettled (the outcome's write
    abandoned at exit with the lock busy, as a CI run saw): another process's parked turn
    sends at once, as after a crash, instead of waiting PROBE_TIMEOUT for an outcome
    nobody will write. A settled lease, or another process's probe, stays."""
    from louise.storage.limits_liveness import Holder, current_holder
    from louise.storage.limits_shared import claim_resume, parse_lease, settle_resume

    reset = int(NOW) + 60
    other = ("codex:s9", Holder(os.getpid() + 1, "another start"))
    assert claim_resume(cache, "claude", reset, "claude:s1", NOW)[0] == "probe"
    cache.release_process()
    # Another process (its holder in the lease below) is due: it probes, not waits.
    assert claim_resume(cache, "claude", reset, "claude:s2", NOW)[0] == "probe"

    def lease(agent: str) -> object:
        return parse_lease(cache.update(lambda agents: dict(cache.entry(agents, agent))
                                        ).get("resume"))

    # Settled before leaving: what the others read stays.
    claim_resume(cache, "gemini", reset, "gemini:s1", NOW)
    settle_resume(cache, "gemini", "gemini:s1", True, None)
    # Another process's probe out.
    def theirs(agents: dict[str, object]) -> None:
        cache.entry(agents, "codex")["resume"] = {
            "resetsAt": reset, "holder": {"pid": other[1].pid, "start": other[1].start,
                                          "session": other[0]},
            "claimedAt": NOW, "outcome": "pending", "next": None}
    cache.update(theirs)
    cache.release_process(current_holder())
    settled, out = lease("gemini"), lease("codex")
    assert settled is not None and settled.outcome == "resumed"
    assert out is not None and out.outcome == "pending" and out.pid == other[1].pid


def test_a_holder_without_state_inspects_as_loading_then_not_observed(cache: LimitsCache) -> None:
    cache.add_holder("codex")
    assert cache.inspect("codex", NOW) == LimitsState("codex", "loading")
    cache.remove_holder("codex")
    assert cache.inspect("codex", NOW) == LimitsState("codex", "not_observed")


def test_holders_of_a_mismatched_start_are_not_live_and_are_pruned(cache: LimitsCache) -> None:
    # A record left by a dead process whose pid now belongs to this one.
    impostor = Holder(os.getpid(), "not-this-process")
    cache.record_state("codex", NEW)
    document = json.loads(cache.path.read_text())
    document["agents"]["codex"]["holders"] = [{"pid": impostor.pid, "start": impostor.start}]
    cache.path.write_text(json.dumps(document))
    view = cache.load()
    assert view.holders["codex"] == (impostor,)
    assert not view.is_live("codex")
    assert view.inspect("codex", NOW).status == "stale"
    cache.record_state("claude", accepted("claude", parse_snapshot({"buckets": []}), NOW))
    assert "codex" not in cache.load().holders


# --------------------------------------------------------------------------- inspection


def test_inspect_all_applies_the_rules_at_read_time(cache: LimitsCache) -> None:
    expired = accepted("gemini", metered(resets=NOW - 1), NOW - 7200)
    cache.record_state("codex", NEW)
    cache.record_state("gemini", expired)
    cache.add_holder("codex")
    cache.add_holder("gemini")
    states = cache.inspect_all(NOW)
    assert states["codex"] == NEW
    assert states["gemini"] == LimitsState(
        "gemini", "stale", expired.snapshot, expired.updated_at, ERROR_RESET_PASSED
    )
    # Nothing was written back: inspection is a read.
    assert cache.load().states["gemini"] == expired


def test_inspect_of_an_unknown_agent_is_not_observed(cache: LimitsCache) -> None:
    assert cache.inspect("nobody", NOW) == LimitsState("nobody", "not_observed")


def test_malformed_entry_is_dropped_with_a_warning_and_others_kept(cache: LimitsCache) -> None:
    cache.record_state("codex", NEW)
    document = json.loads(cache.path.read_text())
    document["agents"]["broken"] = {"state": {"agent": "broken", "status": "fresh",
                                              "snapshot": {"buckets": "no"}}}
    document["agents"]["liar"] = {"state": json.loads(json.dumps(document["agents"]["codex"]
                                                                 ["state"]))}
    document["agents"]["bad-holders"] = {"holders": [{"pid": "1"}]}
    document["agents"]["not-an-object"] = 5
    document["agents"]["far-future"] = {"state": {"agent": "far-future", "status": "empty",
                                                  "snapshot": {"buckets": []},
                                                  "updatedAt": 10**400}}
    document["agents"]["huge-pid"] = {"holders": [{"pid": 10**30, "start": None}]}
    cache.path.write_text(json.dumps(document))
    view = cache.load()
    assert view.states == {"codex": NEW}
    names = ["broken", "liar", "bad-holders", "not-an-object", "far-future", "huge-pid"]
    assert len(view.warnings) == len(names)
    for name, warning in zip(names, view.warnings, strict=True):
        assert repr(name) in warning and str(cache.path) in warning and "\n" not in warning
    # The next write repairs what it touches and keeps the good entry.
    cache.record_state("broken", accepted("broken", parse_snapshot({"buckets": []}), NOW))
    repaired = cache.load()
    assert repaired.states["codex"] == NEW and repaired.states["broken"].status == "empty"


# --------------------------------------------------------------------------- bounds


def entry_bytes(name: str, updated_at: float) -> bytes:
    state = state_to_json(accepted(name, metered(), updated_at))
    return json.dumps({name: {"state": state, "holders": []}})[1:-1].encode()


def test_a_file_over_its_byte_bound_is_not_read_and_is_rewritten_within_it(
        cache: LimitsCache, caplog: pytest.LogCaptureFixture) -> None:
    cache.record_state("codex", NEW)
    entries = b", ".join(entry_bytes(f"a{i}", NOW) for i in range(MAX_CACHE_BYTES // 200))
    cache.path.write_bytes(b'{"version": 1, "agents": {' + entries + b"}}")
    size = cache.path.stat().st_size
    assert size > MAX_CACHE_BYTES
    view = cache.load()
    assert (view.file_status, view.states, view.holders) == ("too_big", {}, {})
    (warning,) = view.warnings
    assert f"limits cache {cache.path} is {size:,} bytes, over its bound of " \
        f"{MAX_CACHE_BYTES:,} bytes, so it was not read" in warning
    assert "delete the file" in warning and "\n" not in warning
    # The next write replaces it, within the bound, with what it records; the warning the
    # load returned (its caller shows it) is not logged again.
    with caplog.at_level("WARNING", logger="louise.storage.limits_cache"):
        assert cache.record_state("claude", NEW_CLAUDE) == NEW_CLAUDE
    assert caplog.text == ""
    assert cache.path.stat().st_size <= MAX_CACHE_BYTES
    assert cache.load().states == {"claude": NEW_CLAUDE}


NEW_CLAUDE = accepted("claude", metered(used=30), NOW - 5)


def test_past_the_agent_bound_the_least_recently_updated_go_first(
        cache: LimitsCache, caplog: pytest.LogCaptureFixture) -> None:
    count = MAX_AGENTS + 10
    entries = b", ".join(entry_bytes(f"a{i:03d}", NOW - 1000 + i) for i in range(count))
    cache.path.parent.mkdir(parents=True)
    cache.path.write_bytes(b'{"version": 1, "agents": {' + entries + b"}}")
    view = cache.load()
    assert len(view.states) == MAX_AGENTS
    assert any(f"holds {count} Agents, over its bound of {MAX_AGENTS}" in warning
               for warning in view.warnings)
    old = accepted("zz-old", metered(), NOW - 5000)  # older than all, but being written
    with caplog.at_level("WARNING", logger="louise.storage.limits_cache"):
        cache.record_state("zz-old", old)
    kept = set(json.loads(cache.path.read_text())["agents"])
    assert len(kept) == MAX_AGENTS and "zz-old" in kept
    assert kept - {"zz-old"} == {f"a{i:03d}" for i in range(count - MAX_AGENTS + 1, count)}
    assert f"limits cache {cache.path}: cut to its bounds" in caplog.text
    assert "dropped 11 Agent(s), least recently updated first ('a000', 'a001', 'a002', …)" \
        in caplog.text


def test_a_huge_snapshot_is_stored_within_the_bounds(
        cache: LimitsCache, caplog: pytest.LogCaptureFixture) -> None:
    window = {"usedPercent": 10, "windowDurationMins": 300, "resetsAt": NOW + 7200}
    buckets = [{"id": f"b{i}" + "x" * 300, "label": "L" * 10_000, "planType": "p\ud800",
                "windows": [window] * 50} for i in range(1000)]
    buckets.append({"id": "main", "windows": [window]})
    snapshot = parse_snapshot({"defaultBucketId": "main", "buckets": buckets, "resetCredits": {
        "availableCount": 3, "credits": [{"title": "t" * 5000}] * 100}})
    state = accepted("codex", snapshot, NOW)
    with caplog.at_level("WARNING", logger="louise.storage.limits_cache"):
        stored = cache.record_state("codex", failed(state, "e\ud800" * 10_000, agent="codex"))
    assert f"limits cache {cache.path}: cut to its bounds" in caplog.text
    assert "the state of 'codex' (buckets, windows, text)" in caplog.text
    assert stored.snapshot is not None and stored.error is not None
    assert len(stored.snapshot.buckets) == MAX_BUCKETS
    assert stored.snapshot.default_bucket is not None  # kept, though it came last
    assert stored.snapshot.default_bucket.id == "main"
    assert {len(b.windows) for b in stored.snapshot.buckets} <= {1, MAX_WINDOWS}
    assert max(len(b.id) + len(b.label or "") for b in stored.snapshot.buckets) <= 2 * MAX_TEXT
    assert stored.snapshot.buckets[0].plan_type == "p?"  # a lone surrogate cannot be stored
    assert stored.snapshot.reset_credits is not None
    assert len(stored.snapshot.reset_credits.credits or ()) == MAX_RESET_CREDITS
    assert len(stored.error) <= 300 and "\ud800" not in stored.error
    assert cache.path.stat().st_size <= MAX_CACHE_BYTES
    assert cache.load().states == {"codex": stored}


def test_holder_records_are_bounded(cache: LimitsCache) -> None:
    me = current_holder()
    cache.add_holder("codex")
    document = json.loads(cache.path.read_text())
    dead = [{"pid": 2**22 - i, "start": "gone"} for i in range(100)]
    document["agents"]["codex"]["holders"] = [*dead, {"pid": me.pid, "start": me.start}]
    cache.path.write_text(json.dumps(document))
    assert cache.load().holders["codex"][-1] == me
    assert len(cache.load().holders["codex"]) == MAX_HOLDERS
    cache.record_state("codex", NEW)
    assert json.loads(cache.path.read_text())["agents"]["codex"]["holders"] == [
        {"pid": me.pid, "start": me.start}]


def test_apply_writes_holders_and_states_in_one_pass(cache: LimitsCache) -> None:
    stored = cache.apply([("codex", True), ("claude", True), ("claude", False)],
                         {"codex": NEW, "claude": NEW_CLAUDE})
    assert stored == {"codex": NEW, "claude": NEW_CLAUDE}
    view = cache.load()
    assert view.states == {"codex": NEW, "claude": NEW_CLAUDE}
    assert view.is_live("codex") and not view.is_live("claude")
