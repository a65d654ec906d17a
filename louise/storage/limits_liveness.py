"""Liveness records of the processes that hold a live limits-capable Session (see
`louise.storage.limits_cache`: a record is live when a process with that pid exists and has the
recorded start token), and those records as the cache file holds them. Split out of
`limits_cache.py` (module size rule); re-exported there.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from typing import Any, Final

# Above any real pid (Linux caps pid_max at 2**22) and below what os.kill accepts.
MAX_PID: Final = 2**31 - 1
MAX_HOLDERS: Final = 16  # records kept per Agent in the cache file
MAX_START_TOKEN: Final = 200  # characters of a start token


@dataclass(frozen=True, slots=True)
class Holder:
    """A process holding a live capable Session: pid plus a start token (None: unknown)."""

    pid: int
    start: str | None


@functools.lru_cache(maxsize=1)
def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as boot_id:
            return boot_id.read().strip()
    except OSError:
        return ""


def _linux_start_token(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself contain ") "; the fields
    # after the last ")" start at field 3 (state), so field 22 (starttime) is index 19.
    fields = data[data.rfind(b")") + 2 :].split()
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    return f"linux:{_boot_id()}:{int(fields[19])}"


def _ps_start_token(pid: int) -> str | None:
    import subprocess  # here: only where /proc is missing (not on Linux)

    try:
        result = subprocess.run(
            ["ps", "-o", "lstart=", "-p", str(pid)],
            capture_output=True,
            text=True,
            env={**os.environ, "LC_ALL": "C"},
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    started = " ".join(result.stdout.split())
    if result.returncode != 0 or not started:
        return None
    return f"ps:{started}"


def process_start_token(pid: int) -> str | None:
    """An opaque token identifying the process `pid` *and* when it started, or None when the
    process does not exist or its start time cannot be read."""
    if not 0 < pid <= MAX_PID:
        return None
    if sys.platform.startswith("linux"):
        return _linux_start_token(pid)
    if os.name == "posix":
        return _ps_start_token(pid)
    return None


def _pid_exists(pid: int) -> bool:
    if os.name != "posix":
        return False  # os.kill(pid, 0) would terminate the process on Windows
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def _own_token(pid: int) -> str | None:
    return process_start_token(pid)


def current_holder() -> Holder:
    """This process as a holder record (the pid is re-read so a fork gets its own)."""
    pid = os.getpid()
    return Holder(pid, _own_token(pid))


def holder_is_live(holder: Holder) -> bool:
    """True when the recorded process is still running (same pid and same start token)."""
    if not 0 < holder.pid <= MAX_PID:
        return False
    if holder.start is not None:
        return process_start_token(holder.pid) == holder.start
    return _pid_exists(holder.pid)


def parse_holders(raw: object) -> tuple[Holder, ...]:
    """The holder records of a cache entry (JSON): its last `MAX_HOLDERS`, the newest.
    Raises `ValueError` when they are malformed."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError("holders must be an array")
    holders = []
    for item in raw[-MAX_HOLDERS:]:
        if not isinstance(item, dict):
            raise ValueError("a holder must be an object")
        pid = item.get("pid")
        start = item.get("start")
        if (
            type(pid) is not int
            or not 0 < pid <= MAX_PID
            or (start is not None and not (isinstance(start, str)
                                           and len(start) <= MAX_START_TOKEN))
        ):
            raise ValueError("a holder needs a positive integer pid and a string or null start")
        holders.append(Holder(pid, start))
    return tuple(holders)


def holder_to_json(holder: Holder) -> dict[str, Any]:
    return {"pid": holder.pid, "start": holder.start}
