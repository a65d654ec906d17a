"""git, run for the checkpoint store only, in a fixed environment nothing of the person's or
the workspace's reaches.

The store is a repository of louise's own (`GIT_DIR` under louise's state directory, its
own index file) whose work tree is the workspace. git is started with a minimal
environment (no `HOME`, no system or global config, no editor, no pager, no terminal
prompts) and the same `-c` settings every time: no hooks, no fsmonitor, no line-ending
conversion, no attributes file of the person's. The workspace's own `.gitattributes`
cannot run code or change bytes either: the store's `info/attributes`, which wins over
every `.gitattributes`, unsets filters, text and encoding conversion, `ident` and diff
and merge drivers for every path. Only plumbing is used (`status`, `update-index`,
`write-tree`, `commit-tree`, `diff-tree --raw`, `cat-file`): no porcelain that could start
a pager, an editor or a textconv. The person's own `.git`, index and stash are never
named, so never touched.
"""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT = 120.0  # seconds for one git call (the first checkpoint of a big workspace)
MAX_GIT_OUTPUT = 64 * 1024 * 1024  # bytes read back from one call
MAX_STDERR = 64 * 1024
MIN_VERSION = (2, 20)
# Every path: stored as its bytes are, whatever the workspace's .gitattributes say.
ATTRIBUTES = ("* -text -eol -crlf -ident -filter -diff -merge -working-tree-encoding "
              "-export-subst -export-ignore -delta\n")
SETTINGS = (
    "core.bare=false",
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.symlinks=true",
    "core.quotePath=false",
    "core.attributesFile=/dev/null",
    "core.sparseCheckout=false",
    "core.splitIndex=false",
    "core.untrackedCache=true",
    "core.looseCompression=1",
    "core.fileMode=true",
    "core.ignoreCase=false",
    "core.precomposeUnicode=false",
    "core.protectNTFS=false",
    "core.trustctime=false",
    "index.version=4",
    "gc.auto=0",
    "maintenance.auto=false",
    "submodule.recurse=false",
    "status.showUntrackedFiles=all",
    "status.renames=false",
    "diff.renames=false",
    "advice.statusHints=false",
    "commit.gpgSign=false",
    "user.useConfigOnly=false",
)


class GitError(Exception):
    """git failed, timed out or is missing; the message is one line for a person."""


def find_git() -> str | None:
    """The git executable, if one that serves is on PATH (version 2.20 or later)."""
    path = shutil.which("git")
    if path is None:
        return None
    try:
        done = subprocess.run([path, "--version"], capture_output=True, timeout=10,
                              env=_base_env(), check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.decode("ascii", "replace").split()
    if done.returncode != 0 or len(words) < 3:
        return None
    try:
        version = tuple(int(part) for part in words[2].split(".")[:2])
    except ValueError:
        return None
    return path if version >= MIN_VERSION else None


def _base_env() -> dict[str, str]:
    return {"PATH": os.defpath, "LC_ALL": "C", "LANG": "C"}


@dataclass(frozen=True, slots=True)
class Git:
    """git for one store: `git_dir` (louise's), `work_tree` (the workspace)."""

    executable: str
    git_dir: Path
    work_tree: Path
    excludes: tuple[str, ...] = ()  # workspace paths never snapshotted (louise's own state)

    @property
    def index_file(self) -> Path:
        return self.git_dir / "louise-index"

    def env(self) -> dict[str, str]:
        """The whole environment git runs with: nothing inherited."""
        return {
            **_base_env(),
            "GIT_DIR": str(self.git_dir),
            "GIT_WORK_TREE": str(self.work_tree),
            "GIT_INDEX_FILE": str(self.index_file),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_AUTHOR_NAME": "louise",
            "GIT_AUTHOR_EMAIL": "louise@localhost",
            "GIT_COMMITTER_NAME": "louise",
            "GIT_COMMITTER_EMAIL": "louise@localhost",
            "GIT_PAGER": "cat",
            "GIT_EDITOR": "false",
            "HOME": str(self.git_dir),
            "XDG_CONFIG_HOME": str(self.git_dir),
        }

    def argv(self, args: Sequence[str]) -> list[str]:
        settings = [part for setting in (*SETTINGS,
                                         f"core.excludesFile={self.git_dir / 'info' / 'exclude'}")
                    for part in ("-c", setting)]
        return [self.executable, "--no-pager", "--literal-pathspecs", *settings, *args]

    def run(self, *args: str, stdin: bytes | None = None, timeout: float = GIT_TIMEOUT,
            max_output: int = MAX_GIT_OUTPUT) -> bytes:
        """Run git; its stdout (at most `max_output` bytes: past it git is stopped).
        GitError with git's first line of stderr on failure. It runs from the top of the
        work tree: git reads paths relative to where it runs, and the store may be inside
        the workspace."""
        try:
            process = subprocess.Popen(
                self.argv(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=self.env(), cwd=self.work_tree, umask=0o077)
        except OSError as exc:
            raise GitError(f"git could not run: {exc.strerror or exc}") from None
        try:
            out, err, over = _exchange(process, stdin or b"", timeout, max_output)
        except subprocess.TimeoutExpired:
            raise GitError(f"git {args[0]} took over {timeout:g} s") from None
        status = process.wait()
        if over:
            raise GitError(f"git {args[0]} said more than {max_output:,} bytes")
        if status != 0:
            first = err.decode("utf-8", "replace").strip().split("\n", 1)[0]
            raise GitError(f"git {args[0]} failed: {first[:300] or status}")
        return out

    def init(self) -> None:
        """Create the store's repository (private), once."""
        if (self.git_dir / "HEAD").exists():
            self._attributes()
            return
        self.git_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            done = subprocess.run(
                [self.executable, "init", "--quiet", "--bare", str(self.git_dir)],
                capture_output=True, timeout=GIT_TIMEOUT, check=False, umask=0o077,
                env={**_base_env(), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                     "HOME": str(self.git_dir), "GIT_TEMPLATE_DIR": ""})
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GitError(f"git init failed: {exc}") from None
        if done.returncode != 0:
            first = done.stderr.decode("utf-8", "replace").strip().split("\n", 1)[0]
            raise GitError(f"git init failed: {first[:300]}")
        hooks = self.git_dir / "hooks"
        if hooks.is_dir():  # no template hooks: they would never run, but no clutter either
            shutil.rmtree(hooks, ignore_errors=True)
        self._attributes()

    def _attributes(self) -> None:
        info = self.git_dir / "info"
        info.mkdir(mode=0o700, exist_ok=True)
        target = info / "attributes"
        if not target.exists() or target.read_text(encoding="utf-8") != ATTRIBUTES:
            target.write_text(ATTRIBUTES, encoding="utf-8")
        exclude = info / "exclude"
        wanted = "".join(f"/{_glob_escaped(path)}/\n" for path in self.excludes)
        if not exclude.exists() or exclude.read_text(encoding="utf-8") != wanted:
            exclude.write_text(wanted, encoding="utf-8")


def _exchange(process: subprocess.Popen[bytes], data: bytes, timeout: float,
              max_output: int) -> tuple[bytes, bytes, bool]:
    """Feed `data` to the process and read its stdout (at most `max_output` bytes: past
    it, it is killed) and stderr (its head), within `timeout` seconds; as `communicate`,
    bounded. (stdout, stderr, whether stdout went past its bound)."""
    assert process.stdin is not None and process.stdout is not None \
        and process.stderr is not None
    deadline = time.monotonic() + timeout
    out: list[bytes] = []
    err: list[bytes] = []
    sizes = {process.stdout: 0, process.stderr: 0}
    pending = memoryview(data)
    over = False
    with selectors.DefaultSelector() as selector:
        if pending:
            os.set_blocking(process.stdin.fileno(), False)
            selector.register(process.stdin, selectors.EVENT_WRITE)
        else:
            process.stdin.close()
        selector.register(process.stdout, selectors.EVENT_READ)
        selector.register(process.stderr, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                process.kill()
                process.wait()
                raise subprocess.TimeoutExpired(process.args, timeout)
            for key, _ in selector.select(left):
                stream = key.fileobj
                if stream is process.stdin:
                    try:
                        pending = pending[os.write(process.stdin.fileno(), pending[:1 << 16]):]
                    except BrokenPipeError:
                        pending = pending[:0]
                    if not pending:
                        selector.unregister(stream)
                        process.stdin.close()
                    continue
                assert stream is process.stdout or stream is process.stderr
                chunk = os.read(stream.fileno(), 1 << 16)
                if not chunk:
                    selector.unregister(stream)
                    stream.close()
                    continue
                sizes[stream] += len(chunk)
                if stream is process.stderr:
                    if sizes[stream] <= MAX_STDERR:
                        err.append(chunk)
                elif sizes[stream] > max_output:
                    over = True
                    process.kill()
                else:
                    out.append(chunk)
    return b"".join(out), b"".join(err), over


def _glob_escaped(path: str) -> str:
    """A path as a gitignore pattern that matches only itself."""
    return "".join(f"\\{c}" if c in "*?[]\\!# " else c for c in path)
