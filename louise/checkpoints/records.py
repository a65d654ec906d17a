"""What the checkpoint store remembers of a workspace, as JSON (`store.json`): how it
takes snapshots there (git, or named files only, and why), and each turn it recorded —
its session, its number in that session, the snapshots before and after it, the files
the person saved during it, what it changed. Everything read back is checked; whatever
does not fit is dropped, never trusted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from louise.checkpoints.snapshots import Snapshot

VERSION = 1
MAX_PROMPT_CHARS = 200
MAX_PERSON_SAVES = 200  # per turn
MAX_LATE_PATHS = 100
MAX_FILES_LISTED = 500  # per turn, in its summary


@dataclass(frozen=True, slots=True)
class PersonSave:
    """The person saved a file during a turn: its content just before and just after
    (blob ids in the store's blobs; "" when absent). That change is theirs, not the
    agent's: a review leaves it out and an undo keeps it."""

    path: str
    before: str
    after: str

    def to_json(self) -> list[str]:
        return [self.path, self.before, self.after]


@dataclass(frozen=True, slots=True)
class FileSummary:
    path: str
    status: str  # added, removed, modified, noted (not copied)
    added: int
    removed: int

    def to_json(self) -> list[Any]:
        return [self.path, self.status, self.added, self.removed]


@dataclass(slots=True)
class TurnRecord:
    seq: int  # in this workspace, increasing
    session: str  # the registry's key, `agent:id`
    agent: str
    number: int  # the turn's number in its session, as the store counts them
    prompt: str
    started: float
    before: Snapshot | None = None
    after: Snapshot | None = None
    ended: float | None = None
    stop_reason: str | None = None
    person: list[PersonSave] = field(default_factory=list)
    late: list[str] = field(default_factory=list)  # changed before the snapshot was done
    incomplete: str | None = None  # why the snapshots may miss changes
    files: list[FileSummary] = field(default_factory=list)
    files_more: int = 0
    undone: bool = False

    @property
    def acp_id(self) -> str:
        return self.session.split(":", 1)[1] if ":" in self.session else self.session

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)

    @property
    def changed_files(self) -> int:
        return len(self.files) + self.files_more

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq, "session": self.session, "agent": self.agent,
            "number": self.number, "prompt": self.prompt, "started": self.started,
            "ended": self.ended, "stop_reason": self.stop_reason,
            "before": self.before.to_json() if self.before is not None else None,
            "after": self.after.to_json() if self.after is not None else None,
            "person": [p.to_json() for p in self.person],
            "late": self.late, "incomplete": self.incomplete,
            "files": [f.to_json() for f in self.files], "files_more": self.files_more,
            "undone": self.undone,
        }

    @classmethod
    def from_json(cls, raw: Any) -> TurnRecord | None:
        if not isinstance(raw, Mapping):
            return None
        seq, session, number = raw.get("seq"), raw.get("session"), raw.get("number")
        if not isinstance(seq, int) or not isinstance(session, str) \
                or not isinstance(number, int):
            return None
        started = raw.get("started")
        ended = raw.get("ended")
        record = cls(seq, session, str(raw.get("agent") or session.split(":", 1)[0]), number,
                     str(raw.get("prompt") or "")[:MAX_PROMPT_CHARS],
                     float(started) if isinstance(started, int | float) else 0.0)
        record.before = Snapshot.from_json(raw.get("before"))
        record.after = Snapshot.from_json(raw.get("after"))
        record.ended = float(ended) if isinstance(ended, int | float) else None
        stop = raw.get("stop_reason")
        record.stop_reason = stop if isinstance(stop, str) else None
        for item in raw.get("person") or []:
            if isinstance(item, list) and len(item) == 3 and all(isinstance(x, str)
                                                                  for x in item):
                record.person.append(PersonSave(item[0], item[1], item[2]))
        record.late = [p for p in raw.get("late") or [] if isinstance(p, str)][:MAX_LATE_PATHS]
        why = raw.get("incomplete")
        record.incomplete = why if isinstance(why, str) else None
        for item in raw.get("files") or []:
            if isinstance(item, list) and len(item) == 4 and isinstance(item[0], str) \
                    and isinstance(item[1], str) and isinstance(item[2], int) \
                    and isinstance(item[3], int):
                record.files.append(FileSummary(item[0], item[1], item[2], item[3]))
        more = raw.get("files_more")
        record.files_more = more if isinstance(more, int) else 0
        record.undone = raw.get("undone") is True
        return record

    def title(self) -> str:
        prompt = " ".join(self.prompt.split())
        return f"turn {self.number} of {self.session}" + (f": {prompt}" if prompt else "")


@dataclass(slots=True)
class StoreState:
    workspace: str
    mode: str = ""  # "git", "files", or "" before the first snapshot
    why: str = ""  # why not git, when "files"
    decided: float = 0.0
    next_seq: int = 1
    turns: list[TurnRecord] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "workspace": self.workspace, "mode": self.mode,
                "why": self.why, "decided": self.decided, "next_seq": self.next_seq,
                "turns": [t.to_json() for t in self.turns]}

    @classmethod
    def from_json(cls, raw: Any, workspace: str) -> StoreState:
        state = cls(workspace)
        if not isinstance(raw, Mapping) or raw.get("version") != VERSION \
                or raw.get("workspace") != workspace:
            return state
        mode = raw.get("mode")
        state.mode = mode if mode in ("git", "files") else ""
        state.why = str(raw.get("why") or "")[:300]
        decided = raw.get("decided")
        state.decided = float(decided) if isinstance(decided, int | float) else 0.0
        for item in raw.get("turns") or []:
            record = TurnRecord.from_json(item)
            if record is not None:
                state.turns.append(record)
        state.turns.sort(key=lambda t: t.seq)
        next_seq = raw.get("next_seq")
        last = state.turns[-1].seq if state.turns else 0
        state.next_seq = max(next_seq if isinstance(next_seq, int) else 1, last + 1)
        return state

    def turn(self, seq: int) -> TurnRecord | None:
        return next((t for t in self.turns if t.seq == seq), None)

    def session_turns(self, session: str) -> list[TurnRecord]:
        return [t for t in self.turns if t.session == session]

    def number_for(self, session: str) -> int:
        mine = self.session_turns(session)
        return (max(t.number for t in mine) + 1) if mine else 1


class NoSuchTurn(LookupError):
    """No recorded turn matches; the message says so for a person."""


def pick_turn(state: StoreState, session: str | None = None, number: int | None = None,
              seq: int | None = None) -> TurnRecord:
    """The turn asked for: by `seq`, else turn `number` of `session` (its registry key or
    the agent's session id; default: the session of the newest recorded turn), the newest
    finished one when `number` is None."""
    if seq is not None:
        found = state.turn(seq)
        if found is None:
            raise NoSuchTurn(f"no recorded turn {seq} (it may have been pruned)")
        return found
    if not state.turns:
        raise NoSuchTurn(f"no turn is recorded for {state.workspace}")
    if session is None:
        session = state.turns[-1].session
    mine = [t for t in state.turns if session in (t.session, t.acp_id)]
    if not mine:
        raise NoSuchTurn(f"no recorded turn of session {session} in {state.workspace}")
    if number is None:
        finished = [t for t in mine if t.after is not None]
        if not finished:
            raise NoSuchTurn(f"session {session} has no finished turn recorded")
        return finished[-1]
    found = next((t for t in mine if t.number == number), None)
    if found is None:
        known = ", ".join(str(t.number) for t in mine[-10:])
        raise NoSuchTurn(f"session {session} has no recorded turn {number} (recorded: {known})")
    return found
