"""What the registry holds: configured Agents (`AgentRuntime`), live sessions
(`LiveSession`) and the table that finds them; the registry's error type."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import anyio

from louise import limits as lim
from louise.acp.connection import AgentConnection, InitializeResult
from louise.acp.errors import AcpError, ConnectionClosed, RpcError
from louise.acp.process import AgentCommand
from louise.acp.schema import ParsedUpdate
from louise.capabilities.fs import FileAccess
from louise.capabilities.terminal import TerminalHost
from louise.limits.quota_order import Freshness
from louise.registry.approvals import TurnApprovals
from louise.registry.error_hints import with_hint
from louise.session import Session

if TYPE_CHECKING:
    from louise.registry.transcripts import TranscriptFile
    from louise.registry.turn_hooks import TurnWatch

log = logging.getLogger("louise.registry")

# clientCapabilities._meta: the account-limits extension, and output streaming of the
# commands agents run themselves (Zed's convention, read by claude-agent-acp and
# codex-acp: `terminal_output_delta` makes both send appended chunks).
LOUISE_CLIENT_META: dict[str, Any] = {lim.NAMESPACE: {"accountLimits": True},
                                      "terminal_output": True, "terminal_output_delta": True}
MAX_EARLY_SESSIONS = 16  # session ids we buffer updates for before their reply arrives
MAX_EARLY_UPDATES = 2_000  # per such session
MAX_QUEUED_PROMPTS = 16
MAX_NOTES = 200  # lines of what louise did for an Agent, for :LouiseLog
MAX_NOTE_CHARS = 1000


class RegistryError(AcpError):
    """A request to the registry that cannot be done (unknown session, queue full, …)."""


class TurnFailed(RegistryError):
    """A turn ended in an error that its transcript already shows (the agent's error
    answer, a lost agent, a silent turn cancelled): a front end need not say it again."""


class PromptWithdrawn(RegistryError):
    """A queued prompt was removed from the queue (by the person, or its session closed)
    before it ran."""


@dataclass(eq=False)
class QueuedPrompt:
    """A prompt waiting for the running turn to end: shown, editable, removable, sent now
    (the running turn cancelled) or steered into the running turn."""

    id: int
    prompt: str | Sequence[Mapping[str, Any]]
    context: Sequence[Mapping[str, Any]]
    ready: anyio.Event = field(default_factory=anyio.Event)
    # `steering`: a `_session/steering` request for it is in flight; it is not handed the
    # next turn meanwhile (the answer says whether it went into the running one).
    state: Literal["queued", "steering", "running", "removed", "steered"] = "queued"

    @property
    def text(self) -> str:
        if isinstance(self.prompt, str):
            return self.prompt
        return "\n".join(str(b.get("text")) for b in self.prompt
                         if isinstance(b, Mapping) and b.get("type") == "text")


@dataclass(eq=False)
class LiveSession:
    """A session the registry holds: its model and what runs on its behalf."""

    model: Session
    agent: str
    cwd: str
    file_access: FileAccess | None
    terminals: TerminalHost | None
    transcript: TranscriptFile | None = None
    attach_lock: anyio.Lock = field(default_factory=anyio.Lock)
    # The prompt queue: one turn runs at a time; the others wait here, in order.
    turn_running: bool = False
    queue: list[QueuedPrompt] = field(default_factory=list)
    queue_ids: int = 0
    # While attaching: the fresh model a replay goes into until it replaces `model`, and
    # (on resume) the updates received, for the old model if nothing was replayed.
    attaching: Session | None = None
    attach_updates: list[ParsedUpdate] | None = None
    # An agent that streams a loaded history after its answer: the update that ends it,
    # and the event set when it came (`agent_quirks.history_after_load`).
    history_end: tuple[str, anyio.Event] | None = None
    no_turn_running: anyio.Event = field(default_factory=anyio.Event)  # set between turns
    permission_scopes: set[anyio.CancelScope] = field(default_factory=set)
    # What this turn's permission answers allowed and refused (the unasked-side-effect gate).
    approvals: TurnApprovals = field(default_factory=TurnApprovals)
    # The prompt watchdog: when the agent last showed life, and how many of its requests
    # (permissions waiting for a person, fs, terminals) louise is still answering.
    last_activity: float = field(default_factory=time.monotonic)
    busy: int = 0
    # When the person or the agent last used the session (opened, a prompt sent, an
    # update of the agent's), in seconds since the epoch, for a person to read (the
    # editor's session picker). Not the watchdog's clock, which only the agent's signs of
    # life move.
    active_at: float = field(default_factory=time.time)
    # The running turn's checkpoint (`checkpoint_hooks.py`), when something records them.
    turn_watch: TurnWatch | None = None
    # The mode the person picked in louise (`person_modes.py`: what it approves for them).
    person_mode: str | None = None
    # `context.instructions_file` of a new session, attached to its first prompt.
    instructions: str | None = None

    def __post_init__(self) -> None:
        self.no_turn_running.set()

    def touch(self) -> None:
        """The agent showed life (an update, a request, an answer it got)."""
        self.last_activity = time.monotonic()

    @property
    def session_id(self) -> str:
        """The registry-wide key (`agent:acp_id`), as in events."""
        return self.model.session_id

    @property
    def acp_id(self) -> str:
        """The agent's own session id, used on the wire."""
        return self.model.acp_id


@dataclass(eq=False)
class AgentRuntime:
    """One configured Agent: its connection (if running) and its sessions."""

    name: str
    command: AgentCommand
    # What is started instead of `command` when louise goes through the session host
    # (`louise attach`); `command` stays the Agent's own (remembered rules, sign-in, cwd).
    launch: AgentCommand | None = None
    connection: AgentConnection | None = None
    initialized: InitializeResult | None = None
    capability: lim.Capability | None = None
    # The ACP Quotas RFD: the agent advertises `quota` (then it is the only limits
    # source), and which of its snapshots are newest, by its own `updatedAt`, per process.
    quota: bool = False
    quota_order: Freshness = field(default_factory=Freshness)
    start_lock: anyio.Lock = field(default_factory=anyio.Lock)
    sessions: list[LiveSession] = field(default_factory=list)  # creation order
    early: dict[str, deque[ParsedUpdate]] = field(default_factory=dict)
    observed: bool = False  # an initialized session was seen (limits: unsupported vs not)
    refreshing: anyio.Event | None = None  # set when the limits read in flight ends
    holder: bool = False
    generation: int = 0  # bumps each time the process is (re)started
    last_stderr: str = ""  # the tail of its stderr when its last process was lost
    # What louise did for the agent that a person may want to know (bounded, newest last).
    notes: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_NOTES))

    def note(self, text: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        self.notes.append(f"{stamp} {text[:MAX_NOTE_CHARS]}")
        log.info("%s: %s", self.name, text[:MAX_NOTE_CHARS])
    restarting: str | None = None  # why louise is stopping the process on purpose

    @property
    def connected(self) -> bool:
        return self.connection is not None and self.connection.is_open

    def live_sessions(self) -> list[LiveSession]:
        return [s for s in self.sessions if s.model.status not in ("error", "closed")]

    def prompt_capabilities(self) -> Mapping[str, Any]:
        caps = self.initialized.agent_capabilities if self.initialized is not None else {}
        prompt = caps.get("promptCapabilities")
        return prompt if isinstance(prompt, dict) else {}


@dataclass(eq=False)
class Opening:
    """A load or resume of one session key in flight; a second caller for the key waits
    for its outcome instead of attaching the session again."""

    done: anyio.Event = field(default_factory=anyio.Event)
    session: Session | None = None  # what it attached
    error: str | None = None  # why it could not (a RegistryError's message)


class SessionTable:
    """Every Agent and live session, by name and by key: one live session per key."""

    def __init__(self, runtimes: dict[str, AgentRuntime]) -> None:
        self.runtimes = runtimes
        self.sessions: dict[str, LiveSession] = {}
        self.opening: dict[str, Opening] = {}

    def runtime(self, agent: str) -> AgentRuntime:
        try:
            return self.runtimes[agent]
        except KeyError:
            known = ", ".join(self.runtimes)
            raise RegistryError(f"unknown agent {agent!r}; configured: {known}") from None

    def live(self, session_id: str) -> LiveSession:
        try:
            return self.sessions[session_id]
        except KeyError:
            raise RegistryError(f"unknown session {session_id!r}") from None

    def find(self, agent: str, acp_id: str) -> LiveSession | None:
        return self.sessions.get(session_key(agent, acp_id))

    def for_request(self, agent: str, params: Mapping[str, Any]) -> LiveSession:
        """The session an agent's request names (`sessionId`), or invalid params."""
        session_id = params.get("sessionId")
        live = self.find(agent, session_id) if isinstance(session_id, str) else None
        if live is None:
            raise RpcError.invalid_params(f"unknown sessionId {session_id!r}")
        return live

    def refuse_open(self, runtime: AgentRuntime, acp_id: str) -> None:
        """RegistryError when the session is open already: one live session per key
        (replacing it would leave the first running, reachable by nobody)."""
        if session_key(runtime.name, acp_id) in self.sessions:
            raise RegistryError(f"{runtime.name} gave the id of a session already open "
                                f"here ({acp_id}); it was not opened twice")

    def add(self, runtime: AgentRuntime, live: LiveSession) -> None:
        self.refuse_open(runtime, live.acp_id)
        self.sessions[live.session_id] = live
        runtime.sessions.append(live)

    def remove(self, runtime: AgentRuntime, live: LiveSession) -> None:
        self.sessions.pop(live.session_id, None)
        if live in runtime.sessions:
            runtime.sessions.remove(live)


def session_key(agent: str, acp_id: str) -> str:
    """Registry-wide session id: two Agents may hand out the same ids."""
    return f"{agent}:{acp_id}"


def describe_rpc_error(exc: RpcError, runtime: AgentRuntime) -> str:
    """A person-facing message for an agent's error (never its raw `data`)."""
    if exc.is_auth_required:
        methods = runtime.initialized.methods if runtime.initialized else []
        names = ", ".join(m.name for m in methods) or "none advertised"
        how = ("sign in (:LouiseSignIn in Neovim, louise login from a shell)" if methods
               else "sign in with the agent's own tool")
        return (f"{runtime.name} requires authentication ({exc.reason}). "
                f"Sign-in methods it offers: {names}; {how}, then retry.")
    return with_hint(f"{runtime.name}: {exc.reason}", runtime.name, _stderr_tail(runtime))


def _stderr_tail(runtime: AgentRuntime) -> str:
    connection = runtime.connection
    return connection.process.stderr.tail(4000) if connection is not None else ""


def describe_error(exc: BaseException, runtime: AgentRuntime) -> str:
    """A person-facing message for anything an agent call raised, with louise's hint
    where it knows the cause (error_hints.py)."""
    if isinstance(exc, RpcError):
        return describe_rpc_error(exc, runtime)
    if isinstance(exc, ConnectionClosed):
        # The hint goes on the first line: the rest is the agent's stderr tail.
        first, newline, rest = str(exc).partition("\n")
        return with_hint(first, runtime.name, rest) + newline + rest
    if isinstance(exc, AcpError):
        text = str(exc) if str(exc).startswith(runtime.name) else f"{runtime.name}: {exc}"
        return with_hint(text, runtime.name, _stderr_tail(runtime))
    return f"{runtime.name}: {exc}"
