"""The bounds of the limits cache file (`limits_cache.py`), and the cuts that keep it
within them. Pure: values in, values out.

An agent chooses what a snapshot holds (the v1 contract bounds neither the buckets nor
their strings), so a state is cut to `MAX_BUCKETS` buckets (the default one always kept) of
`MAX_WINDOWS` windows, `MAX_RESET_CREDITS` reset credits and `MAX_TEXT` characters a string
before it is stored. The file keeps at most `MAX_AGENTS` Agents of
`limits_liveness.MAX_HOLDERS` holder records each, and is never written (or read) past
`MAX_CACHE_BYTES`: past a bound, the least recently updated Agents without a live holder
go first, never the one being written.

Why: a 47 MB file made `louise limits refresh` run past 90 s. Not a quadratic loop: each
of the five passes of a refresh (the load at start, adding the holder, recording the
state, removing the holder, releasing the process) parsed, validated and rewrote the whole
file, ~10 s each, and every write checked the liveness of every holder record. Within the
bounds a pass takes milliseconds, and the registry writes what it has in one pass
(`LimitsCache.apply`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from dataclasses import replace

from louise.limits import LimitsState

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from typing import Any, Final

    from louise.limits import Snapshot

MAX_CACHE_BYTES: Final = 1024 * 1024
MAX_AGENTS: Final = 64
MAX_BUCKETS: Final = 32
MAX_WINDOWS: Final = 8
MAX_RESET_CREDITS: Final = 16
MAX_TEXT: Final = 200  # characters of each string of a snapshot, and of an Agent's name
MAX_ERROR: Final = 300  # characters of a state's error


def cut(text: str, limit: int = MAX_TEXT) -> str:
    """`text` in at most `limit` characters, as UTF-8 can store it (a lone surrogate,
    which JSON lets an agent send, becomes `?`)."""
    short = text[:limit]
    try:
        short.encode("utf-8")
    except UnicodeEncodeError:
        short = short.encode("utf-8", "replace").decode("utf-8")
    return short


def _cut(text: str | None, limit: int = MAX_TEXT) -> str | None:
    return None if text is None else cut(text, limit)


def bounded_snapshot(snapshot: Snapshot) -> Snapshot:
    """`snapshot` within the bounds: the default bucket and the first others, in their
    order; ids cut like every string (a bucket whose cut id is taken is left out, and the
    default bucket's is reserved for it)."""
    default = snapshot.default_bucket_id
    default_id = _cut(default)
    room = MAX_BUCKETS - (1 if snapshot.default_bucket is not None else 0)
    seen: set[str | None] = set()
    buckets = []
    for bucket in snapshot.buckets:
        bucket_id = cut(bucket.id)
        if bucket.id != default:
            if room == 0 or bucket_id in seen or bucket_id == default_id:
                continue
            room -= 1
        seen.add(bucket_id)
        buckets.append(replace(
            bucket, id=bucket_id, windows=bucket.windows[:MAX_WINDOWS], label=_cut(bucket.label),
            reached_type=_cut(bucket.reached_type), plan_type=_cut(bucket.plan_type)))
    reset = snapshot.reset_credits
    if reset is not None and reset.credits is not None:
        reset = replace(reset, credits=tuple(
            replace(credit, id=_cut(credit.id), title=_cut(credit.title),
                    description=_cut(credit.description))
            for credit in reset.credits[:MAX_RESET_CREDITS]))
    return replace(snapshot, buckets=tuple(buckets), default_bucket_id=default_id,
                   reset_credits=reset)


def bounded_state(state: LimitsState) -> LimitsState:
    """`state` as the cache stores it: its snapshot and strings within the bounds. An RFD
    snapshot keeps `MAX_BUCKETS` pools of `MAX_WINDOWS` meters (its strings are bounded
    when it is read), and its projection is derived from what is kept."""
    quota = state.quota
    if quota is not None and (len(quota.pools) > MAX_BUCKETS or any(
            len(pool.meters) > MAX_WINDOWS for pool in quota.pools)):
        from louise.limits.quota_project import project

        quota = replace(quota, pools=tuple(replace(pool, meters=pool.meters[:MAX_WINDOWS])
                                           for pool in quota.pools[:MAX_BUCKETS]))
        snapshot = None if state.snapshot is None else project(quota)
    else:
        snapshot = None if state.snapshot is None else bounded_snapshot(state.snapshot)
    bounded = replace(state, snapshot=snapshot, quota=quota, error=_cut(state.error, MAX_ERROR),
                      source=_cut(state.source))
    return state if bounded == state else bounded


def _updated_at(entry: Mapping[str, Any]) -> float:
    state = entry.get("state")
    value = state.get("updatedAt") if isinstance(state, dict) else None
    if type(value) is int or type(value) is float:
        return float(value)
    return -math.inf


def _size(name: str, entry: Any) -> int:
    """The bytes `name: entry` takes in the file (as `durable.dump_json` writes it)."""
    return len(json.dumps({name: entry}, sort_keys=True, ensure_ascii=False).encode()) + 1


def fit(agents: dict[str, Any], keep: Collection[str], budget: int | None) -> list[str]:
    """Drop entries of `agents` (in place) until at most `MAX_AGENTS` are left, taking at
    most `budget` bytes (None: any); those with a live holder (once holders are pruned)
    and the most recently updated go last, `keep` last of all. Returns the names dropped."""
    def priority(name: str) -> tuple[bool, bool, float]:
        entry = agents[name]
        live = isinstance(entry, dict) and bool(entry.get("holders"))
        updated = _updated_at(entry) if isinstance(entry, dict) else -math.inf
        return (name in keep, live, updated)

    order = sorted(agents, key=priority)  # the first to drop first
    sizes = {name: _size(name, agents[name]) if budget is not None else 0 for name in order}
    total = sum(sizes.values())
    dropped = []
    for name in order:
        if len(agents) <= MAX_AGENTS and (budget is None or total <= budget):
            break
        del agents[name]
        total -= sizes[name]
        dropped.append(name)
    return dropped
