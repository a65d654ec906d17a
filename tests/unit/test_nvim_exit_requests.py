"""The engine process's wait for its exit request (louise/nvim/app.py: ExitRequests)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# SIGTERM handed by the kernel to a thread other than the main one (any thread may get a
# process's signal): the main thread, waiting for the exit request, must still wake and
# run the handler. It once slept on a lock and never did, so a Python side Neovim had
# stopped with SIGTERM lived on (a CI run saw it: the chat was never restarted).
SIGNAL_TO_ANOTHER_THREAD = textwrap.dedent("""
    import signal, sys, threading, time
    sys.path.insert(0, sys.argv[1])
    from louise.nvim.app import ExitRequests
    exits = ExitRequests()
    exits.wake_on_signals()
    signal.signal(signal.SIGTERM, lambda signum, frame: exits.request(0.25))
    def sender():
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        time.sleep(120)  # alive, so nothing else wakes the main thread
    threading.Thread(target=sender, daemon=True).start()
    exits.wait()
    print("woke", flush=True)
""")


def test_a_sigterm_delivered_to_another_thread_wakes_the_main_thread() -> None:
    try:
        done = subprocess.run([sys.executable, "-P", "-c", SIGNAL_TO_ANOTHER_THREAD, str(ROOT)],
                              capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError("the main thread slept through the SIGTERM") from exc
    assert done.returncode == 0, done.stderr
    assert done.stdout == "woke\n", done.stdout


def test_the_first_request_wins_and_its_budget_is_capped() -> None:
    from louise.nvim.app import ExitRequests
    from louise.nvim.host import MAX_EXIT_BUDGET_SECONDS

    exits = ExitRequests()
    exits.request(1e9)
    exits.request(0.0)
    first = exits.wait()
    assert first - time.monotonic() <= MAX_EXIT_BUDGET_SECONDS
    assert exits.wait() <= time.monotonic()
