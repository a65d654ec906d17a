"""`louise export` run as a real subprocess against transcripts in a temporary state dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CWD = "/projects/hello"
RECORDS: list[dict[str, Any]] = [
    {"t": 1.0, "type": "session", "agent": "demo", "cwd": CWD, "sessionId": "7c1e5d20-aaaa"},
    {"t": 2.0, "type": "prompt", "prompt": [{"type": "text", "text": "Create hello.py"}]},
    {"t": 2.1, "type": "update", "update": {
        "sessionUpdate": "agent_thought_chunk", "messageId": "t1",
        "content": {"type": "text", "text": "A new file."}}},
    {"t": 2.2, "type": "update", "update": {
        "sessionUpdate": "tool_call", "toolCallId": "call-1", "title": "Edit hello.py",
        "kind": "edit", "status": "in_progress",
        "content": [{"type": "diff", "path": f"{CWD}/hello.py", "oldText": None,
                     "newText": "print('hello')\n"}]}},
    {"t": 2.3, "type": "update", "update": {
        "sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "completed"}},
    {"t": 2.4, "type": "update", "update": {
        "sessionUpdate": "agent_message_chunk", "messageId": "m1",
        "content": {"type": "text", "text": "Created hello.py."}}},
    {"t": 2.5, "type": "turn_end", "stopReason": "end_turn"},
]
EXPECTED = """\
# demo session `7c1e5d20-aaaa`

- **Agent:** `demo`
- **Session:** `7c1e5d20-aaaa`
- **Working directory:** `/projects/hello`

## You

Create hello.py

## Agent

> 💭 A new file.

- ✏ **Edit hello.py** — completed

```diff
--- /dev/null
+++ b/hello.py
@@ -0,0 +1 @@
+print('hello')
```

Created hello.py.
"""


def write_transcript(state: Path, name: str, lines: list[str]) -> Path:
    path = state / "transcripts" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def state(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    write_transcript(state, "demo--7c1e5d20-aaaa.jsonl", [json.dumps(r) for r in RECORDS])
    write_transcript(state, "demo--7c2f0000-bbbb.jsonl", [json.dumps(RECORDS[0])])
    return state


def export(state: Path, *args: str, cwd: Path | None = None
           ) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ)
    env["LOUISE_STATE_DIR"] = str(state)
    env["LOUISE_CONFIG"] = str(state.parent / "config.toml")
    return subprocess.run([sys.executable, "-m", "louise.cli", "export", *args],
                          env=env, cwd=cwd, capture_output=True, timeout=60)


def test_export_prints_markdown_to_stdout_by_session_prefix(state: Path) -> None:
    result = export(state, "7c1e")
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode("utf-8") == EXPECTED
    assert result.stderr == b""


def test_export_writes_a_file(state: Path, tmp_path: Path) -> None:
    result = export(state, "7c1e5d20-aaaa", "-o", "out.md", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b""
    assert (tmp_path / "out.md").read_text(encoding="utf-8") == EXPECTED


def test_export_takes_a_transcript_path_and_reports_skipped_lines(state: Path,
                                                                  tmp_path: Path) -> None:
    lines = [json.dumps(r) for r in RECORDS]
    copy = write_transcript(tmp_path / "elsewhere", "copy.jsonl",
                            [lines[0], "{oops", *lines[1:], "[]"])
    result = export(state, str(copy))
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode("utf-8") == EXPECTED
    assert result.stderr.decode() == f"louise export: skipped 2 unreadable line(s) of {copy}\n"


def test_export_of_an_unknown_session_exits_2(state: Path) -> None:
    result = export(state, "nope")
    assert result.returncode == 2
    assert result.stdout == b""
    assert result.stderr.decode() == \
        f"louise export: no session 'nope' in {state / 'transcripts'} (2 transcripts there)\n"


def test_export_of_an_ambiguous_session_exits_2(state: Path, tmp_path: Path) -> None:
    result = export(state, "7c", "-o", "out.md", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.decode() == (
        "louise export: session '7c' is ambiguous: it matches 2 transcripts "
        "(demo--7c1e5d20-aaaa, demo--7c2f0000-bbbb); give more of the id, or AGENT:SESSION\n")
    assert not (tmp_path / "out.md").exists()


def test_export_with_no_state_dir_yet_exits_2(tmp_path: Path) -> None:
    result = export(tmp_path / "fresh-state", "7c1e")
    assert result.returncode == 2
    assert b"(no transcripts there)" in result.stderr


def test_export_to_an_unwritable_place_exits_1(state: Path, tmp_path: Path) -> None:
    result = export(state, "7c1e", "-o", str(tmp_path / "no-such-dir" / "out.md"))
    assert result.returncode == 1
    assert result.stderr.decode().startswith(
        f"louise export: cannot write {tmp_path / 'no-such-dir' / 'out.md'}: ")


def test_export_is_listed_in_help(state: Path) -> None:
    env = dict(os.environ, LOUISE_STATE_DIR=str(state))
    result = subprocess.run([sys.executable, "-m", "louise.cli", "--help"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert "write a session's transcript as Markdown" in result.stdout
