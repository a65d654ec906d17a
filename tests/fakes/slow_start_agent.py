"""An agent slow to start, as claude-agent-acp run through npx is (7–30 s before it
answers `initialize`): it reads nothing until the file FAKE_START_GATE exists, then becomes
the bundled demo agent (the same process, so the requests written meanwhile wait in its
stdin). A test opens the gate when it has seen what it wants while the agent starts, so
nothing depends on timing.

Environment: FAKE_START_GATE (required), FAKE_START_LIMIT seconds to wait at most (120).
"""

from __future__ import annotations

import os
import sys
import time


def main() -> None:
    gate = os.environ["FAKE_START_GATE"]
    deadline = time.monotonic() + float(os.environ.get("FAKE_START_LIMIT", "120"))
    while not os.path.exists(gate):
        if time.monotonic() > deadline:
            print("slow_start_agent: the gate never opened", file=sys.stderr)
            sys.exit(3)
        time.sleep(0.05)
    os.execv(sys.executable, [sys.executable, "-P", "-m", "louise.demo_agent"])


if __name__ == "__main__":
    main()
