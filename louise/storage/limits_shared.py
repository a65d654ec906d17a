"""What louise processes share about an account beside its limits state, in the limits
cache (`limits_cache.py`, under its lock): the resume lease of parked turns, and what each
workspace's turns spent of each window cycle (for budgets). The records and decisions
are pure; the three steps at the end run them in one locked write of the cache (a
`SharedRecords`: `LimitsCache` is one).

Resume lease (`agents.<agent>.resume`): when the limit that refused turns resets, every
parked turn of the account, in every louise process, would be sent again at once. The
first to claim the reset sends its turn first (a probe); the others wait until it is
settled: accepted by the agent (then they go) or refused again (then they stay parked
until the new reset). A probe whose process died, or that nobody settled within
`PROBE_TIMEOUT` seconds, is taken over; one still out when its process leaves is
dropped then (`left_behind`).

    {"resetsAt": 1791300000, "holder": {"pid": 4242, "start": "…", "session": "claude:s1"},
     "claimedAt": 1791300001.5, "outcome": "pending" | "resumed" | "refused",
     "next": 1791318000 | null}

Spending (`agents.<agent>.spent`): a list of `{"workspace", "bucket", "minutes",
"resetsAt", "percent", "turns"}`, at most `MAX_SPENT` (the oldest cycles dropped), cycles
whose reset passed pruned.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from louise.limits.governor import Spent

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from typing import Any, Final, Literal, Protocol, TypeVar

    T = TypeVar("T")
    Outcome = Literal["pending", "resumed", "refused"]
    Decision = Literal["probe", "go", "wait", "park"]

PROBE_TIMEOUT: Final = 120.0
MAX_SPENT: Final = 64
MAX_TEXT: Final = 200


@dataclass(frozen=True, slots=True)
class Lease:
    """The resume lease of an account's parked turns after a reset: who probes first."""

    resets_at: int
    pid: int
    start: str | None
    session: str
    claimed_at: float
    outcome: Outcome = "pending"
    next_reset: int | None = None


def _int(value: object) -> int | None:
    return value if type(value) is int and value > 0 else None


def parse_lease(value: object) -> Lease | None:
    """A lease record, or None for anything malformed."""
    if not isinstance(value, dict):
        return None
    holder = value.get("holder")
    resets = _int(value.get("resetsAt"))
    if not isinstance(holder, dict) or resets is None:
        return None
    pid, start, session = _int(holder.get("pid")), holder.get("start"), holder.get("session")
    claimed = value.get("claimedAt")
    outcome = value.get("outcome")
    if pid is None or not (start is None or isinstance(start, str)) \
            or not isinstance(session, str) or len(session) > MAX_TEXT \
            or type(claimed) not in (int, float) or outcome not in ("pending", "resumed",
                                                                     "refused"):
        return None
    next_reset = value.get("next")
    return Lease(resets, pid, start, session, float(claimed), outcome,  # type: ignore[arg-type]
                 _int(next_reset))


def lease_to_json(lease: Lease) -> dict[str, Any]:
    return {"resetsAt": lease.resets_at,
            "holder": {"pid": lease.pid, "start": lease.start, "session": lease.session},
            "claimedAt": lease.claimed_at, "outcome": lease.outcome, "next": lease.next_reset}


def decide(lease: Lease | None, resets_at: int, me: tuple[int, str | None, str], now: float,
           alive: Callable[[int, str | None], bool]) -> tuple[Decision, Lease | None, int | None]:
    """What a turn parked until `resets_at` does now that it is due: `probe` (send first;
    the returned lease is to be written), `go` (the probe was accepted: send), `wait` (a
    probe is out), or `park` (the probe was refused: park until the returned time, None
    when the agent gave none). `me`: (pid, start token, session key)."""
    pid, start, session = me

    def claim(cycle: int) -> tuple[Decision, Lease, None]:
        return "probe", Lease(cycle, pid, start, session, now), None

    if lease is None or lease.resets_at < resets_at:
        return claim(resets_at)
    if lease.outcome == "resumed":
        return "go", None, None
    if lease.outcome == "refused":
        if lease.next_reset is not None and lease.next_reset <= now:
            return claim(max(resets_at, lease.next_reset))  # the next cycle is due too
        return "park", None, lease.next_reset
    # A probe is out.
    if (lease.pid, lease.start, lease.session) == me:
        return "probe", None, None  # ours (asked again): send it
    if now - lease.claimed_at > PROBE_TIMEOUT or not alive(lease.pid, lease.start):
        return claim(lease.resets_at)
    return "wait", None, None


def left_behind(lease: Lease | None, pid: int, start: str | None) -> bool:
    """Whether `lease` is a probe still out of the process (`pid`, `start`), which is
    leaving: dropped, a turn parked in another process claims the reset at once, as when
    a process dies, instead of waiting `PROBE_TIMEOUT` for an outcome nobody will write
    (the one pending at exit may have been abandoned with the lock busy)."""
    return lease is not None and lease.outcome == "pending" \
        and (lease.pid, lease.start) == (pid, start)


def settle(lease: Lease | None, me: tuple[int, str | None, str], accepted: bool,
           next_reset: int | None) -> Lease | None:
    """The probe's outcome written on its lease; None when the lease is not ours (any
    more): nothing to write."""
    if lease is None or (lease.pid, lease.start, lease.session) != me \
            or lease.outcome != "pending":
        return None
    return Lease(lease.resets_at, lease.pid, lease.start, lease.session, lease.claimed_at,
                 "resumed" if accepted else "refused", None if accepted else next_reset)


# --------------------------------------------------------------------------- spending


def parse_spent(value: object) -> list[Spent]:
    """The spending records of an Agent (malformed ones left out)."""
    if not isinstance(value, list):
        return []
    found: list[Spent] = []
    for item in value[:MAX_SPENT]:
        if not isinstance(item, dict):
            continue
        workspace, bucket = item.get("workspace"), item.get("bucket")
        minutes, resets, turns = (_int(item.get(key)) for key in ("minutes", "resetsAt",
                                                                    "turns"))
        percent = item.get("percent")
        if not (isinstance(workspace, str) and 0 < len(workspace) <= 4096
                and isinstance(bucket, str) and 0 < len(bucket) <= MAX_TEXT
                and minutes is not None and resets is not None and turns is not None
                and isinstance(percent, (int, float)) and not isinstance(percent, bool)
                and 0 <= percent <= 10_000):
            continue
        found.append(Spent(workspace, (bucket, minutes, resets), float(percent), turns))
    return found


def spent_to_json(items: Sequence[Spent]) -> list[dict[str, Any]]:
    return [{"workspace": item.workspace, "bucket": item.window[0], "minutes": item.window[1],
             "resetsAt": item.window[2], "percent": round(item.percent, 3),
             "turns": item.turns} for item in items]


def add_spent(items: Sequence[Spent], workspace: str,
              costs: Sequence[tuple[tuple[str, int, int], float]], now: float) -> list[Spent]:
    """`items` with one turn of `workspace` added (its cost per window cycle), cycles
    whose reset passed dropped, at most `MAX_SPENT` kept (the newest cycles)."""
    kept = {(item.workspace, item.window): item for item in items if item.window[2] > now}
    for window, percent in costs:
        if window[2] <= now:
            continue
        old = kept.get((workspace, window))
        kept[(workspace, window)] = Spent(
            workspace, window, (old.percent if old else 0.0) + max(0.0, percent),
            (old.turns if old else 0) + 1)
    ordered = sorted(kept.values(), key=lambda item: item.window[2], reverse=True)
    return ordered[:MAX_SPENT]


# --------------------------------------------------------------------------- in the cache


if TYPE_CHECKING:  # a type only (typing's Protocol is not imported at run time)
    class SharedRecords(Protocol):
        """Where the records are kept: one locked read-modify-write of every Agent's entry."""

        def update(self, change: Callable[[dict[str, Any]], T], keep: Collection[str] = ()) -> T:
            ...

        def entry(self, agents: dict[str, Any], agent: str) -> dict[str, Any]:
            """The Agent's entry in `update`'s `agents`, made when missing."""
            ...


def claim_resume(cache: SharedRecords, agent: str, resets_at: int, session: str, now: float
                 ) -> tuple[Decision, int | None, int | None]:
    """For a turn of `session` (this process) parked until `resets_at`, now due: the
    decision (`decide`), the cycle claimed (for `settle_resume`) and, for `park`, until
    when. One write under the cache's lock."""
    from louise.storage.limits_liveness import Holder, current_holder, holder_is_live

    me = current_holder()
    key = (me.pid, me.start, session)

    def alive(pid: int, start: str | None) -> bool:
        return holder_is_live(Holder(pid, start))

    def change(agents: dict[str, Any]) -> tuple[Decision, int | None, int | None]:
        entry = cache.entry(agents, agent)
        lease = parse_lease(entry.get("resume"))
        decision, claimed, until = decide(lease, resets_at, key, now, alive)
        if claimed is not None:
            entry["resume"] = lease_to_json(claimed)
            return decision, claimed.resets_at, until
        return decision, lease.resets_at if lease is not None else None, until

    return cache.update(change, keep={agent})


def settle_resume(cache: SharedRecords, agent: str, session: str, accepted: bool,
                  next_reset: int | None) -> None:
    """The probe of `session` was accepted by the agent, or refused again (until
    `next_reset`, when known)."""
    from louise.storage.limits_liveness import current_holder

    me = current_holder()

    def change(agents: dict[str, Any]) -> None:
        entry = cache.entry(agents, agent)
        settled = settle(parse_lease(entry.get("resume")), (me.pid, me.start, session),
                         accepted, next_reset)
        if settled is not None:
            entry["resume"] = lease_to_json(settled)

    cache.update(change, keep={agent})


def record_spent(cache: SharedRecords, agent: str, workspace: str,
                 costs: Sequence[tuple[tuple[str, int, int], float]], now: float) -> None:
    """One turn of `workspace` spent `costs` (per window cycle, in points)."""
    def change(agents: dict[str, Any]) -> None:
        entry = cache.entry(agents, agent)
        entry["spent"] = spent_to_json(add_spent(parse_spent(entry.get("spent")), workspace,
                                                 costs, now))

    cache.update(change, keep={agent})
