"""The limits cache file as data (`limits_cache.py` reads and writes it under its lock).

File (version 1; JSON, written atomically, see `louise.storage.durable`)::

    {"version": 1,
     "agents": {"codex": {"state": <louise.limits.state_to_json(state)> | null,
                          "holders": [{"pid": 4242, "start": "<start token>" | null}],
                          "resume": …, "spent": […]}}}   # limits_shared.py

Here: the document read and checked (`parse_document`), its entries read into what a
read shows (`view_of`, `CacheView`; a malformed entry is dropped with a warning), entries
made canonical and within their bounds before a write (`canonical`) and pruned of the
holders of processes gone (`prune`), and what is stored when a state is recorded over
another (`merge_states`). Pure, but for the holders' liveness (it reads /proc or runs ps).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from louise.limits import LimitsState, inspect, state_from_json, state_to_json
from louise.storage.limits_cache_bounds import MAX_AGENTS, MAX_TEXT, bounded_state
from louise.storage.limits_liveness import Holder, holder_is_live, holder_to_json, parse_holders

# `louise.storage.limits_shared` (with the governor's dataclasses, ~3 ms to make without the
# engine's code cache) is imported where an entry has its records: `louise inspect` of a
# cache without them never does.

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Final, Literal

    from louise.limits.governor import Spent

    FileStatus = Literal[
        "ok", "missing", "empty", "corrupt", "unreadable", "unsupported_version", "too_big"
    ]

CACHE_VERSION: Final = 1


# --------------------------------------------------------------------------- merging


def _received(state: LimitsState) -> float:
    return state.updated_at if state.updated_at is not None else -math.inf


def merge_states(current: LimitsState | None, incoming: LimitsState) -> LimitsState:
    """What the cache stores when `incoming` is recorded over `current` (same Agent).

    The newest snapshot always survives, compared by `updated_at` (receipt time):

    - `incoming` carries a snapshot at least as new as the stored one (or nothing is
      stored): it replaces the stored state as is.
    - Otherwise the stored snapshot is newer, and
      - an older *accepted* snapshot (`fresh`/`empty`/`unlimited`) is dropped: it is
        outdated news from a slower process;
      - a *failure* (`stale`/`unavailable`) is still recorded, as `stale` on the newer
        snapshot with the failure's error: the most recent event says the data could not
        be confirmed, and claiming less freshness is the truthful side;
      - a *loading* state keeps the newer snapshot under `loading` (a refresh is running
        somewhere; the data shown is the newest known).

    Write order stands in for event order (a failure state carries its last good snapshot's
    time, not the failure's), which holds because callers record right after each
    transition. Known limit: if a process dies mid-refresh while another holder lives, the
    `loading` it recorded stays until the next observation of that Agent; once no holder
    lives, inspection turns it into `stale`/`unavailable` as usual.
    """
    if current is None or current.snapshot is None:
        return incoming
    if incoming.snapshot is not None and _received(incoming) >= _received(current):
        return incoming
    if incoming.status in ("stale", "unavailable"):
        return LimitsState(
            incoming.agent, "stale", current.snapshot, current.updated_at, incoming.error,
            current.source, current.quota, current.refusal,
        )
    if incoming.status == "loading":
        return LimitsState(
            incoming.agent, "loading", current.snapshot, current.updated_at, None, current.source,
            current.quota, current.refusal,
        )
    return current


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class CacheView:
    """One consistent read of the cache file."""

    file: str  # its path as a string (pathlib is off `louise inspect`'s start): `path`
    states: Mapping[str, LimitsState]
    holders: Mapping[str, tuple[Holder, ...]]
    warnings: tuple[str, ...]
    file_status: FileStatus
    # What each Agent's workspaces spent of its windows (`louise.storage.limits_shared`).
    spent: Mapping[str, tuple[Spent, ...]] = field(default_factory=dict)
    # Liveness per holder record, checked at most once per view (it reads /proc or runs ps).
    _live: dict[Holder, bool] = field(default_factory=dict, repr=False, compare=False)

    @property
    def path(self) -> Path:
        from pathlib import Path

        return Path(self.file)

    @property
    def agents(self) -> tuple[str, ...]:
        """Every Agent the file mentions, sorted."""
        return tuple(sorted(set(self.states) | set(self.holders)))

    def is_live(self, agent: str) -> bool:
        """Whether some process holding a capable Session of `agent` is still running."""
        for holder in self.holders.get(agent, ()):
            live = self._live.get(holder)
            if live is None:
                live = self._live[holder] = holder_is_live(holder)
            if live:
                return True
        return False

    def inspect(self, agent: str, now: float) -> LimitsState:
        """`louise.limits.inspect` for `agent` at `now` (`not_observed` when unknown here).

        The file records only capable Sessions, so a never-stored Agent without a live
        holder is `not_observed`, never `unsupported`.
        """
        return inspect(self.states.get(agent), agent, now, self.is_live(agent), False)

    def inspect_all(self, now: float) -> dict[str, LimitsState]:
        return {agent: self.inspect(agent, now) for agent in self.agents}


def parse_document(data: bytes, where: str, rewrite: str
                   ) -> tuple[dict[str, Any], FileStatus, list[str]]:
    """The raw `agents` object of the file's bytes (within its bound), how the file was,
    and a warning (naming `where`, saying `rewrite`) when it was not usable."""
    if not data.strip():
        return {}, "empty", [f"{where} is empty; {rewrite}"]
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {}, "corrupt", [f"{where} is truncated or corrupt ({reason}); {rewrite}"]
    if not isinstance(document, dict) or "version" not in document:
        return {}, "corrupt", [f"{where} is not a louise limits cache; {rewrite}"]
    version = document["version"]
    if type(version) is not int or version != CACHE_VERSION:
        return {}, "unsupported_version", [
            f"{where} has version {version!r} but this louise reads version "
            f"{CACHE_VERSION}; {rewrite}"
        ]
    agents = document.get("agents")
    if not isinstance(agents, dict):
        return {}, "corrupt", [f"{where} has no agents object; {rewrite}"]
    return agents, "ok", []


def view_of(path: str, agents: dict[str, Any], status: FileStatus,
            warnings: list[str]) -> CacheView:
    """What the file holds, entry by entry: a malformed entry is dropped with a warning."""
    entries = list(agents.items())
    if len(entries) > MAX_AGENTS:
        warnings.append(
            f"limits cache {path} holds {len(entries):,} Agents, over its bound of "
            f"{MAX_AGENTS}: reading the first {MAX_AGENTS}; the next update cuts it")
        entries = entries[:MAX_AGENTS]
    states: dict[str, LimitsState] = {}
    holders: dict[str, tuple[Holder, ...]] = {}
    spent: dict[str, tuple[Spent, ...]] = {}
    for name, entry in entries:
        try:
            if not isinstance(entry, dict):
                raise ValueError("the entry is not an object")
            raw_state = entry.get("state")
            state = None if raw_state is None else state_from_json(raw_state)
            if state is not None and state.agent != name:
                raise ValueError(f"its state belongs to {state.agent!r}")
            entry_holders = parse_holders(entry.get("holders"))
        except (ValueError, TypeError, ArithmeticError) as exc:
            warnings.append(
                f"limits cache {path}: ignoring the malformed entry for {name!r:.80} "
                f"({exc}); the next update of the cache drops it"
            )
            continue
        if state is not None:
            states[name] = state
        if entry_holders:
            holders[name] = entry_holders
        raw_spent = entry.get("spent")
        if isinstance(raw_spent, list):  # else no records (`parse_spent` reads none)
            from louise.storage.limits_shared import parse_spent

            entry_spent = parse_spent(raw_spent)
            if entry_spent:
                spent[name] = tuple(entry_spent)
    return CacheView(path, states, holders, tuple(warnings), status, spent)


# --------------------------------------------------------------------------- writing


def canonical(agents: dict[str, Any]) -> list[str]:
    """Every entry as this louise writes it (in place): `{"state", "holders"}`, the
    state within its bounds; malformed parts dropped. Returns what was cut."""
    cuts: list[str] = []
    for name in list(agents):
        entry = agents.pop(name)
        if len(name) > MAX_TEXT or not isinstance(entry, dict):
            cuts.append(f"the malformed entry {name[:40]!r}")
            continue
        try:
            holders = [holder_to_json(h) for h in parse_holders(entry.get("holders"))]
        except ValueError:
            holders = []
        raw = entry.get("state")
        state = None
        if raw is not None:
            try:
                parsed = state_from_json(raw)
                if parsed.agent != name:
                    raise ValueError("it belongs to another Agent")
            except (ValueError, TypeError, ArithmeticError):
                cuts.append(f"the malformed state of {name[:40]!r}")
            else:
                bounded = bounded_state(parsed)
                if bounded is not parsed:
                    cuts.append(f"the state of {name[:40]!r} (buckets, windows, text)")
                state = state_to_json(bounded)
        kept: dict[str, Any] = {"state": state, "holders": holders}
        from louise.storage.limits_shared import (
            lease_to_json,
            parse_lease,
            parse_spent,
            spent_to_json,
        )

        lease = parse_lease(entry.get("resume"))
        if lease is not None:
            kept["resume"] = lease_to_json(lease)
        spent = parse_spent(entry.get("spent"))
        if spent:
            kept["spent"] = spent_to_json(spent)
        agents[name] = kept
    return cuts

def prune(agents: dict[str, Any]) -> None:
    """Holders of processes gone, and entries left with neither state nor holder."""
    live: dict[Holder, bool] = {}
    for name in list(agents):
        entry = agents[name]
        kept = []
        for holder in parse_holders(entry["holders"]):
            if holder not in live:
                live[holder] = holder_is_live(holder)
            if live[holder]:
                kept.append(holder_to_json(holder))
        entry["holders"] = kept
        if entry["state"] is None and not kept and "resume" not in entry \
                and "spent" not in entry:
            del agents[name]


def agent_entry(agents: dict[str, Any], agent: str) -> dict[str, Any]:
    """The Agent's entry in `agents`, made when missing."""
    entry = agents.get(agent)
    if not isinstance(entry, dict):
        entry = agents[agent] = {"state": None, "holders": []}
    return entry
