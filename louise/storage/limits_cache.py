"""The cross-process account-limits cache: `limits.json` under the user state directory.

It lets any louise process (a second Neovim, `louise inspect`) show every Agent's last
observation without starting anything, and still apply the contract's stale rules: next
to each Agent's last `LimitsState` it keeps liveness records of the processes that hold a
live limits-capable Session for that Agent.

File (version 1; JSON, written atomically, see `louise.storage.durable`)::

    {"version": 1,
     "agents": {"codex": {"state": <louise.limits.state_to_json(state)> | null,
                          "holders": [{"pid": 4242, "start": "<start token>" | null}]}}}

API (all methods are synchronous and safe to call from several processes at once)::

    cache = LimitsCache(path=None)          # default: paths.state_dir() / "limits.json"
    cache.path -> Path
    cache.load() -> CacheView               # never raises for a bad file: see .warnings
    cache.record_state(agent, state) -> LimitsState   # what is now stored (see merge_states)
    cache.apply([(agent, live), …], {agent: state})   # holders, then states, in one write
    cache.add_holder(agent, holder=None) -> None      # default: this process
    cache.remove_holder(agent, holder=None) -> None
    cache.release_process(holder=None) -> None        # drop this process from every Agent
    cache.inspect(agent, now) -> LimitsState
    cache.inspect_all(now) -> dict[str, LimitsState]
    cache.update(change, keep) / LimitsCache.entry(agents, agent)   # the shared records
                                            # beside the states (louise.storage.limits_shared)

    view = cache.load()
    view.states, view.holders, view.warnings, view.file_status, view.agents, view.spent
    view.is_live(agent) -> bool
    view.inspect(agent, now) / view.inspect_all(now)  # louise.limits.inspect at read time

Holders are idempotent per (Agent, process): the session registry calls `add_holder` when
its first capable Session of an Agent becomes ready and `remove_holder` when its last one
goes away (it keeps the count itself), and `release_process` at shutdown. A process that
dies without cleaning up is harmless: its record no longer matches a live process.

Liveness (`limits_liveness.py`): a record is live when a process with that pid exists
*and* has the recorded start token, so a pid reused by an unrelated process does not
count. On Linux the token is the
boot id plus field 22 of /proc/<pid>/stat (start time in clock ticks since boot; zombies
count as dead). On other POSIX systems it is `ps -o lstart=` (start time to the second).
Where neither works the record has no token and only the pid's existence is checked
(documented weakness: a reused pid then counts as live). On Windows, without a way to check
safely from the standard library, no record counts as live: states show as stale, never
as falsely fresh.

Reads take no lock (the file is only ever replaced atomically); every write is a
read-modify-write under the sidecar lock `limits.json.lock`, so concurrent writers lose no
update. A missing, empty, truncated, corrupt, unknown-version or too large file reads as
empty with a one-line warning naming the file and what to do; the next write replaces it.
A malformed entry is dropped with its own warning; the rest of the file is kept. Writes
prune holder records of dead processes and entries left with neither a state nor a
holder, drop malformed entries, and keep the file within the bounds of
`limits_cache_bounds` (bytes, Agents, holders, buckets, string lengths), with a warning
saying what was cut. A write raises `OSError` when the file cannot be written and
`TimeoutError` when the lock is not obtained within `lock_timeout` seconds; reads never
raise for the file's content.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

from louise.limits import LimitsState, inspect, state_from_json, state_to_json
from louise.storage import paths
from louise.storage.durable import atomic_write_bytes, dump_json, locked
from louise.storage.limits_cache_bounds import (
    MAX_AGENTS,
    MAX_CACHE_BYTES,
    MAX_TEXT,
    bounded_state,
    fit,
)
from louise.storage.limits_liveness import (
    Holder,
    current_holder,
    holder_is_live,
    holder_to_json,
    parse_holders,
)
from louise.storage.limits_shared import lease_to_json, parse_lease, parse_spent, spent_to_json

if TYPE_CHECKING:
    import logging

    from louise.limits.governor import Spent

CACHE_VERSION: Final = 1
CACHE_FILE_NAME: Final = "limits.json"
DEFAULT_LOCK_TIMEOUT: Final = 30.0

FileStatus = Literal[
    "ok", "missing", "empty", "corrupt", "unreadable", "unsupported_version", "too_big"
]


def _log() -> logging.Logger:
    """This module's logger; `logging` is imported only by the writers that log (a reader,
    `louise inspect`, starts without it)."""
    import logging

    return logging.getLogger(__name__)


_T = TypeVar("_T")


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

    path: Path
    states: Mapping[str, LimitsState]
    holders: Mapping[str, tuple[Holder, ...]]
    warnings: tuple[str, ...]
    file_status: FileStatus
    # What each Agent's workspaces spent of its windows (`louise.storage.limits_shared`).
    spent: Mapping[str, tuple[Spent, ...]] = field(default_factory=dict)
    # Liveness per holder record, checked at most once per view (it reads /proc or runs ps).
    _live: dict[Holder, bool] = field(default_factory=dict, repr=False, compare=False)

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


# --------------------------------------------------------------------------- the cache


class LimitsCache:
    """The limits cache file; see the module docstring for the API and its guarantees."""

    def __init__(
        self, path: Path | str | None = None, *, lock_timeout: float | None = DEFAULT_LOCK_TIMEOUT,
        read_only: bool = False,
    ) -> None:
        """`read_only` (for `louise inspect`): loading changes nothing on disk, not even
        the modes of louise's state directory."""
        self._path = Path(path) if path is not None else paths.state_dir() / CACHE_FILE_NAME
        self._lock_timeout = lock_timeout
        self._in_state_dir = path is None
        self._read_only = read_only
        # Warnings about the file that `load` returned (its caller shows them) or a write
        # logged: a write logs each one once.
        self._reported: set[str] = set()

    def _private_state_dir(self) -> None:
        """In louise's state directory, the first load or write of a process creates it
        private and makes what is there private (see `paths.private_state_dir`); this is
        how a starting registry fixes the modes an older louise left."""
        if self._in_state_dir and not self._read_only:
            try:
                paths.private_state_dir()
            except OSError as exc:
                _log().debug("cannot make the state directory private: %s", exc)

    @property
    def path(self) -> Path:
        return self._path

    # ----- reading

    def _read_agents(self) -> tuple[dict[str, Any], FileStatus, list[str]]:
        """The raw `agents` object, how the file was, and a warning when it was not usable."""
        where = f"limits cache {self._path}"
        rewrite = "treating it as empty; the next update rewrites it (or delete the file)"
        try:
            with self._path.open("rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                # Never parsed whole past the bound (nor read: it may grow meanwhile).
                data = b"" if size > MAX_CACHE_BYTES else handle.read(MAX_CACHE_BYTES + 1)
                size = max(size, len(data))
        except FileNotFoundError:
            return {}, "missing", [
                f"{where} does not exist yet: nothing has been recorded on this machine "
                "(it is created when a louise session observes an Agent's limits)"
            ]
        except OSError as exc:
            return {}, "unreadable", [
                f"{where} cannot be read ({exc.strerror or exc}); {rewrite}, "
                "or check its permissions"
            ]
        if size > MAX_CACHE_BYTES:
            return {}, "too_big", [
                f"{where} is {size:,} bytes, over its bound of {MAX_CACHE_BYTES:,} bytes, so "
                f"it was not read; {rewrite}"
            ]
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

    def load(self) -> CacheView:
        """Read the file; never raises for a bad or missing file (see `CacheView.warnings`)."""
        self._private_state_dir()
        agents, status, warnings = self._read_agents()
        entries = list(agents.items())
        if len(entries) > MAX_AGENTS:
            warnings.append(
                f"limits cache {self._path} holds {len(entries):,} Agents, over its bound of "
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
                    f"limits cache {self._path}: ignoring the malformed entry for {name!r:.80} "
                    f"({exc}); the next update of the cache drops it"
                )
                continue
            if state is not None:
                states[name] = state
            if entry_holders:
                holders[name] = entry_holders
            entry_spent = parse_spent(entry.get("spent"))
            if entry_spent:
                spent[name] = tuple(entry_spent)
        self._reported.update(warnings)
        return CacheView(self._path, states, holders, tuple(warnings), status, spent)

    def inspect(self, agent: str, now: float) -> LimitsState:
        return self.load().inspect(agent, now)

    def inspect_all(self, now: float) -> dict[str, LimitsState]:
        return self.load().inspect_all(now)

    # ----- writing

    def _update(self, change: Callable[[dict[str, Any]], _T],
                keep: Collection[str] = ()) -> _T:
        """Read-modify-write under the lock: malformed entries dropped, dead holders and
        empty entries pruned, the file kept within its bounds (`keep`, the Agents written,
        dropped last)."""
        self._private_state_dir()
        with locked(self._path, timeout=self._lock_timeout):
            agents, status, warnings = self._read_agents()
            if status not in ("ok", "missing"):
                for warning in warnings:
                    if warning not in self._reported:
                        self._reported.add(warning)
                        _log().warning("%s", warning)
            result = change(agents)
            cuts = self._canonical(agents)
            # Past the count bound, cut before checking liveness (it reads /proc per pid).
            dropped = fit(agents, keep, budget=None)
            self._prune(agents)
            envelope = len(dump_json({"version": CACHE_VERSION, "agents": {}}))
            dropped += fit(agents, keep, budget=MAX_CACHE_BYTES - envelope)
            data = dump_json({"version": CACHE_VERSION, "agents": agents})
            if len(data) > MAX_CACHE_BYTES:  # `fit` over-estimates sizes: cannot happen
                dropped += list(agents)
                data = dump_json({"version": CACHE_VERSION, "agents": {}})
            atomic_write_bytes(self._path, data)
        if dropped:
            cuts.append(f"dropped {len(dropped)} Agent(s), least recently updated first "
                        f"({', '.join(repr(name[:40]) for name in dropped[:3])}"
                        f"{', …' if len(dropped) > 3 else ''})")
        if cuts:
            _log().warning("limits cache %s: cut to its bounds (%d Agents, %s bytes): %s",
                           self._path, MAX_AGENTS, f"{MAX_CACHE_BYTES:,}", "; ".join(cuts))
        return result

    @staticmethod
    def _canonical(agents: dict[str, Any]) -> list[str]:
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
            lease = parse_lease(entry.get("resume"))
            if lease is not None:
                kept["resume"] = lease_to_json(lease)
            spent = parse_spent(entry.get("spent"))
            if spent:
                kept["spent"] = spent_to_json(spent)
            agents[name] = kept
        return cuts

    @staticmethod
    def _prune(agents: dict[str, Any]) -> None:
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

    @staticmethod
    def _entry(agents: dict[str, Any], agent: str) -> dict[str, Any]:
        entry = agents.get(agent)
        if not isinstance(entry, dict):
            entry = agents[agent] = {"state": None, "holders": []}
        return entry

    def record_state(self, agent: str, state: LimitsState) -> LimitsState:
        """Store `state` for `agent` following `merge_states`, within the bounds; returns
        what is now stored.

        `not_observed` and `unsupported` are never stored (they describe the absence of an
        observation, which the cache expresses by having no state).
        """
        return self.apply((), {agent: state})[agent]

    def apply(self, holders: Sequence[tuple[str, bool]],
              states: Mapping[str, LimitsState]) -> dict[str, LimitsState]:
        """In one write: this process added as a holder of each Agent paired with True
        (`add_holder`) or removed (False), in order, then each state recorded
        (`record_state`). Returns what is now stored for each Agent of `states`."""
        for agent, state in states.items():
            if state.agent != agent:
                raise ValueError(f"state of {state.agent!r} recorded for {agent!r}")
            if state.status in ("not_observed", "unsupported"):
                raise ValueError(f"a {state.status} state is not recorded")
        me = current_holder()

        def change(agents: dict[str, Any]) -> dict[str, LimitsState]:
            for agent, live in holders:
                if live:
                    self._add(agents, agent, me)
                else:
                    self._remove(agents, agent, me)
            return {agent: self._record(agents, agent, state) for agent, state in states.items()}

        return self._update(change, keep={agent for agent, _ in holders} | set(states))

    def _record(self, agents: dict[str, Any], agent: str, state: LimitsState) -> LimitsState:
        entry = self._entry(agents, agent)
        current: LimitsState | None = None
        raw = entry.get("state")
        if raw is not None:
            try:
                current = state_from_json(raw)
            except (ValueError, TypeError, ArithmeticError) as exc:
                _log().warning("limits cache %s: replacing a malformed state of %r (%s)",
                               self._path, agent, exc)
            if current is not None and current.agent != agent:
                current = None
        merged = merge_states(current, state)
        entry["state"] = state_to_json(merged)  # bounded by `_canonical`, which says so
        return bounded_state(merged)

    def _add(self, agents: dict[str, Any], agent: str, holder: Holder) -> None:
        entry = self._entry(agents, agent)
        holders = entry.get("holders")
        kept = [item for item in (holders if isinstance(holders, list) else [])
                if not (isinstance(item, dict) and item.get("pid") == holder.pid)]
        kept.append(holder_to_json(holder))
        entry["holders"] = kept

    @staticmethod
    def _remove(agents: dict[str, Any], agent: str, holder: Holder) -> None:
        entry = agents.get(agent)
        if isinstance(entry, dict) and isinstance(entry.get("holders"), list):
            record = holder_to_json(holder)
            entry["holders"] = [item for item in entry["holders"] if item != record]

    def add_holder(self, agent: str, holder: Holder | None = None) -> None:
        """Record that `holder` (default: this process) holds a live capable Session."""
        record = holder if holder is not None else current_holder()
        self._update(lambda agents: self._add(agents, agent, record), keep={agent})

    def remove_holder(self, agent: str, holder: Holder | None = None) -> None:
        """Forget `holder` (default: this process) for `agent`."""
        record = holder if holder is not None else current_holder()
        self._update(lambda agents: self._remove(agents, agent, record))

    def update(self, change: Callable[[dict[str, Any]], _T],
               keep: Collection[str] = ()) -> _T:
        """One read-modify-write of the Agents' entries under the lock (for the records
        of `louise.storage.limits_shared`, kept beside the states), within the bounds."""
        return self._update(change, keep)

    @staticmethod
    def entry(agents: dict[str, Any], agent: str) -> dict[str, Any]:
        """The Agent's entry in `update`'s `agents`, made when missing."""
        return LimitsCache._entry(agents, agent)

    def release_process(self, holder: Holder | None = None) -> None:
        """Forget `holder` (default: this process) for every Agent (e.g. at shutdown)."""
        record = holder if holder is not None else current_holder()

        def change(agents: dict[str, Any]) -> None:
            for agent in list(agents):
                self._remove(agents, agent, record)

        self._update(change)
