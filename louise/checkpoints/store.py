"""One workspace's checkpoint store: `<state>/checkpoints/<hash of the workspace>/` holds
louise's git repository for it (`git/`), copies of single files (`blobs/`: without git,
and what the person saved during a turn) and `store.json` (the turns recorded).

Every operation runs under the store's lock (a `louise` command line and a Neovim may
share a workspace) and is blocking: the service runs them in a worker thread. Snapshots
are git's when git is there and the workspace is within the limits; otherwise only the
files tool calls name and louise writes are tracked, and the store says why.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from louise.checkpoints import workspace_files as wf
from louise.checkpoints.git import Git, GitError
from louise.checkpoints.records import (
    MAX_FILES_LISTED,
    MAX_PERSON_SAVES,
    MAX_PROMPT_CHARS,
    FileSummary,
    PersonSave,
    StoreState,
    TurnRecord,
)
from louise.checkpoints.snapshots import (
    Change,
    FileSnapshots,
    GitSnapshots,
    Side,
    Snapshot,
    TooBig,
)
from louise.checkpoints.undo import (
    ABSENT_CONTENT,
    Content,
    Step,
)
from louise.config.checkpoints import CheckpointsConfig
from louise.storage import durable
from louise.storage.digests import sha256_hex

RETRY_GIT_SECONDS = 24 * 3600  # a workspace too big for git is tried again after a day
LOCK_TIMEOUT = 300.0
SIZE_CHECK_TURNS = 10


def store_dir(root: Path, workspace: Path) -> Path:
    """Where the store of `workspace` (canonical) lives under `root`."""
    digest = sha256_hex(os.fsencode(str(workspace)))[:24]
    return root / digest


def find_workspace(root: Path, start: Path) -> Path | None:
    """The workspace with a store that holds `start`: itself or its nearest parent."""
    here = start
    while True:
        if (store_dir(root, here) / "store.json").is_file():
            return here
        if here.parent == here:
            return None
        here = here.parent


@dataclass(frozen=True, slots=True)
class FileContents:
    """One file of a turn: its sides, and contents where copied."""

    change: Change
    before: bytes | None
    after: bytes | None  # the agent's result (the person's own saves taken out)
    note: str = ""
    unread: bool = False  # too much changed at once to read it: shown, never taken back

    @property
    def copied(self) -> bool:
        """Both sides are there to compare and restore (not noted, not unread)."""
        return not self.unread and self.change.old.kind != "noted" \
            and self.change.new.kind != "noted"


class TurnStore:
    """The store's state, snapshots, turns and contents (review, revert and undo are
    `workspace.WorkspaceStore`'s)."""

    def __init__(self, root: Path, workspace: Path, settings: CheckpointsConfig,
                 git_executable: str | None, clock: Callable[[], float] = time.time) -> None:
        self.workspace = workspace
        self.dir = store_dir(root, workspace)
        self.settings = settings
        self.clock = clock
        state = root.parent  # louise's state directory, when it is inside the workspace
        inside = [os.path.relpath(state, workspace)] if state.is_relative_to(workspace) \
            and state != workspace else []
        self.git = Git(git_executable, self.dir / "git", workspace, tuple(inside)) \
            if git_executable is not None else None
        self.blobs = wf.Blobs(self.dir / "blobs")
        self._thread_lock = threading.Lock()
        self.last: Snapshot | None = None  # this process's latest git snapshot
        self._git_backend: GitSnapshots | None = None
        self._measured = -SIZE_CHECK_TURNS  # the turn (seq) the store's size was measured at
        self._over = False  # it was over max_store_bytes then (measured again each turn)

    # ------------------------------------------------------------------ state

    @contextlib.contextmanager
    def locked(self) -> Iterator[StoreState]:
        """The store's state, under its lock (saved on leaving when changed)."""
        with self._thread_lock:
            durable.ensure_private_dir(self.dir)
            with durable.exclusive_lock(self.dir / "lock", timeout=LOCK_TIMEOUT):
                state = self.read_state()
                before = state.to_json()
                yield state
                if state.to_json() != before:
                    durable.atomic_write_json(self.dir / "store.json", state.to_json())

    def read_state(self) -> StoreState:
        import json

        try:
            raw = json.loads((self.dir / "store.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raw = None
        return StoreState.from_json(raw, str(self.workspace))

    # ------------------------------------------------------------------ snapshots

    def _git_snapshots(self) -> GitSnapshots | None:
        if self.git is None:
            return None
        if self._git_backend is None:
            self._git_backend = GitSnapshots(
                self.git, max_file_bytes=self.settings.max_file_bytes,
                max_files=self.settings.max_workspace_files,
                max_bytes=self.settings.max_workspace_bytes)
        return self._git_backend

    def _files(self) -> FileSnapshots:
        return FileSnapshots(self.workspace, self.blobs,
                             max_file_bytes=self.settings.max_file_bytes)

    def backend(self, mode: str) -> GitSnapshots | FileSnapshots:
        git = self._git_snapshots()
        return git if mode == "git" and git is not None else self._files()

    def _snapshot(self, state: StoreState) -> Snapshot | None:
        """A git snapshot of the workspace now, or None when this store tracks named
        files only (the state says why)."""
        git = self._git_snapshots()
        if git is None:
            state.mode, state.why = "files", "git is not installed"
            return None
        if state.mode == "files" and state.why.startswith("the workspace is too big") \
                and self.clock() - state.decided < RETRY_GIT_SECONDS:
            return None
        with contextlib.suppress(FileNotFoundError):  # left by a git killed mid-way
            (self.dir / "git" / "louise-index.lock").unlink()
        try:
            snapshot = git.take(self.last)
        except TooBig as exc:
            state.mode, state.why, state.decided = "files", \
                f"the workspace is too big for whole checkpoints: {exc}", self.clock()
            return None
        state.mode, state.why = "git", ""
        self.last = snapshot
        return snapshot

    def warm(self) -> None:
        """A first snapshot ahead of the first turn (the costly one), not recorded."""
        with self.locked() as state:
            self._snapshot(state)

    # ------------------------------------------------------------------ turns

    def begin(self, session: str, agent: str, prompt: str,
              reuse: Snapshot | None = None) -> TurnRecord:
        """Record a turn starting: the snapshot before it (git; `reuse`: one taken as it
        started), or an empty one that `capture` fills (named files)."""
        with self.locked() as state:
            before = reuse if reuse is not None and reuse.mode == "git" else None
            if before is None:
                try:
                    before = self._snapshot(state)
                except GitError as exc:
                    state.mode, state.why = "files", str(exc)
            record = TurnRecord(state.next_seq, session, agent, state.number_for(session),
                                " ".join(prompt.split())[:MAX_PROMPT_CHARS], self.clock(),
                                before=before or Snapshot("files"))
            state.next_seq += 1
            state.turns.append(record)
            return record

    def mode_of(self, record: TurnRecord) -> str:
        return record.before.mode if record.before is not None else "files"

    def capture(self, record: TurnRecord, path: str, old_text: str | None = None,
                new_text: str | None = None) -> None:
        """Named files only: `path` as it is before the agent changes it, unless already
        captured this turn. A tool call's whole-file `old_text` is taken for the file as
        it was when the file already holds its `new_text` (codex sends whole files)."""
        before = record.before
        if before is None or before.mode != "files" or path in before.files:
            return
        if len(before.files) >= MAX_FILES_LISTED:
            return
        known = None
        if old_text is not None and new_text is not None:
            disk = self.current(path)
            if disk.data == new_text.encode("utf-8", "surrogateescape"):
                known = old_text.encode("utf-8", "surrogateescape")
        side, noted = self._files().side_now(path, known=known)
        files = dict(before.files)
        files[path] = side
        noted_map = dict(before.noted)
        if noted is not None:
            noted_map[path] = noted
        record.before = Snapshot("files", files=files, noted=noted_map)

    def late(self, record: TurnRecord,
             early: Mapping[str, tuple[bool, str | None, str | None]]) -> list[str]:
        """Of the files tool calls named before the "before" snapshot was complete, those
        it may hold changed already: it holds the tool call's new text (or its new
        snippet and not its old one) and did not at the end of the previous turn, or, with
        no text to compare (a command), the tool call had started by then."""
        previous = next((t for t in reversed(self.read_state().turns)
                         if t.seq < record.seq and t.after is not None), None)
        out = []
        for path, (started, old_text, new_text) in early.items():
            if new_text:
                held = self.content_before(record, path)
                new = new_text.encode("utf-8", "surrogateescape")
                old = (old_text or "").encode("utf-8", "surrogateescape")
                if held is not None and (held == new or (new in held
                                                         and not (old and old in held))) \
                        and (previous is None or held != self.content_in(previous.after, path)):
                    out.append(path)
            elif started:
                out.append(path)
        return out

    def content_before(self, record: TurnRecord, path: str) -> bytes | None:
        """`path` as the turn's "before" snapshot holds it (None: absent or not copied)."""
        return self.content_in(record.before, path)

    def content_in(self, before: Snapshot | None, path: str) -> bytes | None:
        if before is None:
            return None
        if before.mode == "files":
            side = before.files.get(path)
            return self._files().read([side]).get(side.blob) if side is not None else None
        if self.git is None:
            return None
        try:
            return self.git.run("cat-file", "blob", f"{before.commit}:{path}")
        except GitError:
            return None

    def person_saved(self, record: TurnRecord, path: str, before: bytes | None,
                     after: bytes | None) -> None:
        """The person saved `path` during the turn: that change is theirs (unless the
        snapshot before the turn, still under way then, already holds it)."""
        if len(record.person) >= MAX_PERSON_SAVES or before == after:
            return
        if after is not None and self.content_before(record, path) == after:
            return
        record.person.append(PersonSave(path, self.blobs.put(before) if before is not None
                                        else "", self.blobs.put(after) if after is not None
                                        else ""))

    def end(self, record: TurnRecord, stop_reason: str) -> TurnRecord:
        """The turn is over: the snapshot after it, what it changed, then pruning."""
        with self.locked() as state:
            after: Snapshot | None = None
            if self.mode_of(record) == "git":
                try:
                    after = self._snapshot(state)
                except GitError as exc:
                    record.incomplete = f"the snapshot after the turn failed: {exc}"
                if after is None and record.incomplete is None:
                    record.incomplete = state.why or "no snapshot after the turn"
            else:
                before = record.before or Snapshot("files")
                paths = set(before.files) | {p.path for p in record.person}
                for path in paths - set(before.files):
                    self.capture(record, path)
                after = self._files().take(sorted(paths))
            record.after = after
            record.ended = self.clock()
            record.stop_reason = stop_reason
            if after is not None:
                files = self.turn_files(record)
                record.files = [_summary(item) for item in files[:MAX_FILES_LISTED]]
                record.files_more = max(0, len(files) - MAX_FILES_LISTED)
            self._replace(state, record)
            self._prune(state)
            return record

    @staticmethod
    def _replace(state: StoreState, record: TurnRecord) -> None:
        for index, known in enumerate(state.turns):
            if known.seq == record.seq:
                state.turns[index] = record
                return
        state.turns.append(record)

    def _prune(self, state: StoreState) -> None:
        """Oldest turns first, past the count, then past the bytes (the newest stays; the
        size is measured every SIZE_CHECK_TURNS turns: a walk of the store costs)."""
        keep = max(1, self.settings.keep_turns)
        dropped = len(state.turns) > keep
        state.turns = state.turns[-keep:]
        seq = state.turns[-1].seq if state.turns else 0
        measure = self._over or seq - self._measured >= SIZE_CHECK_TURNS
        if measure:
            self._measured = seq
            self._over = wf.tree_bytes(self.dir) > self.settings.max_store_bytes
        if measure and self._over:
            while len(state.turns) > 1:
                del state.turns[:max(1, len(state.turns) // 4)]
                self._collect(state)
                if wf.tree_bytes(self.dir) <= self.settings.max_store_bytes:
                    break
            return
        if dropped:
            self._collect(state)

    def _collect(self, state: StoreState) -> None:
        """Remove what no recorded turn needs any more."""
        commits: list[str] = []
        blobs: set[str] = set()
        for turn in state.turns:
            for snapshot in (turn.before, turn.after):
                if snapshot is None:
                    continue
                if snapshot.mode == "git":
                    commits.append(snapshot.commit)
                blobs.update(side.blob for side in snapshot.files.values() if side.blob)
            for save in turn.person:
                blobs.update(b for b in (save.before, save.after) if b)
        git = self._git_snapshots()
        if git is not None and (self.dir / "git" / "HEAD").exists():
            with contextlib.suppress(GitError):
                git.keep(commits)
        self.blobs.keep_only(blobs)

    # ------------------------------------------------------------------ contents

    def turn_files(self, record: TurnRecord) -> list[FileContents]:
        """What the turn changed, file by file, the person's own saves taken out (a file
        only the person changed is not there)."""
        if record.before is None or record.after is None:
            return []
        backend = self.backend(self.mode_of(record))
        changes = backend.changes(record.before, record.after)
        data = backend.read([side for c in changes for side in (c.old, c.new)])
        saves: dict[str, list[PersonSave]] = {}
        for save in record.person:
            saves.setdefault(save.path, []).append(save)
        out = []
        for change in changes:
            if any(side.kind in ("file", "link") and side.blob not in data
                   for side in (change.old, change.new)):
                out.append(FileContents(change, None, None, "too much changed at once to "
                                        "read it", unread=True))
                continue
            before, after = _bytes(change.old, data), _bytes(change.new, data)
            note = ""
            mine = saves.get(change.path)
            if mine and change.old.kind != "noted" and change.new.kind != "noted":
                agent_after, clean = self._without_person(after, mine)
                if clean and agent_after == before:
                    continue  # only the person changed it
                if clean:
                    after = agent_after
                else:
                    note = "your own saves during the turn are in it too"
            out.append(FileContents(change, before, after, note))
        return out

    def _without_person(self, after: bytes | None,
                        saves: Sequence[PersonSave]) -> tuple[bytes | None, bool]:
        from louise.checkpoints.diffs import take_back

        current = after
        for save in reversed(saves):
            pre = self.blobs.get(save.before) if save.before else None
            post = self.blobs.get(save.after) if save.after else None
            back = take_back(pre, post, current)
            if not back.ok:
                return after, False
            current = back.result
        return current, True

    def steps(self, record: TurnRecord, item: FileContents) -> list[Step]:
        """The agent's changes to one file in one turn, in order: split where the person
        saved it during the turn."""
        change = item.change
        data = self.backend(self.mode_of(record)).read([change.old, change.new])
        first = _content(change.old, data)
        last = _content(change.new, data)
        points: list[Content] = [first]
        for save in record.person:
            if save.path != change.path:
                continue
            pre = self.blobs.get(save.before) if save.before else None
            post = self.blobs.get(save.after) if save.after else None
            mode = last[2] or 0o644
            points.append(("file", pre, mode) if pre is not None else ABSENT_CONTENT)
            points.append(("file", post, mode) if post is not None else ABSENT_CONTENT)
        points.append(last)
        return [Step(points[i], points[i + 1]) for i in range(0, len(points), 2)]

    def current(self, path: str) -> wf.OnDisk:
        return wf.read(self.workspace, path, self.settings.max_file_bytes)

def _bytes(side: Side, data: dict[str, bytes]) -> bytes | None:
    if side.kind in ("file", "link"):
        return data.get(side.blob, b"")
    return None


def _content(side: Side, data: dict[str, bytes]) -> Content:
    if side.kind in ("file", "link"):
        return (side.kind, data.get(side.blob, b""), side.mode)
    return ABSENT_CONTENT


def _summary(item: FileContents) -> FileSummary:
    from louise.checkpoints.diffs import counts

    change = item.change
    if change.old.kind == "noted" or change.new.kind == "noted":
        return FileSummary(change.path, "noted", 0, 0)
    status = "added" if not change.old.exists else \
        ("removed" if not change.new.exists else "modified")
    added, removed = counts(item.before, item.after)
    return FileSummary(change.path, status, added, removed)
