"""The cross-process account-limits cache: `limits.json` under the user state directory.

It lets any louise process (a second Neovim, `louise inspect`) show every Agent's last
observation without starting anything, and still apply the contract's stale rules: next
to each Agent's last `LimitsState` it keeps liveness records of the processes that hold a
live limits-capable Session for that Agent.

The file's format and its checks: `limits_cache_file.py`.

API (all methods are synchronous and safe to call from several processes at once)::

    cache = LimitsCache(path=None)          # default: paths.state_dir() / "limits.json"
    cache.path -> Path
    cache.load() -> CacheView               # never raises for a bad file: see .warnings
    cache.record_state(agent, state) -> LimitsState   # what is now stored (see merge_states)
    cache.apply([(agent, live), …], {agent: state})   # holders, then states, in one write
    cache.add_holder(agent, holder=None) -> None      # default: this process
    cache.remove_holder(agent, holder=None) -> None
    cache.release_process(holder=None) -> None        # drop this process from every Agent
    cache.abandon_waits() -> None           # at exit: writes waiting for the lock give up
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
`TimeoutError` when the lock is not obtained within `lock_timeout` seconds (or at once
after `abandon_waits()`, at exit); reads never raise for the file's content.
"""

from __future__ import annotations

import _thread
import os
from collections.abc import Callable, Collection, Mapping, Sequence

from louise.limits import LimitsState, state_from_json, state_to_json
from louise.storage import paths
from louise.storage.limits_cache_bounds import (
    MAX_AGENTS,
    MAX_CACHE_BYTES,
    bounded_state,
    fit,
)
from louise.storage.limits_cache_file import (
    CACHE_VERSION,
    CacheView,
    agent_entry,
    canonical,
    merge_states,
    parse_document,
    prune,
    view_of,
)
from louise.storage.limits_liveness import (
    Holder,
    current_holder,
    holder_to_json,
)

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    import logging
    import threading
    from pathlib import Path
    from typing import Any, Final, TypeVar

    from louise.storage.limits_cache_file import FileStatus

    _T = TypeVar("_T")

CACHE_FILE_NAME: Final = "limits.json"
DEFAULT_LOCK_TIMEOUT: Final = 30.0


def _log() -> logging.Logger:
    """This module's logger; `logging` is imported only by the writers that log (a reader,
    `louise inspect`, starts without it)."""
    import logging

    return logging.getLogger(__name__)




# --------------------------------------------------------------------------- the cache


class LimitsCache:
    """The limits cache file; see the module docstring for the API and its guarantees."""

    def __init__(
        self, path: Path | str | None = None, *, lock_timeout: float | None = DEFAULT_LOCK_TIMEOUT,
        read_only: bool = False,
    ) -> None:
        """`read_only` (for `louise inspect`): loading changes nothing on disk, not even
        the modes of louise's state directory."""
        # A string: pathlib stays off a reader's start (`louise inspect`); `path` makes one.
        self._path = paths.path_name(
            os.fspath(path) if path is not None
            else os.path.join(paths.state_dir_name(), CACHE_FILE_NAME))
        self._lock_timeout = lock_timeout
        self._in_state_dir = path is None
        self._read_only = read_only
        # Warnings about the file that `load` returned (its caller shows them) or a write
        # logged: a write logs each one once.
        self._reported: set[str] = set()
        # Made on first use, with threading (a reader, `louise inspect`, starts without it).
        self._give_up: threading.Event | None = None
        self._give_up_made = _thread.allocate_lock()

    def abandon_waits(self) -> None:
        """Every write waiting for the lock, now or later, stops waiting and raises
        `durable.LockAbandoned` (a `TimeoutError`): for a process on its way out, whose
        writes must not outlive its exit budget. A write that holds the lock completes
        (the file is replaced atomically either way: an abandoned write loses only its
        own update)."""
        self._give_up_event().set()

    def _give_up_event(self) -> threading.Event:
        with self._give_up_made:
            if self._give_up is None:
                import threading

                self._give_up = threading.Event()
            return self._give_up

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
        from pathlib import Path

        return Path(self._path)

    # ----- reading

    def _read_agents(self) -> tuple[dict[str, Any], FileStatus, list[str]]:
        """The raw `agents` object, how the file was, and a warning when it was not usable."""
        where = f"limits cache {self._path}"
        rewrite = "treating it as empty; the next update rewrites it (or delete the file)"
        try:
            with open(self._path, "rb") as handle:
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
        return parse_document(data, where, rewrite)

    def load(self) -> CacheView:
        """Read the file; never raises for a bad or missing file (see `CacheView.warnings`)."""
        self._private_state_dir()
        agents, status, warnings = self._read_agents()
        view = view_of(self._path, agents, status, warnings)
        self._reported.update(view.warnings)
        return view

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
        from louise.storage.durable import atomic_write_bytes, dump_json, locked

        with locked(self._path, timeout=self._lock_timeout, give_up=self._give_up_event()):
            agents, status, warnings = self._read_agents()
            if status not in ("ok", "missing"):
                for warning in warnings:
                    if warning not in self._reported:
                        self._reported.add(warning)
                        _log().warning("%s", warning)
            result = change(agents)
            cuts = canonical(agents)
            # Past the count bound, cut before checking liveness (it reads /proc per pid).
            dropped = fit(agents, keep, budget=None)
            prune(agents)
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
        entry = agent_entry(agents, agent)
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
        entry = agent_entry(agents, agent)
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
        return agent_entry(agents, agent)

    def release_process(self, holder: Holder | None = None) -> None:
        """Forget `holder` (default: this process) for every Agent (e.g. at shutdown),
        with a resume probe it still has out (`limits_shared.left_behind`)."""
        from louise.storage.limits_shared import left_behind, parse_lease

        record = holder if holder is not None else current_holder()

        def change(agents: dict[str, Any]) -> None:
            for agent in list(agents):
                self._remove(agents, agent, record)
                entry = agents[agent]
                if isinstance(entry, dict) and left_behind(
                        parse_lease(entry.get("resume")), record.pid, record.start):
                    del entry["resume"]

        self._update(change)
