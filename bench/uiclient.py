"""A small msgpack-RPC client for `nvim --embed` that is also its UI.

It attaches with `ext_linegrid`, keeps a screen model of grid 1 from `grid_line`,
`grid_scroll`, `grid_clear` and `grid_resize` (the text and the highlight id of every
cell, with the attributes of each id from `hl_attr_define`), and calls its flush hooks on
every `flush` with the time the flush was read (`time.monotonic_ns()`, the same
CLOCK_MONOTONIC as `vim.uv.hrtime()` and the bench agents' stream stamps on Linux).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgpack

FlushHook = Callable[[int, "UIClient"], None]


class NvimExited(RuntimeError):
    pass


class UIClient:
    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str,
                 width: int = 120, height: int = 40) -> None:
        self.proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=dict(env), cwd=cwd,
                                     bufsize=0)
        self.pid = self.proc.pid
        self.width, self.height = width, height
        self.rows: list[list[str]] = [[" "] * width for _ in range(height)]
        self.hl_rows: list[list[int]] = [[0] * width for _ in range(height)]
        self.attrs: dict[int, dict[str, Any]] = {}  # hl id -> rgb attributes
        self.flushes = 0
        self.last_flush_ns = 0
        self.flush_hooks: list[FlushHook] = []
        self.lock = threading.Lock()  # guards the screen model and the hooks
        self._wlock = threading.Lock()
        self._packer = msgpack.Packer()
        self._msgid = 0
        self._pending: dict[int, list[Any]] = {}
        self._closed = threading.Event()
        self._reader = threading.Thread(target=self._read, name="ui-reader", daemon=True)
        self._reader.start()
        # Without --headless, `nvim --embed` waits for a UI before it runs the init.
        self.request("nvim_ui_attach", width, height, {"ext_linegrid": True, "rgb": True})

    # ------------------------------------------------------------------ rpc

    def _send(self, message: list[Any]) -> None:
        data = self._packer.pack(message)
        assert self.proc.stdin is not None
        with self._wlock:
            self.proc.stdin.write(data)

    def request(self, method: str, *args: Any, timeout: float = 30.0) -> Any:
        if self._closed.is_set():
            raise NvimExited(method)
        event = threading.Event()
        with self._wlock:
            self._msgid += 1
            msgid = self._msgid
        slot: list[Any] = [event, None, None]
        self._pending[msgid] = slot
        self._send([0, msgid, method, list(args)])
        if not event.wait(timeout):
            self._pending.pop(msgid, None)
            raise TimeoutError(f"{method}: no answer in {timeout:g} s")
        self._pending.pop(msgid, None)
        if slot[1] is not None:
            raise RuntimeError(f"{method}: {slot[1]}")
        return slot[2]

    def notify(self, method: str, *args: Any) -> None:
        self._send([2, method, list(args)])

    def lua(self, code: str, *args: Any, timeout: float = 30.0) -> Any:
        return self.request("nvim_exec_lua", code, list(args), timeout=timeout)

    def _read(self) -> None:
        unpacker = msgpack.Unpacker(raw=False, max_buffer_size=1 << 30)
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        try:
            while True:
                data = os.read(fd, 1 << 16)
                if not data:
                    break
                unpacker.feed(data)
                for message in unpacker:
                    self._dispatch(message)
        finally:
            self._closed.set()
            for slot in list(self._pending.values()):
                slot[1] = "nvim exited"
                slot[0].set()

    def _dispatch(self, message: list[Any]) -> None:
        kind = message[0]
        if kind == 1:
            slot = self._pending.get(message[1])
            if slot is not None:
                slot[1], slot[2] = message[2], message[3]
                slot[0].set()
        elif kind == 2 and message[1] == "redraw":
            self._redraw(message[2])
        elif kind == 0:  # a request from Neovim: we serve none
            self._send([1, message[1], "no handler", None])

    # ------------------------------------------------------------------ screen

    def _redraw(self, batches: list[Any]) -> None:
        with self.lock:
            for batch in batches:
                name, calls = batch[0], batch[1:]
                if name == "grid_line":
                    for call in calls:
                        self._grid_line(call[0], call[1], call[2], call[3])
                elif name == "hl_attr_define":
                    for call in calls:
                        self.attrs[call[0]] = call[1]
                elif name == "grid_scroll":
                    for grid, top, bot, left, right, rows, _cols in calls:
                        if grid == 1:
                            self._scroll(top, bot, left, right, rows)
                elif name == "grid_clear":
                    self._clear()
                elif name == "grid_resize":
                    for grid, width, height in calls:
                        if grid == 1:
                            self.width, self.height = width, height
                            self._clear()
                elif name == "flush":
                    now = time.monotonic_ns()
                    self.flushes += 1
                    self.last_flush_ns = now
                    for hook in list(self.flush_hooks):
                        hook(now, self)

    def _clear(self) -> None:
        self.rows = [[" "] * self.width for _ in range(self.height)]
        self.hl_rows = [[0] * self.width for _ in range(self.height)]

    def _grid_line(self, grid: int, row: int, col: int, cells: list[Any]) -> None:
        if grid != 1 or not 0 <= row < self.height:
            return
        line, hls = self.rows[row], self.hl_rows[row]
        hl = 0
        for cell in cells:
            text = cell[0]
            if len(cell) > 1:
                hl = cell[1]
            repeat = cell[2] if len(cell) > 2 else 1
            for _ in range(repeat):
                if col < self.width:
                    line[col] = text
                    hls[col] = hl
                col += 1

    def _scroll(self, top: int, bot: int, left: int, right: int, rows: int) -> None:
        for grid in (self.rows, self.hl_rows):
            old = [list(grid[r]) for r in range(top, bot)]
            for r in range(top, bot):
                src = r + rows
                if top <= src < bot:
                    grid[r][left:right] = old[src - top][left:right]

    def cell_attrs(self, row: int, col: int) -> dict[str, Any]:
        """The attributes a cell is drawn with (call with `lock` held)."""
        return self.attrs.get(self.hl_rows[row][col], {})

    def row_text(self, row: int, col: int = 0, width: int | None = None) -> str:
        """Call with `lock` held (flush hooks run with it held)."""
        end = self.width if width is None else col + width
        return "".join(self.rows[row][col:end])

    def screen_text(self) -> str:
        with self.lock:
            return "\n".join("".join(r) for r in self.rows)

    # ------------------------------------------------------------------ end

    def close(self, timeout: float = 5.0) -> None:
        """Quit Neovim; kill it if it does not go."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.notify("nvim_command", "qa!")
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        self._reader.join(timeout)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc; 0.0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wakeups(pid: int) -> int:
    """Voluntary context switches of a process (all its live threads), from /proc: each
    is a wait for something (a timer, a socket, a pipe, a lock) and the wake-up after it."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total


def children(pid: int) -> list[int]:
    """Direct children of a process (all threads), from /proc."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out.extend(int(p) for p in f.read().split())
        except OSError:
            continue
    return out
