"""The proxy's ACP quota RFD side, sans I/O: for a client that advertises `session.quota`,
an agent that does not speak the RFD gets it from the proxy.

- `initialize`: the client's `clientCapabilities.session.quota` is noted; the agent's
  result gains `agentCapabilities.quota: {}` when the client takes quota updates and the
  agent does not advertise `quota` itself (then the proxy stays out of the RFD's way);
- `quota/read` (with a session or without) is answered by the proxy: the snapshot it
  translated, or `{"pools": []}` before any (the RFD's "no quota data for this account":
  a client shows what it shows for an agent without quota, never a failure);
- every change of the translated state is pushed as a `quota_update` on every session the
  proxy has seen (quota is account-wide), never twice the same on one session; a new
  session gets the current snapshot right after its `session/new` answer;
- a prompt the agent refused for quota (claude's `rate_limit`, a 429, vibe's -31001)
  reaches the client as `quotaExceeded` (-32003, `poolId`, `resetsAt` when known, the
  agent's own `data` kept), after the `quota_update` showing the pool `exhausted`.

`updatedAt` is the time the proxy obtained the figures (its clock), in milliseconds,
never decreasing, and moved on by a millisecond when different figures share one.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any, Final

from louise.limits import LimitsState
from louise.limits.governor import block_reset
from louise.limits.quota import (
    QUOTA_EXCEEDED_CODE,
    QUOTA_UPDATE,
    QuotaSnapshot,
    format_instant,
    quota_to_wire,
)
from louise.limits.quota_project import from_v1

MAX_SESSIONS: Final = 64
MAX_PROMPTS: Final = 1024
# A `sessionId` key and its value, when the value is a string without escapes.
_SESSION_ID: Final = re.compile(rb'"sessionId"[ \t\r\n]*:[ \t\r\n]*"([^"\\]*)"')
# A read up to this long (a message or a few: a paced stream's read) is searched with
# `find` alone, here and in `core`: a regular expression's engine is more code for a
# cache the wake that brought the read left cold. With the last session's spelling kept
# (`knows_sessions`), a paced message costs ~3.5 µs less (bench/RESULTS.md, "proxy, third
# round"). A burst's large reads keep `re`, which scans them faster for a rare first byte.
SMALL_READ: Final = 2048


def _bounded_put(table: OrderedDict[Any, Any], key: Any, value: Any, limit: int) -> None:
    table.pop(key, None)
    table[key] = value
    while len(table) > limit:
        table.popitem(last=False)


def _key(request_id: object) -> str | None:
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return None
    return f"{type(request_id).__name__}:{request_id}"


class QuotaBridge:
    """One connection's RFD bridge (see the module docstring)."""

    def __init__(self) -> None:
        self.client_quota = False  # the client advertised session.quota
        self.serving = False  # the proxy answers the RFD for the agent
        self._sessions: OrderedDict[str, dict[str, Any] | None] = OrderedDict()
        # The last `"sessionId":"…"` (key to closing quote) `knows_sessions` found known: a
        # stream's next message spells it alike. Forgotten when a session is noted (the
        # bound may drop the one it names).
        self._known_spelling = b""
        self._prompts: OrderedDict[str, str] = OrderedDict()  # request key -> session id
        self._opening: OrderedDict[str, None] = OrderedDict()  # session/new requests
        self._stamp_ms = 0
        self._stamped: list[Any] | None = None  # the pools the stamp was for
        self._started: float | None = None

    # ------------------------------------------------------------------ client → agent

    def client_initialize(self, params: object) -> None:
        caps = params.get("clientCapabilities") if isinstance(params, dict) else None
        session = caps.get("session") if isinstance(caps, dict) else None
        self.client_quota = isinstance(session, dict) and isinstance(session.get("quota"),
                                                                      dict)

    def client_request(self, method: str, request_id: object, params: object) -> None:
        """Note what later answers need: the session of a prompt, the sessions opened."""
        key = _key(request_id)
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if key is not None and method == "session/prompt" and isinstance(session_id, str):
            _bounded_put(self._prompts, key, session_id, MAX_PROMPTS)
        if method in ("session/load", "session/resume") and isinstance(session_id, str):
            self.note_session(session_id)
        if key is not None and method == "session/new":
            _bounded_put(self._opening, key, None, MAX_PROMPTS)

    def answers_read(self, method: str) -> bool:
        return self.serving and method == "quota/read"

    # ------------------------------------------------------------------ initialize

    def initialize_caps(self, caps: dict[str, Any], now: float) -> dict[str, Any] | None:
        """The agent capabilities to pass on (None: unchanged)."""
        self._started = now
        if not self.client_quota or isinstance(caps.get("quota"), dict):
            self.serving = False
            return None
        self.serving = True
        return {**caps, "quota": {}}

    # ------------------------------------------------------------------ snapshots

    def _stamp(self, pools: list[Any], at: float) -> str:
        millis = int(at * 1000)
        if millis < self._stamp_ms or (millis == self._stamp_ms and pools != self._stamped):
            millis = self._stamp_ms + (1 if pools != self._stamped else 0)
        self._stamp_ms, self._stamped = millis, pools
        return format_instant(millis / 1000)

    def snapshot(self, state: LimitsState | None, now: float) -> dict[str, Any]:
        """The RFD snapshot of the proxy's state (`pools: []` before any figures)."""
        quota: QuotaSnapshot | None = None
        if state is not None and state.snapshot is not None:
            quota = state.quota if state.quota is not None else from_v1(
                state.snapshot, state.updated_at or now)
        if quota is None:
            return {"updatedAt": self._stamp([], self._started or now), "pools": []}
        wire = quota_to_wire(quota)
        at = state.updated_at if state is not None and state.updated_at is not None else now
        wire["updatedAt"] = self._stamp(wire["pools"], at)
        return wire

    def read_answer(self, request_id: Any, state: LimitsState | None,
                    now: float) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "result": self.snapshot(state, now)}

    def note_session(self, session_id: str) -> None:
        if session_id not in self._sessions:
            self._known_spelling = b""
            _bounded_put(self._sessions, session_id, None, MAX_SESSIONS)

    def knows_sessions(self, lines: bytes) -> bool:
        """True when every `sessionId` key in these lines (spelled without escapes, the
        caller made sure) has a string value `note_session` already noted: noting any
        would change nothing."""
        count = lines.count(b'"sessionId"')
        if not count:
            return True
        if count == 1 and len(lines) <= SMALL_READ:
            # One message (a paced stream's read): the key is the one found before, or its
            # value is found without `re` (see `SMALL_READ`), when the key is spelled as
            # JSON encoders do.
            known = self._known_spelling
            if known and lines.find(known) >= 0:
                return True
            key = lines.find(b'"sessionId"')
            start = key + 11
            if lines.startswith(b':"', start):
                start += 2
            elif lines.startswith(b': "', start):
                start += 3
            else:
                start = 0
            if start:
                end = lines.find(b'"', start)
                value = lines[start:end]
                if end < 0 or value.find(b"\\") >= 0:
                    return False  # a value that is not a plain string
                try:
                    if value.decode() not in self._sessions:
                        return False
                except UnicodeDecodeError:
                    return False
                self._known_spelling = lines[key:end + 1]
                return True
        found = _SESSION_ID.search(lines)
        if found is None:
            return False  # a value that is not a plain string
        # The common case: every key spelled as the first one found, with its value (one
        # message; or a stream's many, of one session). No `"` in a value: each such spelling
        # holds one key.
        if count == 1 or lines.count(found[0]) == count:
            try:
                return found[1].decode() in self._sessions
            except UnicodeDecodeError:
                return False
        values = _SESSION_ID.findall(lines)
        if len(values) != count:
            return False  # a value that is not a plain string
        sessions = self._sessions
        try:
            return all(value.decode() in sessions for value in set(values))
        except UnicodeDecodeError:
            return False

    def session_opened(self, request_id: object, result: object) -> str | None:
        """A `session/new` answer: the new session's id (to push to), else None."""
        key = _key(request_id)
        if key is None or key not in self._opening:
            return None
        del self._opening[key]
        session_id = result.get("sessionId") if isinstance(result, dict) else None
        if not isinstance(session_id, str):
            return None
        self.note_session(session_id)
        return session_id

    def pushes(self, state: LimitsState | None, now: float,
               sessions: list[str] | None = None) -> list[dict[str, Any]]:
        """`quota_update` notifications of the state, for the sessions that have not been
        sent these figures yet (all seen sessions by default)."""
        if not self.serving or state is None or state.snapshot is None:
            return []
        wire = self.snapshot(state, now)
        messages = []
        for session_id in sessions if sessions is not None else list(self._sessions):
            last = self._sessions.get(session_id)
            if last is not None and last.get("pools") == wire["pools"]:
                continue
            self._sessions[session_id] = wire
            messages.append({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": session_id,
                "update": {"sessionUpdate": QUOTA_UPDATE, **wire}}})
        return messages

    # ------------------------------------------------------------------ refusals

    def prompt_session(self, request_id: object) -> str | None:
        key = _key(request_id)
        return None if key is None else self._prompts.pop(key, None)

    def quota_exceeded(self, message: dict[str, Any], error: dict[str, Any],
                       state: LimitsState | None, bucket_id: str,
                       now: float) -> dict[str, Any]:
        """The agent's quota refusal as the RFD's `quotaExceeded` (its data kept)."""
        data = dict(error["data"]) if isinstance(error.get("data"), dict) else {}
        data["poolId"] = bucket_id
        resets = block_reset(state, now)
        if resets is not None:
            data["resetsAt"] = format_instant(resets)
        text = error.get("message")
        return {**message, "error": {
            "code": QUOTA_EXCEEDED_CODE,
            "message": text if isinstance(text, str) and text else "quota limit reached",
            "data": data}}
