"""Snapshots of a workspace's files, and what changed between two of them.

Two kinds, one interface:
- `GitSnapshots`: the whole workspace, in louise's own git repository (`git.py`): the
  files `git status` says changed since the last snapshot go into the store's index
  (`.gitignore` honoured), then `write-tree` and `commit-tree`; after the first, a
  snapshot costs what the changed files cost. Files over the size limit, binary files,
  special files and repositories nested in the workspace are noted (size and time), not
  copied.
- `FileSnapshots`: without git: only the files named to it (by tool calls and louise's
  own writes), copied into content-addressed blobs.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from louise.checkpoints import workspace_files as wf
from louise.checkpoints.diffs import is_binary
from louise.checkpoints.git import Git, GitError

MAX_NOTED = 1_000  # noted paths kept per snapshot (more are counted, not named)
MAX_CHANGED_READ = 64 * 1024 * 1024  # bytes of file contents read for one comparison
ZERO = "0" * 40

SideKind = Literal["file", "link", "absent", "noted"]


class TooBig(Exception):
    """The workspace is over the limits of whole-workspace snapshots."""


@dataclass(frozen=True, slots=True)
class Noted:
    """A file seen but not copied: too large, binary, special, or a nested repository."""

    size: int
    mtime_ns: int
    why: str

    def to_json(self) -> list[Any]:
        return [self.size, self.mtime_ns, self.why]

    @classmethod
    def from_json(cls, value: Any) -> Noted | None:
        if isinstance(value, list) and len(value) == 3 and isinstance(value[0], int) \
                and isinstance(value[1], int) and isinstance(value[2], str):
            return cls(value[0], value[1], value[2][:40])
        return None


@dataclass(frozen=True, slots=True)
class Side:
    """A file in a snapshot: its kind, blob id (git object id or sha256), mode."""

    kind: SideKind
    blob: str = ""
    mode: int = 0o644
    why: str = ""  # for a noted file: why it was not copied

    @property
    def exists(self) -> bool:
        return self.kind != "absent"


ABSENT = Side("absent")


@dataclass(frozen=True, slots=True)
class Change:
    path: str
    old: Side
    new: Side


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A git commit, or a manifest of named files; plus the noted files."""

    mode: Literal["git", "files"]
    commit: str = ""
    files: Mapping[str, Side] = field(default_factory=dict)
    noted: Mapping[str, Noted] = field(default_factory=dict)
    noted_more: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode,
                               "noted": {p: n.to_json() for p, n in self.noted.items()}}
        if self.noted_more:
            out["noted_more"] = self.noted_more
        if self.mode == "git":
            out["commit"] = self.commit
        else:
            out["files"] = {p: [s.kind, s.blob, s.mode] for p, s in self.files.items()}
        return out

    @classmethod
    def from_json(cls, value: Any) -> Snapshot | None:
        if not isinstance(value, dict) or value.get("mode") not in ("git", "files"):
            return None
        noted_raw = value.get("noted")
        noted = {str(p): n for p, raw in (noted_raw.items() if isinstance(noted_raw, dict)
                                          else ()) if (n := Noted.from_json(raw)) is not None}
        more_raw = value.get("noted_more")
        more = more_raw if isinstance(more_raw, int) else 0
        if value["mode"] == "git":
            commit = value.get("commit")
            if not isinstance(commit, str) or len(commit) not in (40, 64):
                return None
            return cls("git", commit=commit, noted=noted, noted_more=more)
        files: dict[str, Side] = {}
        raw_files = value.get("files")
        for path, raw in (raw_files.items() if isinstance(raw_files, dict) else ()):
            if isinstance(raw, list) and len(raw) == 3 and raw[0] in ("file", "link",
                                                                      "absent", "noted") \
                    and isinstance(raw[1], str) and isinstance(raw[2], int):
                files[str(path)] = Side(raw[0], raw[1], raw[2])
        return cls("files", files=files, noted=noted, noted_more=more)


def _noted_side(noted: Noted) -> Side:
    return Side("noted", "", 0o644, noted.why)


def noted_changes(a: Snapshot, b: Snapshot) -> dict[str, tuple[Noted | None, Noted | None]]:
    """Noted files that differ between `a` and `b` (appeared, went, or changed)."""
    out = {}
    for path in set(a.noted) | set(b.noted):
        old, new = a.noted.get(path), b.noted.get(path)
        if old != new:
            out[path] = (old, new)
    return out


# ------------------------------------------------------------------ git


class GitSnapshots:
    """Whole-workspace snapshots in louise's own git repository."""

    def __init__(self, git: Git, *, max_file_bytes: int, max_files: int,
                 max_bytes: int) -> None:
        self.git = git
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self.max_bytes = max_bytes
        self._trees: dict[str, str] = {}  # commit -> its tree, of the commits made here

    def take(self, previous: Snapshot | None) -> Snapshot:
        """A snapshot of the workspace now. TooBig when it is over the limits (files or
        bytes to copy); GitError when git fails."""
        self.git.init()
        listing = self.git.run("status", "--porcelain=v1", "-z", "--untracked-files=all",
                               "--no-renames", "--ignore-submodules=all")
        entries = [item for item in listing.split(b"\0") if len(item) > 3]
        if len(entries) > self.max_files:
            raise TooBig(f"{len(entries):,} files changed or new (limit {self.max_files:,})")
        add: list[bytes] = []
        drop: list[bytes] = []
        noted: dict[str, Noted] = {}
        more = 0
        copied = 0
        staged = False  # the index differs from HEAD (a snapshot was cut short)
        for entry in entries:
            x, y, raw = entry[:1], entry[1:2], entry[3:]
            staged = staged or x not in (b" ", b"?")
            path = raw.decode("utf-8", "surrogateescape")
            if path.endswith("/"):  # a repository of its own inside the workspace
                more += self._note(noted, path.rstrip("/"), Noted(0, 0, "repository"))
                continue
            if y == b" ":
                continue  # the index already has it as it is
            tracked = x != b"?"
            seen = self._look(path)
            if isinstance(seen, Noted):
                more += self._note(noted, path, seen)
                if tracked:
                    drop.append(raw)
            elif seen is None:
                drop.append(raw)
            else:
                copied += seen
                add.append(raw)
        if copied > self.max_bytes:
            raise TooBig(f"{copied / 1048576:,.0f} MB to copy (limit "
                         f"{self.max_bytes / 1048576:,.0f} MB)")
        if add:
            self.git.run("update-index", "--add", "--remove", "-z", "--stdin",
                         stdin=b"\0".join(add) + b"\0")
        if drop:
            self.git.run("update-index", "--force-remove", "-z", "--stdin",
                         stdin=b"\0".join(drop) + b"\0")
        if previous is not None and previous.mode == "git" and not add and not drop \
                and not staged and self._head() == previous.commit:
            # Nothing changed since `previous`, and nobody else took a snapshot since.
            return Snapshot("git", commit=previous.commit, noted=noted, noted_more=more)
        tree = self.git.run("write-tree").strip().decode("ascii")
        if previous is not None and previous.mode == "git" and not add and not drop:
            head = previous.commit
            if self._tree_of(head) == tree:
                return Snapshot("git", commit=head, noted=noted, noted_more=more)
        parent = ["-p", previous.commit] if previous is not None and previous.mode == "git" \
            else []
        commit = self.git.run("commit-tree", tree, *parent, "-m", "louise checkpoint",
                              ).strip().decode("ascii")
        self._trees[commit] = tree
        # HEAD (so that `status` lists only what changed since) and a ref that keeps it.
        self.git.run("update-ref", "--no-deref", "--stdin", stdin=(
            f"update HEAD {commit}\nupdate refs/louise/{commit} {commit}\n").encode())
        return Snapshot("git", commit=commit, noted=noted, noted_more=more)

    @staticmethod
    def _note(noted: dict[str, Noted], path: str, what: Noted) -> int:
        if len(noted) >= MAX_NOTED:
            return 1
        noted[path] = what
        return 0

    def _look(self, path: str) -> Noted | int | None:
        """What a changed path is now: None (gone), a Noted (not to be copied), or the
        bytes it will take to copy it."""
        full = self.git.work_tree / path
        try:
            info = os.lstat(full)
        except FileNotFoundError:
            return None
        except OSError:
            return Noted(0, 0, "unreadable")
        if stat.S_ISLNK(info.st_mode):
            return len(os.fsencode(path))
        if not stat.S_ISREG(info.st_mode):
            return Noted(0, info.st_mtime_ns, "special file")
        if info.st_size > self.max_file_bytes:
            return Noted(info.st_size, info.st_mtime_ns, "large")
        try:
            fd = os.open(full, wf.READ_FLAGS)
        except OSError:
            return Noted(info.st_size, info.st_mtime_ns, "unreadable")
        try:
            head = os.read(fd, 8000)
        finally:
            os.close(fd)
        if is_binary(head):
            return Noted(info.st_size, info.st_mtime_ns, "binary")
        return info.st_size

    def _head(self) -> str:
        """The commit HEAD names (louise keeps it detached), read without git."""
        try:
            return (self.git.git_dir / "HEAD").read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            return ""

    def _tree_of(self, commit: str) -> str:
        if commit in self._trees:
            return self._trees[commit]
        try:
            return self.git.run("rev-parse", "--verify", "--quiet",
                                f"{commit}^{{tree}}").strip().decode("ascii")
        except GitError:
            return ""

    def changes(self, a: Snapshot, b: Snapshot) -> list[Change]:
        """Every file that differs between two snapshots."""
        out: dict[str, Change] = {}
        if a.commit != b.commit:
            raw = self.git.run("diff-tree", "-r", "-z", "--raw", "--no-renames",
                               "--no-abbrev", "--ignore-submodules=all", a.commit, b.commit)
            fields = raw.split(b"\0")
            i = 0
            while i + 1 < len(fields):
                meta, name = fields[i], fields[i + 1]
                i += 2
                if not meta.startswith(b":"):
                    continue
                parts = meta[1:].split(b" ")
                if len(parts) < 5:
                    continue
                path = name.decode("utf-8", "surrogateescape")
                out[path] = Change(path, _git_side(parts[0], parts[2]),
                                   _git_side(parts[1], parts[3]))
        for path, (old, new) in noted_changes(a, b).items():
            known = out.get(path)
            old_side = _noted_side(old) if old is not None else \
                (known.old if known is not None else ABSENT)
            new_side = _noted_side(new) if new is not None else \
                (known.new if known is not None else ABSENT)
            if old is None and known is None:
                old_side = self._side_in(a, path)
            if new is None and known is None:
                new_side = self._side_in(b, path)
            out[path] = Change(path, old_side, new_side)
        return [out[path] for path in sorted(out)]

    def _side_in(self, snapshot: Snapshot, path: str) -> Side:
        try:
            raw = self.git.run("ls-tree", "-z", "--full-tree", snapshot.commit, "--", path)
        except GitError:
            return ABSENT
        meta = raw.split(b"\t", 1)[0].split(b" ")
        if len(meta) == 3:
            return _git_side(meta[0], meta[2])
        return ABSENT

    def read(self, sides: Iterable[Side]) -> dict[str, bytes]:
        """The contents of these blobs (by id), read in one go: at most MAX_CHANGED_READ
        bytes in all (a blob that does not fit is left out: the caller says so)."""
        wanted = sorted({s.blob for s in sides if s.kind in ("file", "link") and s.blob})
        if not wanted:
            return {}
        listing = "\n".join(wanted).encode() + b"\n"
        sizes: dict[str, int] = {}
        for line in self.git.run("cat-file", "--batch-check", stdin=listing).split(b"\n"):
            parts = line.split(b" ")
            if len(parts) == 3 and parts[1] == b"blob":
                sizes[parts[0].decode("ascii")] = int(parts[2])
        chosen: list[str] = []
        total = 0
        for oid in wanted:
            size = sizes.get(oid)
            if size is not None and total + size <= MAX_CHANGED_READ:
                chosen.append(oid)
                total += size
        if not chosen:
            return {}
        raw = self.git.run("cat-file", "--batch",
                           stdin="\n".join(chosen).encode() + b"\n",
                           max_output=total + 100 * len(chosen) + 4096)
        out: dict[str, bytes] = {}
        at = 0
        while at < len(raw):
            end = raw.index(b"\n", at)
            header = raw[at:end].split(b" ")
            at = end + 1
            if len(header) != 3:
                continue  # "<id> missing"
            size = int(header[2])
            out[header[0].decode("ascii")] = raw[at:at + size]
            at += size + 1
        return out

    def keep(self, commits: Sequence[str]) -> None:
        """Drop every commit not in `commits` (refs rewritten, then unreachable objects
        pruned). Each snapshot's commit has a ref (`refs/louise/<commit>`) until then."""
        refs = self.git.run("for-each-ref", "--format=%(refname)", "refs/louise/")
        lines = [line for line in refs.decode("utf-8", "replace").split("\n") if line]
        stdin = "".join(f"delete {ref}\n" for ref in lines)
        stdin += "".join(f"update refs/louise/{commit} {commit}\n" for commit in commits)
        self.git.run("update-ref", "--stdin", stdin=stdin.encode())
        self.git.run("prune", "--expire=now")




def _git_side(mode: bytes, object_id: bytes) -> Side:
    value = int(mode, 8)
    oid = object_id.decode("ascii")
    if value == 0 or oid.strip("0") == "":
        return ABSENT
    if stat.S_ISLNK(value):
        return Side("link", oid, 0o777)
    if value == 0o160000:
        return Side("noted", "", 0, "repository")
    return Side("file", oid, stat.S_IMODE(value))


# ------------------------------------------------------------------ named files only


class FileSnapshots:
    """Snapshots of named files only (no git): copies in content-addressed blobs."""

    def __init__(self, workspace: Path, blobs: wf.Blobs, *, max_file_bytes: int) -> None:
        self.workspace = workspace
        self.blobs = blobs
        self.max_file_bytes = max_file_bytes

    def side_now(self, path: str, *, known: bytes | None = None) -> tuple[Side, Noted | None]:
        """The file as it is now (or `known`, its content as a tool call reported it
        before the change), copied."""
        if known is not None:
            return Side("file", self.blobs.put(known)), None
        disk = wf.read(self.workspace, path, self.max_file_bytes)
        if disk.kind == "absent":
            return ABSENT, None
        if disk.kind == "link" and disk.data is not None:
            return Side("link", self.blobs.put(disk.data), 0o777), None
        if disk.kind == "file" and disk.data is not None and not is_binary(disk.data):
            return Side("file", self.blobs.put(disk.data), disk.mode), None
        why = "large" if disk.kind == "file" and disk.data is None else \
            ("binary" if disk.kind == "file" else "special file")
        noted = Noted(disk.size, disk.mtime_ns, why)
        return _noted_side(noted), noted

    def take(self, paths: Iterable[str]) -> Snapshot:
        files: dict[str, Side] = {}
        noted: dict[str, Noted] = {}
        for path in paths:
            side, seen = self.side_now(path)
            files[path] = side
            if seen is not None:
                noted[path] = seen
        return Snapshot("files", files=files, noted=noted)

    def changes(self, a: Snapshot, b: Snapshot) -> list[Change]:
        out = []
        for path in sorted(set(a.files) | set(b.files)):
            old, new = a.files.get(path, ABSENT), b.files.get(path, ABSENT)
            if old != new or (old.kind == "noted" and a.noted.get(path) != b.noted.get(path)):
                out.append(Change(path, old, new))
        return out

    def read(self, sides: Iterable[Side]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for side in sides:
            if side.kind in ("file", "link") and side.blob and side.blob not in out:
                data = self.blobs.get(side.blob)
                if data is not None:
                    out[side.blob] = data
        return out
