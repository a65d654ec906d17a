"""Checkpoints around every turn, off the turn's critical path (the registry's `TurnHooks`).

Timing, and the trade-off chosen:
- When a session opens, a first snapshot of its workspace is taken in the background (the
  costly one: every file is read once); later snapshots cost what changed files cost.
- When a turn starts, its "before" snapshot is started and the prompt goes to the agent
  at once: the first token never waits for it. If a snapshot of that workspace is already
  under way (the first one, or the previous turn's "after"), the turn takes that one as
  its "before" instead of waiting for it and taking another.
- louise holds the agent's `fs/write_text_file` and `terminal/create` requests, and its
  answers to the agent's permission requests, until the "before" snapshot is complete
  (`ready`, at most HOLD_SECONDS): an agent that asks before it edits or runs a command
  (claude, codex and vibe in their asking modes) changes nothing before it. An agent that
  writes without asking cannot be held: a tool call that reports changing files before
  the snapshot is complete is checked against it, and the turn's end line and review say
  its changes may be missing. In practice a model needs longer to answer than a snapshot
  after the first takes (bench/checkpoints.py).
- When the turn ends, the "after" snapshot is taken in the background and the line
  "N files changed (+a −b) · review" is added to the chat when it is done.

Every store operation of a workspace runs in one worker thread at a time, in order.

The store's modules (snapshots, git, diffs, undo, review: ~10 ms) are imported when a
workspace is first used, not with this module: the engine's start makes the service, and
a session's first snapshot imports them in its worker thread, off the event loop that
shows the chat (`_import_store`).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from louise.config.checkpoints import CheckpointsConfig
from louise.registry.turn_hooks import TurnInfo
from louise.storage import code_cache, paths

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from louise.checkpoints.records import TurnRecord
    from louise.checkpoints.workspace import WorkspaceStore

log = logging.getLogger("louise.checkpoints")

HOLD_SECONDS = 60.0  # the longest the agent's own fs writes and terminals wait for it
BEGUN_SECONDS = 2.0  # the longest a prompt waits for its snapshot to be under way
CLOSE_SECONDS = 120.0  # the longest closing waits for snapshots under way
WAIT_NOTICE_SECONDS = 1.0  # closing says why it waits after this long
LOOKING_KINDS = frozenset({"read", "search", "fetch", "think", "switch_mode"})
MAX_CAPTURED = 2_000
T = TypeVar("T")
_AUTO: Any = object()
STORE_MODULE = "louise.checkpoints.workspace"  # with it: store, snapshots, git, diffs, …


def _import_store() -> None:
    """The store's modules (see the module's docstring), with the program's compiled
    dataclass methods (`code_cache.import_module`)."""
    code_cache.import_module(STORE_MODULE)


def _relative(workspace: Path, path: str) -> str | None:
    """`path` inside `workspace`, relative (a store exists, so its modules are imported)."""
    from louise.checkpoints.workspace_files import relative_to

    return relative_to(workspace, path)


@dataclass(eq=False)
class Job:
    """A snapshot of a workspace under way."""

    started: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    record: TurnRecord | None = None  # set when it is a turn's "after"


class Workspace:
    """One workspace: its store, and its operations one at a time, in order."""

    def __init__(self, store: WorkspaceStore) -> None:
        self.store = store
        self.lock = anyio.Lock()
        self.snapshot: Job | None = None  # the snapshot under way, if any
        self.warmed = False
        self.told_files_only = False

    async def run(self, fn: Callable[[], T]) -> T:
        async with self.lock:
            return await anyio.to_thread.run_sync(fn)


class Checkpoints:
    """The checkpoint service: `TurnHooks` for the registry; reviews and undos for the
    editor."""

    def __init__(self, settings: CheckpointsConfig, root: Path | None = None, *,
                 git: str | None = _AUTO, clock: Callable[[], float] = time.time,
                 on_wait: Callable[[], None] | None = None) -> None:
        """`on_wait`: called once when closing waits for checkpoint work (the first
        checkpoint of a big workspace), so a command line can say why it is not done."""
        self.on_wait = on_wait
        self.settings = settings
        self.root = root
        self._git = git
        self.clock = clock
        self._workspaces: dict[str, Workspace] = {}
        self._tg: TaskGroup | None = None
        self._busy = 0
        self._idle = anyio.Event()
        self._idle.set()

    # ------------------------------------------------------------------ hooks

    def bind(self, task_group: TaskGroup) -> None:
        self._tg = task_group

    def workspace(self, cwd: str) -> Workspace:
        key = os.path.realpath(cwd)
        found = self._workspaces.get(key)
        if found is None:
            if self.root is None:
                self.root = paths.private_state_dir("checkpoints")
            from louise.checkpoints.git import find_git
            from louise.checkpoints.workspace import WorkspaceStore

            if self._git is _AUTO:
                self._git = find_git()
            store = WorkspaceStore(self.root, Path(key), self.settings, self._git, self.clock)
            found = self._workspaces[key] = Workspace(store)
        return found

    def _spawn(self, work: Callable[[], Awaitable[None]]) -> None:
        assert self._tg is not None, "bind() first"
        self._busy += 1
        self._idle = anyio.Event() if self._idle.is_set() else self._idle

        async def run() -> None:
            try:
                await work()
            except Exception:
                log.exception("a checkpoint failed")
            finally:
                self._busy -= 1
                if self._busy == 0:
                    self._idle.set()

        self._tg.start_soon(run)

    def session_opened(self, session_id: str, cwd: str) -> None:
        """Take the first (costly) snapshot of the workspace before the first prompt; the
        store's modules first, in a worker thread, when nothing has imported them yet."""
        if self._tg is None:
            return
        if STORE_MODULE in sys.modules:
            self._warm(cwd)
            return

        async def imported_then_warm() -> None:
            await anyio.to_thread.run_sync(_import_store)
            self._warm(cwd)

        self._spawn(imported_then_warm)

    def _warm(self, cwd: str) -> None:
        workspace = self.workspace(cwd)
        if workspace.warmed:
            return
        workspace.warmed = True
        self._start_snapshot(workspace, Job(), workspace.store.warm)

    def _start_snapshot(self, workspace: Workspace, job: Job,
                        fn: Callable[[], Any]) -> None:
        async def snapshot() -> None:
            from louise.checkpoints.git import GitError

            try:
                async with workspace.lock:
                    workspace.snapshot = job
                    job.started.set()
                    await anyio.to_thread.run_sync(fn)
            except (GitError, OSError) as exc:
                log.warning("checkpoint of %s: %s", workspace.store.workspace, exc)
            finally:
                job.started.set()
                job.done.set()
                if workspace.snapshot is job:
                    workspace.snapshot = None

        self._spawn(snapshot)

    def turn_started(self, info: TurnInfo) -> Watch:
        workspace = self.workspace(info.cwd)
        workspace.warmed = True
        watch = Watch(self, workspace, info)
        self._spawn(watch.begin)
        return watch

    async def aclose(self) -> None:
        with anyio.move_on_after(CLOSE_SECONDS):
            with anyio.move_on_after(WAIT_NOTICE_SECONDS):
                await self._idle.wait()
                return
            if self.on_wait is not None:
                self.on_wait()
            await self._idle.wait()

    async def idle(self) -> None:
        """Returns when no checkpoint work is under way (tests, the CLI)."""
        await self._idle.wait()


class Watch:
    """One turn's checkpoints (the registry's `TurnWatch`)."""

    def __init__(self, service: Checkpoints, workspace: Workspace, info: TurnInfo) -> None:
        self.service = service
        self.workspace = workspace
        self.info = info
        self.record: TurnRecord | None = None
        self._begun = anyio.Event()
        self._ready = anyio.Event()
        # Files tool calls named before the snapshot was complete: (the tool call had
        # started, its old text, its new text), and the tool calls that named them; a
        # tool call whose permission louise answered after the snapshot changed nothing
        # before it.
        self._early: dict[str, tuple[bool, str | None, str | None]] = {}
        self._early_calls: dict[str, set[str]] = {}
        self._asked: set[str] = set()
        self._captures: list[tuple[str, str | None, str | None]] = []
        self._saves: list[tuple[str, bytes | None, bytes | None]] = []
        self._files_only = False
        self.incomplete: str | None = None

    @property
    def store(self) -> WorkspaceStore:
        return self.workspace.store

    async def begin(self) -> None:
        """Join the snapshot under way, or take one; then record the turn."""
        store = self.store
        try:
            joined = self.workspace.snapshot
            if joined is not None and joined.started.is_set():
                self._begun.set()
                await joined.done.wait()
                reuse = joined.record.after if joined.record is not None else store.last
                self.record = await self.workspace.run(
                    lambda: store.begin(self.info.session_id, self.info.agent,
                                        self.info.prompt, reuse=reuse))
            else:
                job = Job()
                async with self.workspace.lock:
                    self.workspace.snapshot = job
                    job.started.set()
                    self._begun.set()
                    try:
                        self.record = await anyio.to_thread.run_sync(
                            lambda: store.begin(self.info.session_id, self.info.agent,
                                                self.info.prompt))
                    finally:
                        job.done.set()
                        self.workspace.snapshot = None
            self._files_only = store.mode_of(self.record) == "files"
            if self._files_only:
                self._tell_files_only()
                await self._flush()
            else:
                self._captures = []
        finally:
            self._begun.set()
            self._ready.set()

    def _tell_files_only(self) -> None:
        if self.workspace.told_files_only:
            return
        self.workspace.told_files_only = True
        why = self.store.read_state().why or "no git snapshot"
        self.info.note("info", f"checkpoints: {why}, so only the files tool calls name and "
                       "louise writes are tracked; changes made by shell commands are not",
                       None)

    async def begun(self) -> None:
        with anyio.move_on_after(BEGUN_SECONDS):
            await self._begun.wait()

    async def ready(self) -> None:
        with anyio.move_on_after(HOLD_SECONDS):
            await self._ready.wait()
            await self._flush()  # files named so far are copied before it goes on
            return
        self.incomplete = (f"the snapshot before the turn took over {HOLD_SECONDS:g} s; "
                           "the agent went on")

    async def before_write(self, path: Path) -> None:
        relative = _relative(self.store.workspace, str(path))
        if relative is None or not self._files_only:
            return
        self._captures.append((relative, None, None))
        await self._flush()

    def asked(self, tool_call_id: str) -> None:
        self._asked.add(tool_call_id)

    def _late_candidates(self) -> dict[str, tuple[bool, str | None, str | None]]:
        """The early files not only named by tool calls louise held until the snapshot."""
        held = {path for call in self._asked for path in self._early_calls.get(call, ())}
        free = {path for call, paths in self._early_calls.items() if call not in self._asked
                for path in paths}
        return {path: value for path, value in self._early.items()
                if path in free or path not in held}

    def tool_call(self, tool_call_id: str, kind: str, status: str | None,
                  paths: Sequence[str], diffs: Sequence[Mapping[str, Any]]) -> None:
        if kind in LOOKING_KINDS:
            return
        from louise.checkpoints.records import MAX_LATE_PATHS

        workspace = self.store.workspace
        relative = [r for p in paths if (r := _relative(workspace, p))]
        texts: dict[str, tuple[str | None, str | None]] = {}
        for item in diffs:
            raw = item.get("path")
            where = _relative(workspace, raw) if isinstance(raw, str) else None
            if where is not None:
                old, new = item.get("oldText"), item.get("newText")
                texts[where] = (old if isinstance(old, str) else None,
                                new if isinstance(new, str) else None)
        ready = self._ready.is_set()
        if not ready:
            # Reported before the snapshot was complete: checked against it once it is.
            started = status not in (None, "pending")
            for path in relative or (["(a command)"] if kind == "execute" else []):
                if len(self._early) < MAX_LATE_PATHS:
                    self._early[path] = (started or self._early.get(path, (False,))[0],
                                         *texts.get(path, (None, None)))
                    self._early_calls.setdefault(tool_call_id, set()).add(path)
        elif not self._files_only:
            return
        for path in relative:  # named files only: copied before the agent changes them
            if len(self._captures) < MAX_CAPTURED:
                self._captures.append((path, *texts.get(path, (None, None))))
        if ready:
            self.service._spawn(self._flush)

    def person_saved(self, path: Path, before: bytes | None, after: bytes | None) -> None:
        relative = _relative(self.store.workspace, str(path))
        if relative is not None and len(self._saves) < MAX_CAPTURED:
            self._saves.append((relative, before, after))

    async def _flush(self) -> None:
        """Named files only: copy the files named so far, as they are before the change."""
        record = self.record
        if record is None or not self._files_only:
            return
        captures, self._captures = self._captures, []
        if captures:
            store = self.store

            def capture_all() -> None:
                for capture in captures:
                    store.capture(record, *capture)

            await self.workspace.run(capture_all)

    def ended(self, stop_reason: str) -> None:
        self.service._spawn(lambda: self._end(stop_reason))

    async def _end(self, stop_reason: str) -> None:
        await self._ready.wait()
        record = self.record
        if record is None:
            return
        store = self.store
        captures, self._captures = self._captures, []
        saves, early, incomplete = list(self._saves), self._late_candidates(), \
            self.incomplete

        from louise.checkpoints.records import MAX_LATE_PATHS

        def finish() -> TurnRecord:
            for capture in captures:
                store.capture(record, *capture)
            for path, before, after in saves:
                store.person_saved(record, path, before, after)
            record.late = store.late(record, early)[:MAX_LATE_PATHS] if early else []
            record.incomplete = record.incomplete or incomplete
            return store.end(record, stop_reason)

        job = Job(record=record)
        async with self.workspace.lock:
            self.workspace.snapshot = job
            job.started.set()
            try:
                await anyio.to_thread.run_sync(finish)
            finally:
                job.done.set()
                self.workspace.snapshot = None
        self._tell_changes(record)

    def _tell_changes(self, record: TurnRecord) -> None:
        if record.changed_files == 0 and not record.late and not record.incomplete:
            return
        from louise.checkpoints.review import summary

        text = (summary([(f.added, f.removed) for f in record.files], record.files_more)
                if record.changed_files else "no files changed") + " · review"
        if record.late:
            shown = ", ".join(record.late[:3]) + (" …" if len(record.late) > 3 else "")
            text += f" · may miss changes made before the checkpoint was done ({shown})"
        elif record.incomplete:
            text += f" · {record.incomplete}"
        self.info.note("changes", text, {"review": {"seq": record.seq,
                                                    "turn": record.number}})


