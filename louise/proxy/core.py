"""The ACP proxy's logic, sans I/O: a line from one side in, the lines for each side out.

Everything is forwarded byte for byte, except:

- the agent's `initialize` result gains the account-limits v1 capability under
  `agentCapabilities._meta["io.github.euri10.louiselm"].accountLimits` — unless the agent
  already advertises a valid one, in which case the proxy stays fully transparent (the v1
  extension wins over translation);
- the client's read request on that capability's `readMethod` is answered by the proxy
  with the last translated snapshot (or a JSON-RPC error while there is none: v1 forbids
  substituting an empty snapshot);
- after forwarding an agent message that changes the translated snapshot (a `usage_update`
  with rate-limit `_meta`, a codex rate-limit push, a prompt refused for a rate limit), the
  proxy sends the client the advertised `updatedMethod` notification with the complete
  snapshot.

For a client that advertises `session.quota`, the same translations reach it as the ACP
quota RFD (`quota_bridge.py`): the `quota` capability, `quota/read` answers,
`quota_update` pushes and `quotaExceeded` errors. An agent that speaks the RFD itself
passes through untouched, and its `quota_update`s feed the v1 extension for v1 clients.

The proxy never originates a request, so it needs no id mapping: ids, ordering and
`$/cancel_request` pass through untouched.

Nothing either side sends stops it: a line it cannot read (not JSON, nested deeper than
the parser goes) is forwarded unread, and every field it reads is type-checked. A line
the driver drops as too long (`dropped_from_client` / `dropped_from_agent`, from the head
the framing keeps) is answered when it was a request, to the side that sent it, and
becomes an error answer when it was an answer someone waits for, so no side waits for
ever.

Most lines need none of that: `passes_from_agent` / `passes_from_client` tell, from a
few byte searches over a whole read's lines, that the core would pass every one of them
on untouched and learn nothing, so the driver forwards the read without decoding it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Final

from louise.limits import LimitsState, accepted_quota, negotiate, snapshot_to_wire
from louise.limits import sources as limit_sources
from louise.limits.capability import NAMESPACE
from louise.limits.quota import QUOTA_UPDATE, QuotaError, parse_quota_snapshot
from louise.limits.quota_order import Freshness
from louise.proxy.heads import Head, read_head
from louise.proxy.quota_bridge import SMALL_READ, QuotaBridge

log = logging.getLogger("louise.proxy")

READ_METHOD: Final = f"_{NAMESPACE}/account_limits/read"
UPDATED_METHOD: Final = f"_{NAMESPACE}/account_limits/updated"
NOT_OBSERVED_CODE: Final = -32603
NOT_OBSERVED_MESSAGE: Final = (
    "account limits not observed yet: they arrive with the agent's rate-limit data, "
    "usually after a prompt"
)
MAX_TRACKED_REQUESTS: Final = 1024
MAX_IGNORED_LOGS: Final = 20  # an agent repeating unusable rate-limit data cannot fill a log
# A dropped request: the request was not valid to pass on (JSON-RPC's "Invalid Request").
TOO_LONG_REQUEST_CODE: Final = -32600
# A dropped answer: the request failed on the way back (JSON-RPC's "Internal error").
TOO_LONG_ANSWER_CODE: Final = -32603

# A line the core acts on has one of these in its bytes, written as they are here: in UTF-8
# keys and method names can only be spelled otherwise with a `\u` escape (the other escapes
# stand for no letter; `\/` only for a slash), and JSON in UTF-16 or -32 (which `json.loads`
# reads too) has NUL bytes. Without `"id"` a line is neither a request nor an answer; the
# rest name the notifications the limits come from.
_AGENT_MARKS: Final = (b"\\u", b"\x00", b'"id"', b"usage_update", b"quota_update", b"_auth",
                       b"rate_limits_update")
_CLIENT_MARKS: Final = (b"\\u", b"\x00", b'"id"')  # a client line the core acts on: a request
# How they are searched, quickest first over a read of many lines: `bytes.find` keys its
# scan on a mark's last byte (here common ones: `u`, `e`, `"`), `re` on a literal first byte
# (`\\`, `_`: rarer). The limits' names share `_update` / `_auth`, so one scan clears all four
# unless one of those is there.
_ESCAPE: Final = re.compile(rb"\\u")
_LIMITS_HINT: Final = re.compile(rb"_(?:auth|update)")
_LIMITS_MARKS: Final = _AGENT_MARKS[3:]


def found_any(data: bytes, marks: tuple[bytes, ...]) -> bool:
    """Whether any of `marks` occurs in `data`. Not `mark in data`: for bytes, `in` first
    tries the mark as an integer and discards the TypeError it raises, several times the
    cost of the search itself on a message-sized line."""
    find = data.find
    for mark in marks:  # noqa: SIM110 -- a loop: any() would make a generator a call
        if find(mark) >= 0:
            return True
    return False

def may_carry_limits(lines: bytes) -> bool:
    """Whether any of these lines may be a notification an agent's own limits come from
    (False: none is; also the session host's test, `louise.serve.limits`)."""
    if len(lines) <= SMALL_READ:
        hinted = lines.find(b"_update") >= 0 or lines.find(b"_auth") >= 0
    else:
        hinted = _LIMITS_HINT.search(lines) is not None
    return hinted and found_any(lines, _LIMITS_MARKS)


def _requests_or_escapes(lines: bytes) -> bool:
    """Whether any of `_CLIENT_MARKS` is in `lines`."""
    return (lines.find(b"\x00") >= 0 or lines.find(b'"id"') >= 0
            or (lines.find(b"\\u") >= 0 if len(lines) <= SMALL_READ
                else _ESCAPE.search(lines) is not None))


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_dumps_ascii = json.JSONEncoder(separators=(",", ":")).encode


def encode(message: dict[str, Any]) -> bytes:
    """One line's JSON. Raises `RecursionError` for a structure nested deeper than the
    encoder goes (callers re-encode only what they decoded)."""
    try:
        return _dumps(message).encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (JSON lets a side send "\ud800"): escaped, it is valid JSON.
        return _dumps_ascii(message).encode("ascii")


@dataclass(slots=True)
class Routed:
    """What one input line produces: lines for the agent and lines for the client, in order."""

    to_agent: list[bytes] = field(default_factory=list)
    to_client: list[bytes] = field(default_factory=list)


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # not UTF-8 or JSON; nested past the parser
        return None
    return message if isinstance(message, dict) else None


def _answerable(request_id: object) -> bool:
    """An id the proxy may answer itself: an integer or a string (JSON-RPC's null names
    no request; anything else is passed on for the agent to refuse)."""
    return type(request_id) is int or type(request_id) is str


def _shown(head: Head) -> str:
    """A dropped message for a log line (its method quoted: the other side chose it)."""
    parts: list[str] = [head.kind if head.kind != "unknown" else "message"]
    if head.method is not None:
        parts.append(repr(head.method[:60]))
    if head.id is not None:
        parts.append(f"(id {head.id!r:.60})")
    return " ".join(parts)


class _BoundedIds:
    """Request ids the proxy must recognize in the answer, oldest forgotten first."""

    def __init__(self, limit: int = MAX_TRACKED_REQUESTS) -> None:
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._limit = limit

    @staticmethod
    def _key(request_id: object) -> str | None:
        if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
            return None
        return f"{type(request_id).__name__}:{request_id}"

    def add(self, request_id: object) -> None:
        key = self._key(request_id)
        if key is None:
            return
        self._ids[key] = None
        while len(self._ids) > self._limit:
            self._ids.popitem(last=False)

    def pop(self, request_id: object) -> bool:
        key = self._key(request_id)
        return key is not None and self._ids.pop(key, 0) is None


class ProxyCore:
    """One client ↔ agent connection. `now` (Unix seconds) is passed in."""

    def __init__(self, agent: str = "agent") -> None:
        self.agent = agent
        self.state: LimitsState | None = None
        self.plan: str | None = None
        # None until the agent answers initialize; then whether the proxy serves v1.
        self.serving: bool | None = None
        self._initialize_ids = _BoundedIds(16)
        self._prompt_ids = _BoundedIds()
        self._last_sent: dict[str, Any] | None = None
        self._ignored = 0
        self.bridge = QuotaBridge()
        self._agent_order = Freshness()  # an RFD agent's own snapshots, by its updatedAt

    # ------------------------------------------------------------------ fast paths

    def passes_from_client(self, lines: bytes) -> bool:
        """True when `from_client` would pass each of these lines to the agent untouched
        and change nothing (no line is a request). False is no verdict: route each line."""
        return not _requests_or_escapes(lines)

    def passes_from_agent(self, lines: bytes) -> bool:
        """True when `from_agent` would pass each of these lines to the client untouched
        and change nothing: no answer or request, no notification limits come from, and
        (where the core notes the sessions it sees) every `sessionId` one already noted.
        False is no verdict: route each line."""
        if _requests_or_escapes(lines) or may_carry_limits(lines):
            return False
        return not (self.serving or self.bridge.serving) or self.bridge.knows_sessions(lines)

    # ------------------------------------------------------------------ client → agent

    def from_client(self, line: bytes, now: float) -> Routed:
        message = _decode(line)
        if message is None:
            return Routed(to_agent=[line])
        method = message.get("method")
        if "id" in message and isinstance(method, str):
            params = message.get("params")
            self.bridge.client_request(method, message["id"], params)
            if method == "initialize":
                self._initialize_ids.add(message["id"])
                self.bridge.client_initialize(params)
            elif method == "session/prompt":
                self._prompt_ids.add(message["id"])
            elif method == READ_METHOD and self.serving and _answerable(message["id"]):
                return Routed(to_client=[self._read_answer(message["id"])])
            elif self.bridge.answers_read(method) and _answerable(message["id"]):
                return Routed(to_client=[encode(self.bridge.read_answer(
                    message["id"], self.state, now))])
        return Routed(to_agent=[line])

    def dropped_from_client(self, size: int, head: bytes, limit: int) -> Routed:
        """The driver dropped a client line of `size` bytes (over `limit`) whose first
        bytes are `head`: a request is answered to the client; an answer to an agent's
        request becomes an error answer to the agent."""
        found = read_head(head)
        routed = Routed()
        if found.kind == "request":
            routed.to_client.append(self._too_long_request(found, size, limit))
        elif found.kind == "response":
            routed.to_agent.append(self._too_long_answer(found, "client", size, limit))
        self._log_dropped("client", found, size, limit, answered=bool(
            routed.to_client or routed.to_agent))
        return routed

    def _read_answer(self, request_id: Any) -> bytes:
        if self.state is None or self.state.snapshot is None:
            error = {"code": NOT_OBSERVED_CODE, "message": NOT_OBSERVED_MESSAGE}
            return encode({"jsonrpc": "2.0", "id": request_id, "error": error})
        wire = snapshot_to_wire(self.state.snapshot)
        return encode({"jsonrpc": "2.0", "id": request_id, "result": wire})

    # ------------------------------------------------------------------ agent → client

    def dropped_from_agent(self, size: int, head: bytes, limit: int) -> Routed:
        """As `dropped_from_client`, the other way: an agent's request is answered to the
        agent; its answer to a client request becomes an error answer to the client."""
        found = read_head(head)
        routed = Routed()
        if found.kind == "request":
            routed.to_agent.append(self._too_long_request(found, size, limit))
        elif found.kind == "response":
            self._initialize_ids.pop(found.id)
            self._prompt_ids.pop(found.id)
            routed.to_client.append(self._too_long_answer(found, "agent", size, limit))
        self._log_dropped("agent", found, size, limit, answered=bool(
            routed.to_client or routed.to_agent))
        return routed

    @staticmethod
    def _too_long_request(head: Head, size: int, limit: int) -> bytes:
        error = {"code": TOO_LONG_REQUEST_CODE,
                 "message": f"louise proxy did not pass this request on: it is {size:,} "
                            f"bytes, over the proxy's limit of {limit:,} bytes a message",
                 "data": {"messageBytes": size, "maxMessageBytes": limit}}
        return encode({"jsonrpc": "2.0", "id": head.id, "error": error})

    @staticmethod
    def _too_long_answer(head: Head, sender: str, size: int, limit: int) -> bytes:
        error = {"code": TOO_LONG_ANSWER_CODE,
                 "message": f"louise proxy did not pass the {sender}'s answer on: it is "
                            f"{size:,} bytes, over the proxy's limit of {limit:,} bytes a "
                            "message",
                 "data": {"messageBytes": size, "maxMessageBytes": limit}}
        return encode({"jsonrpc": "2.0", "id": head.id, "error": error})

    @staticmethod
    def _log_dropped(side: str, head: Head, size: int, limit: int, *, answered: bool) -> None:
        other = "agent" if side == "client" else "client"
        if not answered:
            outcome = "no request id in its first bytes, so nothing to answer"
        elif head.kind == "request":
            outcome = f"answered the {side} with an error"
        else:
            outcome = f"the {other} gets an error answer instead"
        log.warning("%s: dropped a %s-byte %s over the limit of %s bytes a message; %s",
                    side, f"{size:,}", _shown(head), f"{limit:,}", outcome)

    def from_agent(self, line: bytes, now: float) -> Routed:
        message = _decode(line)
        if message is None:
            return Routed(to_client=[line])
        method = message.get("method")
        if method is None and "id" in message:
            return self._agent_response(message, line, now)
        if not isinstance(method, str) or "id" in message:
            return Routed(to_client=[line])
        params = message.get("params")
        update = params.get("update") if isinstance(params, dict) else None
        if isinstance(update, dict) and update.get("sessionUpdate") == QUOTA_UPDATE \
                and isinstance(params, dict):
            return self._agent_quota_update(params, update, line, now)
        if not self.serving and not self.bridge.serving:
            return Routed(to_client=[line])
        routed = Routed(to_client=[line])
        plan = limit_sources.plan_from_notification(method, params)
        if plan is not None:
            self.plan = plan
        observation: limit_sources.Observation | None = None
        if method == "session/update" and isinstance(params, dict):
            if isinstance(params.get("sessionId"), str):
                self.bridge.note_session(params["sessionId"])
            observation = limit_sources.from_session_update(update, self.state, now,
                                                            plan=self.plan)
        else:
            observation = limit_sources.from_notification(method, params, self.state, now)
        self._observe(observation, now, routed)
        return routed

    def _agent_quota_update(self, params: dict[str, Any], update: dict[str, Any],
                            line: bytes, now: float) -> Routed:
        """An agent speaking the RFD itself: passed on as it came; its figures (newest by
        its own `updatedAt`) feed the v1 extension for v1 clients."""
        routed = Routed(to_client=[line])
        session_id = params.get("sessionId")
        try:
            quota = parse_quota_snapshot(update)
        except QuotaError as exc:
            self._log_ignored("quota_update", str(exc))
            return routed
        if not self._agent_order.accept(session_id if isinstance(session_id, str) else None,
                                        quota):
            return routed
        self.state = accepted_quota(self.agent, quota, now, QUOTA_UPDATE)
        self._push_v1(routed)
        return routed

    def _agent_response(self, message: dict[str, Any], line: bytes, now: float) -> Routed:
        request_id = message.get("id")
        if self._initialize_ids.pop(request_id):
            return Routed(to_client=[self._initialize_result(message, line, now)])
        opened = self.bridge.session_opened(request_id, message.get("result"))
        if opened is not None:
            pushes = [encode(push) for push in self.bridge.pushes(self.state, now, [opened])]
            return Routed(to_client=[line, *pushes])
        session_id = self.bridge.prompt_session(request_id)
        if not self._prompt_ids.pop(request_id) or not (self.serving or self.bridge.serving):
            return Routed(to_client=[line])
        error = message.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        if not isinstance(error, dict) or not isinstance(code, int) or isinstance(code, bool):
            return Routed(to_client=[line])
        v1 = Routed()
        rejected = limit_sources.from_prompt_error(code, error.get("data"))
        self._observe(rejected, now, v1)
        routed = Routed()
        if rejected is not None and self.bridge.serving:
            if session_id is not None:  # the RFD: the meter's state pushed before the error
                routed.to_client.extend(encode(push) for push in self.bridge.pushes(
                    self.state, now, [session_id]))
            with contextlib.suppress(RecursionError):  # too deep to encode: as it came
                line = encode(self.bridge.quota_exceeded(message, error, self.state,
                                                         rejected.bucket_id, now))
        routed.to_client.append(line)
        routed.to_client.extend(v1.to_client)  # v1: the answer first, as it always was
        return routed

    def _initialize_result(self, message: dict[str, Any], line: bytes, now: float) -> bytes:
        result = message.get("result")
        if not isinstance(result, dict):
            return line  # an error, or garbage: not ours to fix
        caps = result.get("agentCapabilities")
        if caps is None:
            caps = {}
        if not isinstance(caps, dict):
            self.serving = False
            return line
        rfd_caps = self.bridge.initialize_caps(caps, now)
        if negotiate(caps) is not None:
            self.serving = False  # the agent speaks v1 itself: stay out of the way
            if rfd_caps is None:
                return line
            try:
                return encode({**message, "result": {**result,
                                                     "agentCapabilities": rfd_caps}})
            except RecursionError:
                self.bridge.serving = False
                return line
        caps = rfd_caps if rfd_caps is not None else caps
        meta = caps.get("_meta")
        meta = dict(meta) if isinstance(meta, dict) else {}
        namespace = meta.get(NAMESPACE)
        namespace = dict(namespace) if isinstance(namespace, dict) else {}
        namespace["accountLimits"] = {
            "version": 1,
            "readMethod": READ_METHOD,
            "updatedMethod": UPDATED_METHOD,
        }
        meta[NAMESPACE] = namespace
        capabilities = {**caps, "_meta": meta}
        try:
            rewritten = encode({**message, "result": {**result, "agentCapabilities": capabilities}})
        except RecursionError:  # nested past the encoder: passed on as it came, not served
            self.serving = False
            self.bridge.serving = False
            return line
        self.serving = True
        return rewritten

    def _observe(
        self, observation: limit_sources.Observation | None, now: float, routed: Routed
    ) -> None:
        if observation is None:
            return
        if isinstance(observation, limit_sources.Ignored):
            self._log_ignored(observation.source, observation.reason)
            return
        try:
            self.state = limit_sources.apply(self.state, self.agent, observation, now)
        except ValueError as exc:  # a translator's bug must not stop the proxy
            self._log_ignored(observation.source, str(exc))
            return
        self._push_v1(routed)
        if not isinstance(observation, limit_sources.Rejected):  # a refusal's comes later
            routed.to_client.extend(encode(push) for push in self.bridge.pushes(self.state,
                                                                                 now))

    def _push_v1(self, routed: Routed) -> None:
        """The v1 extension's `updated` notification when the figures changed."""
        if self.state is None or self.state.snapshot is None or not self.serving:
            return
        wire = snapshot_to_wire(self.state.snapshot)
        if wire == self._last_sent:
            return
        self._last_sent = wire
        routed.to_client.append(
            encode({"jsonrpc": "2.0", "method": UPDATED_METHOD, "params": wire})
        )

    def _log_ignored(self, source: str, reason: str) -> None:
        self._ignored += 1
        if self._ignored <= MAX_IGNORED_LOGS:
            log.warning("ignored %s: %s", source, reason[:300])
        if self._ignored == MAX_IGNORED_LOGS:
            log.warning("more unusable rate-limit data will not be logged")
