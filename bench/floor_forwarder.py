"""The floor for `bench/proxy.py`: the least a Python forwarder can do, a reference row.

    python bench/floor_forwarder.py -- AGENT [ARGS...]

It runs the agent and copies bytes both ways with `os.read` and `os.write` in a loop (a
thread for the client's side), nothing else: no lines, no core, no bounds. What the proxy
costs above this is the proxy's own; what this costs is Python's and the kernel's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

READ_BYTES = 64 * 1024  # as the proxy reads: a larger buffer is mapped and unmapped a read


def copy(source: int, target: int) -> None:
    while data := os.read(source, READ_BYTES):
        view = memoryview(data)
        while view:
            view = view[os.write(target, view):]


def main() -> int:
    argv = sys.argv[sys.argv.index("--") + 1:]
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               bufsize=0)
    assert process.stdin is not None and process.stdout is not None
    agent_in = process.stdin.fileno()

    def from_client() -> None:
        copy(0, agent_in)
        process.stdin.close()  # type: ignore[union-attr]

    threading.Thread(target=from_client, daemon=True).start()
    copy(process.stdout.fileno(), 1)
    return process.wait()


if __name__ == "__main__":
    sys.exit(main())
