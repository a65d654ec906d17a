"""A directory swapped for a symlink while fs/* requests run (TOCTOU): nothing may be read
from or written outside the workspace, and every failure is a clean RpcError."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from louise.acp.errors import RpcError
from louise.capabilities.fs import FileAccess

pytestmark = pytest.mark.anyio

REQUESTS = 3000
WORKERS = 8


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Swapper(threading.Thread):
    """Flips `directory` between a real directory and a symlink to `outside` until
    stopped. A write may recreate the directory while it is away: that copy is removed."""

    def __init__(self, directory: Path, outside: Path) -> None:
        super().__init__(daemon=True)
        self.directory, self.outside = directory, outside
        self.parked = directory.with_name(directory.name + ".real")
        self.stop = threading.Event()
        self.swaps = 0
        self.failure: BaseException | None = None

    def _clear(self) -> None:
        # A writer may still be adding files to it: the caller retries until it is gone.
        with contextlib.suppress(OSError):
            if self.directory.is_symlink():
                os.unlink(self.directory)
            else:
                shutil.rmtree(self.directory)

    def _retry(self, action: Callable[[], None]) -> None:
        while True:
            try:
                action()
                return
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR):
                    raise
                self._clear()

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                os.rename(self.directory, self.parked)
                self._retry(lambda: os.symlink(self.outside, self.directory))
                os.unlink(self.directory)
                self._retry(lambda: os.rename(self.parked, self.directory))
                self.swaps += 1
        except BaseException as exc:
            self.failure = exc


async def run_requests(access: FileAccess, make: list[dict[str, str]], write: bool
                       ) -> tuple[list[str], list[BaseException]]:
    results: list[str] = []
    unexpected: list[BaseException] = []
    queue = list(reversed(make))

    async def worker() -> None:
        while queue:
            params = queue.pop()
            try:
                if write:
                    await access.write_text_file(params)
                else:
                    results.append((await access.read_text_file(params))["content"])
            except RpcError:
                pass  # refused or not found while the directory was away: fine
            except Exception as exc:  # anything else is a bug
                unexpected.append(exc)

    async with anyio.create_task_group() as tg:
        for _ in range(WORKERS):
            tg.start_soon(worker)
    return results, unexpected


async def test_swapping_a_directory_for_a_symlink_never_leaks_outside(tmp_path: Path) -> None:
    ws = (tmp_path / "ws").resolve()
    outside = (tmp_path / "outside").resolve()
    sub = ws / "sub"
    sub.mkdir(parents=True)
    outside.mkdir()
    (sub / "data.txt").write_text("inside\n")
    (outside / "data.txt").write_text("OUTSIDE\n")
    access = FileAccess([ws])

    swapper = Swapper(sub, outside)
    swapper.start()
    try:
        reads = [{"sessionId": "s", "path": str(sub / "data.txt")}] * REQUESTS
        contents, read_errors = await run_requests(access, reads, write=False)
        writes = [{"sessionId": "s", "path": str(sub / (f"new-{i}.txt" if i % 2 else "data.txt")),
                   "content": f"written {i}\n"} for i in range(REQUESTS)]
        _, write_errors = await run_requests(access, writes, write=True)
    finally:
        swapper.stop.set()
        swapper.join(timeout=60)

    leaked = [text for text in contents if text != "inside\n" and not text.startswith("written")]
    landed = sorted(p.name for p in outside.iterdir() if p.name != "data.txt")
    overwritten = (outside / "data.txt").read_text() != "OUTSIDE\n"
    assert (len(leaked), len(landed), overwritten) == (0, 0, False), (
        f"{len(leaked)} of {REQUESTS} reads came from outside the workspace, "
        f"{len(landed)} files were written there, outside data.txt overwritten: {overwritten}")
    assert read_errors == [] and write_errors == [], "failures other than a clean RpcError"
    # The race really ran, all along, and some requests got through.
    assert swapper.failure is None and swapper.swaps > 100, (swapper.failure, swapper.swaps)
    assert contents
