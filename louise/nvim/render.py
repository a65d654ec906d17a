"""From registry events to the chat buffers' edit operations, coalesced per frame (the
lines of each block: chat_lines.py).

Pure: no pynvim here. The engine feeds every registry event to `ChatRenderer.on_event`
(on the engine loop) and, once per frame, takes the accumulated batch with `take_batch`
and sends it to Lua in one call (`require('louise.render').apply(batch)`).

Operations on one chat buffer (lists, compact in msgpack):
- `["reset", lines, blocks]`: whole transcript; `blocks` is `[[id, kind, first, count], …]`.
- `["block", id, kind, lines]`: a new block at the end of the transcript.
- `["text", id, text]`: text appended to the end of a block (may hold newlines).
- `["replace", id, lines]`: a block's lines replaced (a tool call or plan changed).

Only chats shown in a window ("attached") get operations; an unseen session's model
stays current and gets one `reset` when it is shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from louise.nvim.chat_lines import (
    block_label,
    compaction_at,
    compaction_lines,
    cut_long_lines,
    header,
    id_plan_lines,
    message_lines,
    notice_kind,
    notice_lines,
    notice_meta,
    plan_lines,
    tool_lines,
    tool_meta,
)
from louise.session import (
    CompactionChanged,
    CompactionRef,
    Event,
    Message,
    MessageChunk,
    MessageStarted,
    MessageTruncated,
    Notice,
    NoticeAdded,
    PlanChanged,
    PlanUpdated,
    Session,
    StatusChanged,
    ToolCallChanged,
    ToolCallRef,
)
from louise.session.budget import MESSAGE_CUT_MARKER

Op = list[Any]

MAX_PENDING_OPS = 2_000
MAX_KEPT_PLANS = 50
# Events that change a transcript (the rest change only its header).
TRANSCRIPT_EVENTS = (MessageChunk, MessageStarted, MessageTruncated, ToolCallChanged,
                     NoticeAdded, PlanChanged, PlanUpdated, CompactionChanged)


@dataclass
class ChatState:
    """What the renderer knows of one session's chat buffer."""

    key: str
    attached: bool = False
    ops: list[Op] = field(default_factory=list)
    known_blocks: set[str] = field(default_factory=set)  # blocks Lua has (or will have)
    plan_block: str | None = None
    waiting_block: str | None = None  # "! waiting for permission" while one waits
    tail_op: Op | None = None  # the pending op streamed text goes into
    tail_parts: list[str] = field(default_factory=list)
    plan_turn: int = -1
    status_dirty: bool = True
    # Each turn's plan as last seen and where it first appeared (turn -> (entries before
    # it, lines)), so a full render shows every plan where the live view did.
    plans: dict[int, tuple[int, list[str]]] = field(default_factory=dict)
    replying: bool = False  # an agent heading was shown since the last user message


class ChatRenderer:
    """Accumulates per-session operations between frames."""

    def __init__(self, session_lookup: Any) -> None:
        # session_lookup(key) -> Session | None; a callable so the renderer stays pure.
        self._lookup = session_lookup
        self.chats: dict[str, ChatState] = {}
        self.dirty = False
        self.exits: dict[str, str] = {}  # terminal id -> "exit 0" / "signal SIGKILL"
        self.released: set[str] = set()  # terminals whose output Neovim no longer keeps

    # ------------------------------------------------------------------ attach

    def attach(self, key: str) -> None:
        """The session is shown: send it whole next frame, then incrementally."""
        chat = self.chats.setdefault(key, ChatState(key))
        session = self._lookup(key)
        chat.attached = True
        chat.tail_op, chat.tail_parts = None, []
        chat.waiting_block = None
        chat.ops = [self.full_render(session, chat)] if session is not None else []
        if session is not None and session.status == "waiting_permission":
            self._waiting_line(chat, StatusChanged(key, "prompting", "waiting_permission"))
        chat.status_dirty = True
        self.dirty = True

    def shown(self, key: str) -> bool:
        """Whether a window shows the session's chat."""
        chat = self.chats.get(key)
        return chat is not None and chat.attached

    def detach(self, key: str) -> None:
        chat = self.chats.get(key)
        if chat is not None:
            chat.attached = False
            chat.ops = []
            chat.tail_op, chat.tail_parts = None, []

    def rerender(self) -> None:
        """Neovim lost (part of) a frame: every shown chat goes whole again next frame,
        every header too."""
        for key, chat in self.chats.items():
            if chat.attached:
                self.attach(key)
            chat.status_dirty = True
        self.dirty = True

    def forget(self, key: str) -> None:
        self.chats.pop(key, None)

    def full_render(self, session: Session, chat: ChatState) -> Op:
        lines: list[str] = []
        blocks: list[list[Any]] = []
        metas: dict[str, dict[str, Any]] = {}
        chat.known_blocks = set()

        def add(block_id: str, kind: str, block_lines: list[str]) -> None:
            block_lines = cut_long_lines(block_lines)
            blocks.append([block_id, kind, len(lines), len(block_lines)])
            lines.extend(block_lines)
            chat.known_blocks.add(block_id)

        base = session.entries_dropped
        if base:
            add("dropped", "notice", ["", f"· {base} earlier entries are in the transcript file"])
        plans = dict(chat.plans)
        if session.plan:
            anchor = plans.get(session.turn, (base + len(session.entries), []))[0]
            plans[session.turn] = (anchor, plan_lines(session.plan))
        waiting = sorted(plans.items(), key=lambda item: (item[1][0], item[0]))
        by_id = sorted(session.id_plans.values(), key=lambda plan: plan.anchor)
        chat.replying = False

        def add_plans(upto: int | None) -> None:
            while waiting and (upto is None or waiting[0][1][0] <= upto):
                turn, (_, plan) = waiting.pop(0)
                add(f"p{turn}", "plan", plan)
                if turn == session.turn:
                    chat.plan_block, chat.plan_turn = f"p{turn}", turn
            while by_id and (upto is None or by_id[0].anchor <= upto):
                add(f"P{by_id[0].plan_id}", "plan", id_plan_lines(by_id.pop(0)))

        for offset, entry in enumerate(session.entries):
            index = base + offset
            add_plans(index)
            if isinstance(entry, Message):
                if entry.role == "user":
                    chat.replying = False
                continued = entry.role == "agent" and chat.replying
                add(f"m{index}", entry.role, message_lines(entry, session.agent, continued))
                chat.replying = chat.replying or entry.role == "agent"
            elif isinstance(entry, ToolCallRef):
                record = session.tool_calls.get(entry.tool_call_id)
                if record is not None:
                    if not chat.replying:  # the reply begins with it: under its heading
                        add(f"h{entry.tool_call_id}", "agent", header("agent", session.agent))
                        chat.replying = True
                    add(f"t{entry.tool_call_id}", "tool",
                        tool_lines(record, self.exits, self.released))
                    metas[f"t{entry.tool_call_id}"] = tool_meta(record)
            elif isinstance(entry, Notice):
                add(f"n{index}", notice_kind(entry), notice_lines(entry))
                if (meta := notice_meta(entry)) is not None:
                    metas[f"n{index}"] = meta
            elif isinstance(entry, CompactionRef):
                add(f"c{index}", "notice", compaction_lines(
                    compaction_at(session, entry, index)))
        add_plans(None)
        return ["reset", lines, blocks, metas]

    # ------------------------------------------------------------------ events

    def on_event(self, event: Event) -> None:
        chat = self.chats.get(event.session_id)
        if chat is None:
            return
        if isinstance(event, PlanChanged):
            self._remember_plan(chat, event)
        if not chat.attached:
            # Hidden chats get no transcript ops, but their header still follows (the
            # winbar of the visible chat lists background sessions by status and name).
            if not isinstance(event, TRANSCRIPT_EVENTS):
                chat.status_dirty = True
                self.dirty = True
            return
        if type(event) is MessageChunk:  # the streaming hot path first, no lookups
            block_id = f"m{event.index}"
            if block_id in chat.known_blocks:  # else: the reset already holds it
                block = event.block
                self._text(chat, block_id, event.text if block is None
                           else "\n" + block_label(block))
            return
        if isinstance(event, MessageTruncated):
            # As a full render shows it (`message_lines`): the marker on its own line.
            block_id = f"m{event.index}"
            if block_id in chat.known_blocks:
                self._text(chat, block_id, "\n" + MESSAGE_CUT_MARKER)
            return
        session = self._lookup(event.session_id)
        if session is None:
            return
        if isinstance(event, MessageStarted):
            block_id = f"m{event.index}"
            if event.role == "user":
                chat.replying = False
            continued = event.role == "agent" and chat.replying
            chat.replying = chat.replying or event.role == "agent"
            self._block(chat, block_id, event.role,
                        [*header(event.role, session.agent, continued), ""])
        elif isinstance(event, ToolCallChanged):
            record = session.tool_calls.get(event.tool_call_id)
            if record is None:
                return
            block_id = f"t{event.tool_call_id}"
            if block_id in chat.known_blocks:
                self._replace(chat, block_id, tool_lines(record, self.exits, self.released))
            else:
                if not chat.replying:  # the reply begins with a tool call: the agent's
                    # heading first, not the tool line under "▌ You" (issue 23)
                    self._block(chat, f"h{event.tool_call_id}", "agent",
                                header("agent", session.agent))
                    chat.replying = True
                self._block(chat, block_id, "tool", tool_lines(record, self.exits, self.released))
            if event.created or {"locations", "content", "raw_input", "raw_output",
                                 "title", "status"} & event.changed:
                self._meta(chat, block_id, tool_meta(record))
        elif isinstance(event, NoticeAdded):
            self._block(chat, f"n{event.index}", notice_kind(event.notice),
                        notice_lines(event.notice))
            if (meta := notice_meta(event.notice)) is not None:
                self._meta(chat, f"n{event.index}", meta)
        elif isinstance(event, PlanChanged):
            lines = plan_lines(event.entries)
            if chat.plan_block is not None and chat.plan_turn == session.turn:
                self._replace(chat, chat.plan_block, lines)
            else:
                chat.plan_block = f"p{session.turn}.{len(chat.known_blocks)}"
                chat.plan_turn = session.turn
                self._block(chat, chat.plan_block, "plan", lines)
        elif isinstance(event, PlanUpdated | CompactionChanged):
            self._unstable_block(chat, session, event)
        else:  # status, usage, mode, options, info, commands, turn end: the header
            if isinstance(event, StatusChanged):
                self._waiting_line(chat, event)
            chat.status_dirty = True
            self.dirty = True

    def _unstable_block(self, chat: ChatState, session: Session,
                        event: PlanUpdated | CompactionChanged) -> None:
        """A plan's by id or a compaction's block: replaced where it shows, else added at
        the end; a removed plan's block emptied."""
        if isinstance(event, PlanUpdated):
            block_id, kind = f"P{event.plan_id}", "plan"
            if event.plan is None and block_id not in chat.known_blocks:
                return
            lines = id_plan_lines(event.plan) if event.plan is not None else []
        else:
            record = session.compactions.get(event.compaction_id)
            if record is None:
                return
            block_id, kind, lines = f"c{record.index}", "notice", compaction_lines(record)
        if block_id in chat.known_blocks:
            self._replace(chat, block_id, lines)
        else:
            self._block(chat, block_id, kind, lines)

    def _remember_plan(self, chat: ChatState, event: PlanChanged) -> None:
        """Keep this turn's plan and where it first showed (bounded: the last turns)."""
        session = self._lookup(chat.key)
        if session is None:
            return
        anchor = chat.plans.get(session.turn, (session.entries_dropped + len(session.entries),
                                               []))[0]
        chat.plans[session.turn] = (anchor, plan_lines(event.entries))
        while len(chat.plans) > MAX_KEPT_PLANS:
            del chat.plans[min(chat.plans)]

    def _meta(self, chat: ChatState, block_id: str, meta: dict[str, Any]) -> None:
        """A block's metadata; one pending meta op per block per frame (the latest)."""
        self._flush_tail(chat)
        for op in reversed(chat.ops):
            if op[0] == "meta" and op[1] == block_id:
                op[2] = meta
                return
            if op[0] == "reset":
                break
        chat.ops.append(["meta", block_id, meta])
        self.dirty = True

    def _waiting_line(self, chat: ChatState, event: StatusChanged) -> None:
        """The transcript says so while a permission waits (and not after)."""
        if event.new == "waiting_permission" and chat.waiting_block is None:
            chat.waiting_block = f"w{len(chat.known_blocks)}"
            self._block(chat, chat.waiting_block, "notice",
                        ["", "! waiting for permission (:LouisePermission shows it)"])
        elif event.new != "waiting_permission" and chat.waiting_block is not None:
            self._replace(chat, chat.waiting_block, [])
            chat.waiting_block = None

    def _block(self, chat: ChatState, block_id: str, kind: str, lines: list[str]) -> None:
        self._flush_tail(chat)
        chat.known_blocks.add(block_id)
        chat.ops.append(["block", block_id, kind, lines])
        self.dirty = True
        self._bound(chat)

    def _bound(self, chat: ChatState) -> None:
        """A Neovim that stopped taking frames must not make ops pile up: past a bound,
        the pending ops collapse into one reset (as big as the session model, no bigger)."""
        if len(chat.ops) > MAX_PENDING_OPS:
            session = self._lookup(chat.key)
            if session is not None:
                chat.tail_op, chat.tail_parts = None, []
                chat.ops = [self.full_render(session, chat)]

    def _text(self, chat: ChatState, block_id: str, text: str) -> None:
        """Append streamed text. Parts are kept in a list and joined once per frame: a
        string grown with += per chunk would copy itself over and over (quadratic)."""
        if not text:
            return
        self.dirty = True
        tail = chat.tail_op
        if tail is not None and tail[1] == block_id and chat.ops and chat.ops[-1] is tail:
            chat.tail_parts.append(text)
            return
        self._flush_tail(chat)
        last = chat.ops[-1] if chat.ops else None
        if last is not None and last[0] == "block" and last[1] == block_id:
            chat.tail_op = last  # not yet sent: the text folds into the new block
        else:
            chat.tail_op = ["text", block_id, ""]
            chat.ops.append(chat.tail_op)
        chat.tail_parts = [text]

    @staticmethod
    def _flush_tail(chat: ChatState) -> None:
        tail, parts = chat.tail_op, chat.tail_parts
        chat.tail_op, chat.tail_parts = None, []
        if tail is None or not parts:
            return
        joined = "".join(parts)
        if tail[0] == "text":
            tail[2] += joined
        else:  # a pending block: fold into its last line(s)
            pieces = joined.split("\n")
            tail[3][-1] += pieces[0]
            tail[3].extend(pieces[1:])

    def _replace(self, chat: ChatState, block_id: str, lines: list[str]) -> None:
        self._flush_tail(chat)
        for index in range(len(chat.ops) - 1, -1, -1):
            op = chat.ops[index]
            if op[1] == block_id and op[0] in ("block", "replace"):
                if op[0] == "block" and not lines:
                    # Added and taken away within a frame (a permission answered at once):
                    # never sent. An empty block would hold a place Lua cannot keep, and
                    # the next block's lines would be lost with it.
                    del chat.ops[index]
                    chat.known_blocks.discard(block_id)
                else:
                    op[-1] = lines  # still pending: update in place
                self.dirty = True
                return
            if op[0] == "reset":
                break
        chat.ops.append(["replace", block_id, lines])
        self.dirty = True
        self._bound(chat)

    def terminal_exited(self, key: str, terminal_id: str, text: str) -> None:
        """A terminal ended: the tool lines showing it get its exit status."""
        if len(self.exits) > 10_000:
            self.exits.clear()  # bounded; old tool lines keep what they showed
        self.exits[terminal_id] = text
        self._terminal_changed(key, terminal_id)

    def terminal_released(self, key: str, terminal_id: str) -> None:
        """Neovim let go of a terminal's output: the tool lines showing it say so."""
        if len(self.released) > 10_000:
            self.released.clear()  # bounded; old tool lines keep what they showed
        self.released.add(terminal_id)
        self._terminal_changed(key, terminal_id)

    def _terminal_changed(self, key: str, terminal_id: str) -> None:
        chat = self.chats.get(key)
        session = self._lookup(key)
        if chat is None or not chat.attached or session is None:
            return
        for record in session.tool_calls.values():
            if terminal_id in record.terminal_ids():
                block_id = f"t{record.tool_call_id}"
                if block_id in chat.known_blocks:
                    self._replace(chat, block_id, tool_lines(record, self.exits, self.released))

    # ------------------------------------------------------------------ frames

    def take_batch(self, status_for: Any) -> dict[str, Any]:
        """Everything to apply this frame; `status_for(session)` builds a header dict."""
        chats: dict[str, list[Op]] = {}
        status: dict[str, Any] = {}
        for key, chat in self.chats.items():
            if chat.attached and chat.ops:
                self._flush_tail(chat)
                chats[key] = chat.ops
                chat.ops = []
            if chat.status_dirty:
                session = self._lookup(key)
                if session is not None:
                    status[key] = status_for(session)
                chat.status_dirty = False
        self.dirty = False
        return {"chats": chats, "status": status}
