"""A stand-in for the session host: listens on a Unix socket (argv[1]), appends its pid to
argv[2] once listening, and echoes every connection's bytes back until that connection's
end. Standard library only; for the tests of `louise attach`'s pipe and of starting the
host once (tests/integration/test_serve_edge.py)."""

from __future__ import annotations

import os
import socket
import sys
import threading


def _echo(conn: socket.socket) -> None:
    with conn:
        while True:
            data = conn.recv(65536)
            if not data:
                return
            conn.sendall(data)


def main() -> None:
    path, pids = sys.argv[1], sys.argv[2]
    directory, name = os.path.split(path)
    os.chdir(directory)  # a test's deep temporary path would overflow sun_path
    if os.path.exists(name):  # a killed host's: whoever starts a host holds the start lock
        os.unlink(name)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(name)
    server.listen(16)
    with open(pids, "a", encoding="ascii") as out:
        out.write(f"{os.getpid()}\n")
    while True:
        conn, _ = server.accept()
        threading.Thread(target=_echo, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
