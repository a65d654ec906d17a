"""The demo's scratch workspace: the files its edit scenarios change, so that the first
`/scenario edit` of `python3 dev.py run` edits a file that is there (a real change shown
as a diff), not one the agent only believes in.

Standard library only and no import of louise: dev.py loads this file by its path,
before anything is installed."""

from __future__ import annotations

import sys
from pathlib import Path

# What `/scenario edit` finds in hello.py and changes (its `oldText`).
HELLO_OLD = 'def greet():\n    print("Hello, world!")\n'

# Relative path -> text; a file already there is left as it is.
SEED_FILES: dict[str, str] = {
    "README.md": "# Demo workspace\n\nA scratch project for louise's demo agent.\n",
    "hello.py": HELLO_OLD,
    # `/scenario multi_edit` changes it (its first file).
    "src/app.py": "from greet import greet\n\ngreet()\n",
}


def seed(workspace: Path) -> list[Path]:
    """Write each seed file missing from `workspace` (made if need be); the files made."""
    made = []
    for relative, text in SEED_FILES.items():
        path = workspace / relative
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        made.append(path)
    return made


if __name__ == "__main__":
    seed(Path(sys.argv[1]))
