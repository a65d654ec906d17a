"""The permission broker: every `session/request_permission` of every session goes through
here. One decision is presented at a time, queued by arrival; remembered "always" choices
and configured rules may answer without asking. Everything fails closed: a decider error,
a closed prompt, a cancelled turn, `$/cancel_request` or the agent exiting all answer
`cancelled`, never an allow.
"""

from __future__ import annotations

import itertools
import logging
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import anyio

from louise.config.sections import PermissionsConfig
from louise.permissions.rules import PermissionMemory, PermissionStoreError, RememberedRule

log = logging.getLogger("louise.permissions.broker")

CANCELLED: dict[str, Any] = {"outcome": {"outcome": "cancelled"}}
MAX_QUEUED = 256


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """What a person needs to decide: who asks, what it will touch, and the options."""

    request_id: int
    agent: str
    agent_key: str
    workspace: str
    session_id: str
    tool_call_id: str | None
    title: str
    kind: str | None
    paths: tuple[str, ...]
    command: str | None
    options: tuple[dict[str, Any], ...]
    diffs: tuple[dict[str, Any], ...]
    tool_call: Mapping[str, Any]
    # The session host sends a request asked while no front end was attached again to
    # the next one, with how long it has waited (`_meta.louise.waitedSeconds`).
    waited_seconds: float | None = None

    def option_ids(self) -> list[str]:
        return [str(o.get("optionId")) for o in self.options]

    def is_unique(self, option_id: str) -> bool:
        """Whether exactly one option has this id. An id the agent gave to several options
        does not say which one was meant, so it never selects by kind nor gets remembered."""
        return sum(1 for o in self.options if o.get("optionId") == option_id) == 1

    def has_duplicate_ids(self) -> bool:
        ids = self.option_ids()
        return len(set(ids)) != len(ids)

    def option_of_kind(self, *kinds: str) -> str | None:
        """The first option of the first kind offered, among options with a unique id."""
        for kind in kinds:
            for option in self.options:
                option_id = option.get("optionId")
                if option.get("kind") == kind and isinstance(option_id, str) \
                        and self.is_unique(option_id):
                    return option_id
        return None

    def kind_of(self, option_id: str) -> str | None:
        """The kind of the option with this id; None when no single option has it."""
        if not self.is_unique(option_id):
            return None
        for option in self.options:
            if option.get("optionId") == option_id:
                kind = option.get("kind")
                return kind if isinstance(kind, str) else None
        return None

    def refusal(self) -> str | None:
        """How to say no without remembering anything: the agent's `reject_once` option,
        or None (answered `cancelled`) when it offers none."""
        return self.option_of_kind("reject_once")

    def targets(self) -> list[str]:
        """What a remembered rule is scoped to: the command, or every path."""
        if self.kind == "execute":
            return [self.command] if self.command else []
        return list(self.paths)


@dataclass(frozen=True, slots=True)
class QueueView:
    """The broker's queue as a person sees it: `position` of `total` waiting."""

    position: int
    total: int


class PermissionDecider(Protocol):
    """Presents one request to a person (or a policy) and returns an optionId, or None to
    cancel. It may be cancelled at any time (the request was settled elsewhere)."""

    async def decide(self, request: PermissionRequest, queue: QueueView) -> str | None: ...


class RefuseAll:
    """The decider when nobody can be asked: refuses this once, never allows, never makes
    a refusal permanent."""

    async def decide(self, request: PermissionRequest, queue: QueueView) -> str | None:
        return request.refusal()


@dataclass(frozen=True, slots=True)
class AllowKinds:
    """Allows the listed tool kinds once (for `louise chat --allow KIND`), refuses others.
    Only an `allow_once` option allows: an "always" answer would be remembered."""

    kinds: frozenset[str]

    async def decide(self, request: PermissionRequest, queue: QueueView) -> str | None:
        if request.kind in self.kinds:
            allow = request.option_of_kind("allow_once")
            if allow is not None:
                return allow
        return request.refusal()


@dataclass(slots=True)
class _Ask:
    """A request waiting for the decider, and the scope that withdraws it."""

    request: PermissionRequest
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    presented: bool = False


class MalformedPermission(ValueError):
    """Permission request params louise cannot read; the message says what is wrong."""


def _list_of(value: Any, what: str) -> list[Any]:
    """A field that must be a list (absent or null: empty)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedPermission(f"{what} must be a list, not {type(value).__name__}")
    return value


def extract_request(request_id: int, agent: str, agent_key: str, workspace: str,
                    params: Mapping[str, Any], known_tool_call: Mapping[str, Any] | None,
                    *, session_key: str | None = None) -> PermissionRequest:
    """Build a PermissionRequest from raw params merged over the known tool call. Params
    of the wrong shape (`options` or the tool call's `content` or `locations` not a list,
    the tool call not an object) raise MalformedPermission: nothing is asked."""
    raw_call = params.get("toolCall")
    if raw_call is not None and not isinstance(raw_call, dict):
        raise MalformedPermission(f"toolCall must be an object, not {type(raw_call).__name__}")
    raw_options = _list_of(params.get("options"), "options")
    tool_call: dict[str, Any] = dict(known_tool_call or {})
    if isinstance(raw_call, dict):
        tool_call.update({k: v for k, v in raw_call.items() if v is not None})
    kind = tool_call.get("kind") if isinstance(tool_call.get("kind"), str) else None
    raw_title = tool_call.get("title")
    title = raw_title if isinstance(raw_title, str) else ""
    paths: list[str] = []
    diffs: list[dict[str, Any]] = []
    for item in _list_of(tool_call.get("content"), "toolCall.content"):
        if isinstance(item, dict) and item.get("type") == "diff" and isinstance(item.get("path"),
                                                                                 str):
            diffs.append(item)
            paths.append(item["path"])
    for location in _list_of(tool_call.get("locations"), "toolCall.locations"):
        if isinstance(location, dict) and isinstance(location.get("path"), str):
            paths.append(location["path"])
    raw_input = tool_call.get("rawInput")
    command: str | None = None
    if isinstance(raw_input, dict):
        for key in ("path", "file_path", "filePath", "abs_path"):
            if isinstance(raw_input.get(key), str):
                paths.append(raw_input[key])
        cmd = raw_input.get("command")
        if isinstance(cmd, list) and all(isinstance(c, str) for c in cmd):
            command = shlex.join(cmd)
        elif isinstance(cmd, str):
            args = raw_input.get("args")
            if isinstance(args, list) and all(isinstance(a, str) for a in args):
                command = shlex.join([cmd, *args])
            else:
                command = cmd
        if command is not None:
            command = _with_env(command, raw_input.get("env"))
    if not diffs:
        diffs = _derived_diffs(kind, raw_input, paths)
    options = tuple(o for o in raw_options if isinstance(o, dict))
    tool_call_id = tool_call.get("toolCallId")
    session_id = params.get("sessionId")
    return PermissionRequest(
        request_id=request_id,
        agent=agent,
        agent_key=agent_key,
        workspace=workspace,
        session_id=session_key or (session_id if isinstance(session_id, str) else ""),
        tool_call_id=tool_call_id if isinstance(tool_call_id, str) else None,
        title=title,
        kind=kind,
        paths=tuple(dict.fromkeys(paths)),
        command=command,
        options=options,
        diffs=tuple(diffs),
        tool_call=tool_call,
        waited_seconds=_waited(params.get("_meta")),
    )


MAX_WAITED_SECONDS = 366 * 24 * 3600.0


def waited_text(seconds: float | None) -> str | None:
    """How long a request waited for a window to attach (the session host's), or None."""
    if seconds is None:
        return None
    minutes = seconds / 60
    age = (f"{seconds:.0f} s" if minutes < 1 else f"{minutes:.0f} min" if minutes < 120
           else f"{minutes / 60:.0f} h")
    return f"asked {age} ago, while no window was attached"


def _waited(meta: Any) -> float | None:
    """`_meta.louise.waitedSeconds` of a request the session host sent again: a number of
    seconds within a year, else None."""
    louise = meta.get("louise") if isinstance(meta, dict) else None
    value = louise.get("waitedSeconds") if isinstance(louise, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value <= MAX_WAITED_SECONDS else None


def _with_env(command: str, env: Any) -> str:
    """The command as it will run, its environment shown first (`NAME=value command`):
    what a person approves is all of it."""
    if isinstance(env, Mapping):
        pairs = list(env.items())
    elif isinstance(env, list):
        pairs = [(item.get("name"), item.get("value")) if isinstance(item, Mapping)
                 else (item, None) for item in env]
    elif env is None:
        return command
    else:
        pairs = [("env", env)]
    shown = [f"{name}={shlex.quote(value)}" if isinstance(name, str) and isinstance(value, str)
             else shlex.quote(f"{name}={value}") for name, value in pairs]
    return " ".join([*shown, command])


def _derived_diffs(kind: str | None, raw_input: Any, paths: list[str]) -> list[dict[str, Any]]:
    """Diffs for agents that send only raw input (e.g. claude's Edit/Write tools), and
    deletions, so that every file a request touches can be reviewed."""
    out: list[dict[str, Any]] = []
    if isinstance(raw_input, dict):
        path = next((raw_input[k] for k in ("file_path", "filePath", "path", "abs_path")
                     if isinstance(raw_input.get(k), str)), None)
        if path is not None and isinstance(raw_input.get("new_string"), str):
            out.append({"type": "diff", "path": path, "derived": "replace",
                        "oldString": str(raw_input.get("old_string") or ""),
                        "newString": raw_input["new_string"]})
        elif path is not None and isinstance(raw_input.get("content"), str):
            out.append({"type": "diff", "path": path, "derived": "write",
                        "newText": raw_input["content"]})
    if not out and kind == "delete":
        out = [{"type": "diff", "path": p, "derived": "delete", "newText": ""} for p in paths]
    return out


class PermissionBroker:
    """Serializes permission decisions across all sessions (see module docstring)."""

    def __init__(
        self,
        decider: PermissionDecider | None = None,
        *,
        memory: PermissionMemory | None = None,
        policy: PermissionsConfig | None = None,
        roots_for: Callable[[PermissionRequest], Sequence[str]] | None = None,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.decider: PermissionDecider = decider or RefuseAll()
        self.memory = memory
        self.policy = policy or PermissionsConfig()
        self._roots_for = roots_for
        self._on_change = on_change
        self._turn = anyio.Lock()
        self._asks: dict[int, _Ask] = {}
        self._ids = itertools.count(1)

    def next_id(self) -> int:
        return next(self._ids)

    def pending(self) -> list[PermissionRequest]:
        """Requests waiting or on screen, in arrival order."""
        return [ask.request for ask in self._asks.values()]

    def presented(self) -> PermissionRequest | None:
        for ask in self._asks.values():
            if ask.presented:
                return ask.request
        return None

    def cancel_session(self, session_id: str) -> int:
        """Answer `cancelled` to every pending request of a session; returns how many."""
        count = 0
        for ask in list(self._asks.values()):
            if ask.request.session_id == session_id:
                ask.scope.cancel()
                count += 1
        return count

    def cancel_agent(self, agent: str) -> None:
        for ask in list(self._asks.values()):
            if ask.request.agent == agent:
                ask.scope.cancel()

    def cancel(self, request_id: int) -> bool:
        ask = self._asks.get(request_id)
        if ask is None:
            return False
        ask.scope.cancel()
        return True

    def _changed(self) -> None:
        if self._on_change is not None:
            try:
                self._on_change()
            except Exception:
                log.exception("permission queue listener failed")

    async def ask(self, request: PermissionRequest) -> dict[str, Any]:
        """Decide one request; returns the wire outcome. Never raises except cancellation
        of the caller itself (which the peer answers with -32800)."""
        outcome, _ = await self.ask_explained(request)
        return outcome

    async def ask_explained(self, request: PermissionRequest
                            ) -> tuple[dict[str, Any], str | None]:
        """`ask`, and why nobody was asked when a rule or a remembered choice refused it
        (words for the person, naming where to change it), else None."""
        automatic, why = await self._automatic(request)
        if automatic is not None:
            return automatic, why
        return await self._asked(request), None

    async def _asked(self, request: PermissionRequest) -> dict[str, Any]:
        if len(self._asks) >= MAX_QUEUED:
            log.warning("permission queue full; cancelling %s", request.title)
            return CANCELLED
        ask = _Ask(request)
        self._asks[request.request_id] = ask
        self._changed()
        chosen: str | None = None
        try:
            with ask.scope:
                async with self._turn:
                    ask.presented = True
                    self._changed()
                    waiting = list(self._asks)
                    queue = QueueView(waiting.index(request.request_id) + 1, len(waiting))
                    try:
                        chosen = await self.decider.decide(request, queue)
                    except anyio.get_cancelled_exc_class():
                        raise
                    except Exception:
                        log.exception("permission decider failed; answering cancelled")
                        chosen = None
        finally:
            self._asks.pop(request.request_id, None)
            self._changed()
        if chosen is None or chosen not in request.option_ids():
            return CANCELLED
        if not request.is_unique(chosen) and len(_kinds_with_id(request, chosen)) > 1:
            # The agent gave options of different kinds one id: answering it could mean
            # "always" where the person chose "once". Refuse instead.
            log.warning("%s: options of different kinds share the id %r; refusing",
                        request.agent, chosen)
            refusal = request.refusal()
            return CANCELLED if refusal is None else _selected(refusal)
        await self._remember(request, chosen)
        return _selected(chosen)

    async def _automatic(self, request: PermissionRequest
                         ) -> tuple[dict[str, Any] | None, str | None]:
        """The answer of the configured rules and remembered choices, or None to ask.

        Order (documented in README and :help louise-permissions): a configured reject
        rule, a remembered "reject always", a configured allow rule, `default = "reject"`,
        a remembered "allow always". Rejects come first, so no remembered choice can
        override what the configuration forbids. An automatic allow uses only an
        `allow_once` option; an automatic reject never answers an "always" option either.
        """
        from louise.permissions.rules import configured_decisions

        roots = self._roots_for(request) if self._roots_for else [request.workspace]
        configured = configured_decisions(self.policy, request.kind, list(request.paths), roots)
        remembered = await self._remembered(request)
        decision: str | None = None
        why: str | None = None
        if "reject" in configured:
            decision, why = "reject", "refused by a rule of your configuration (permissions.rules)"
        elif remembered == "reject":
            decision, why = "reject", ("refused: you chose to always reject this earlier "
                                       "(:LouisePermissions forgets it)")
        elif "allow" in configured:
            decision = "allow"
        elif self.policy.default == "reject":
            decision, why = "reject", 'refused: permissions.default is "reject"'
        elif remembered == "allow":
            decision = "allow"
        if decision == "reject":
            refusal = request.refusal()
            return (CANCELLED if refusal is None else _selected(refusal)), why
        if decision == "allow":
            allow = request.option_of_kind("allow_once")
            return (None if allow is None else _selected(allow)), None  # no one-time: ask
        return None, None

    async def _remembered(self, request: PermissionRequest) -> str | None:
        """"reject" when a remembered rule rejects any target, "allow" when remembered
        rules allow every target, else None."""
        targets = request.targets()
        if self.memory is None or not targets or request.kind is None:
            return None
        memory = self.memory
        kind = request.kind
        rules = await anyio.to_thread.run_sync(lambda: [
            memory.match(request.agent_key, request.workspace, kind, target)
            for target in targets
        ])
        decisions = {rule.decision for rule in rules if rule is not None}
        if "reject" in decisions:
            return "reject"
        if decisions == {"allow"} and all(rule is not None for rule in rules):
            return "allow"
        return None

    async def _remember(self, request: PermissionRequest, option_id: str) -> None:
        kind = request.kind_of(option_id)  # None for an id several options share
        if kind not in ("allow_always", "reject_always") or self.memory is None:
            return
        if request.kind is None:
            return
        from louise.permissions.rules import rememberable_target

        decision: Literal["allow", "reject"] = "allow" if kind == "allow_always" else "reject"
        memory = self.memory
        for raw_target in request.targets():
            target = await anyio.to_thread.run_sync(
                rememberable_target, request.kind, raw_target, request.workspace, decision)
            if target is None:
                log.info("not remembering %s for %s: it does not resolve inside %s",
                         decision, raw_target, request.workspace)
                continue
            rule = RememberedRule(agent_key=request.agent_key, workspace=request.workspace,
                                  kind=request.kind, target=target, decision=decision)
            try:
                await anyio.to_thread.run_sync(memory.remember, rule)
            except (PermissionStoreError, OSError, ValueError) as exc:
                log.warning("could not remember the permission choice: %s", exc)


def _kinds_with_id(request: PermissionRequest, option_id: str) -> set[object]:
    return {o.get("kind") for o in request.options if o.get("optionId") == option_id}


def _selected(option_id: str) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option_id}}
