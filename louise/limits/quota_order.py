"""Which of an agent's ACP quota snapshots to keep (`Freshness`): what every Agent's
record holds from the start, apart from the RFD's parsing (`quota.py`), which is imported
when an agent first sends a quota. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from louise.limits.quota import QuotaSnapshot


class Freshness:
    """Which snapshots to keep, per scope, by the agent's `updatedAt` (never louise's
    clock): within one agent process, a snapshot older than the newest kept for its
    scope is ignored; the first one of each scope is always kept (a new connection may
    follow a clock step). Scopes: a session id, or None for a `quota/read` without one.
    Bounded: the scopes seen least recently are forgotten first."""

    MAX_SCOPES: Final = 256

    def __init__(self) -> None:
        self._newest: dict[str | None, int] = {}

    def accept(self, scope: str | None, snapshot: QuotaSnapshot) -> bool:
        """True (and remembered) when `snapshot` is not older than the scope's newest."""
        newest = self._newest.pop(scope, None)
        micros = snapshot.updated_at.micros
        if newest is not None and micros < newest:
            self._newest[scope] = newest
            return False
        self._newest[scope] = micros
        while len(self._newest) > self.MAX_SCOPES:
            del self._newest[next(iter(self._newest))]
        return True

    def has_session_scope(self) -> bool:
        """Whether a session's snapshot was kept (a sessionless read then never replaces
        it: the RFD keeps the two apart)."""
        return any(scope is not None for scope in self._newest)

    def forget(self, scope: str | None) -> None:
        self._newest.pop(scope, None)
