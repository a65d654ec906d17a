"""A tool call's text beyond its one line: the diff preview (clipped inputs, at most
MAX_DIFF_LINES shown) and the expanded details `<Tab>` shows. Pure: no pynvim here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from louise.capabilities import file_changes
from louise.session import ToolCall

MAX_DIFF_LINES = 400
DIFF_CONTEXT = 3


def _shown_path(path: str, base: str | None) -> str:
    """A path as a person reads it: relative to the workspace when inside it."""
    if base and path.startswith(base.rstrip("/") + "/"):
        return path[len(base.rstrip("/")) + 1:]
    return path


# A preview never diffs more than this many lines of each side (after the common head and
# tail are set aside): difflib is quadratic in the worst case, and the preview shows at
# most MAX_DIFF_LINES anyway.
DIFF_WINDOW_LINES = MAX_DIFF_LINES + 2 * DIFF_CONTEXT


def clipped_diff(old: list[str], new: list[str], fromfile: str, tofile: str) -> list[str]:
    """`file_changes.clipped_diff` with the preview's window (see DIFF_WINDOW_LINES)."""
    return file_changes.clipped_diff(old, new, fromfile, tofile, window=DIFF_WINDOW_LINES,
                                     context=DIFF_CONTEXT)


def diff_lines(content: Iterable[dict[str, Any]], base: str | None = None) -> list[str]:
    """The preview of a tool call's diffs, at most MAX_DIFF_LINES (+1 saying so), computed
    from clipped inputs: a 30,000-line file costs what a 400-line one does."""
    out: list[str] = []
    for item in content:
        if len(out) > MAX_DIFF_LINES:
            break
        if item.get("type") != "diff":
            continue
        path = _shown_path(str(item.get("path", "?")), base)
        derived = item.get("derived")
        if derived == "replace":
            out.append(f"    {path}: replace")
            out.extend("    - " + line for line in _head_lines(item.get("oldString")))
            out.extend("    + " + line for line in _head_lines(item.get("newString")))
            continue
        if derived == "delete":
            out.append(f"    delete {path}")
            continue
        if derived == "write":
            out.append(f"    write {path} ({len(str(item.get('newText')).splitlines())} lines)")
            continue
        old = item.get("oldText")
        new = str(item.get("newText") or "")
        if old is None:
            out.append(f"    new file {path}")
        if isinstance(item.get("note"), str):
            out.append(f"    {path}: {item['note']}")
        diff = clipped_diff([] if old is None else str(old).splitlines(), new.splitlines(),
                            path if old is not None else "/dev/null", path)
        out.extend("    " + line for line in diff)
    if len(out) > MAX_DIFF_LINES:
        return [*out[:MAX_DIFF_LINES], "    … diff too long, see :LouisePermission"]
    return out


def _head_lines(value: Any) -> list[str]:
    """The first lines of a text, no more than a preview shows."""
    text = str(value)
    cut = 0
    for _ in range(MAX_DIFF_LINES + 1):
        cut = text.find("\n", cut) + 1
        if cut == 0:
            return text.splitlines()
    return text[:cut].splitlines()


def _clip(lines: list[str], limit: int) -> list[str]:
    if len(lines) <= limit:
        return lines
    return [*lines[:limit], f"… {len(lines) - limit} more lines"]


def tool_details(record: ToolCall) -> list[str]:
    """The expanded view of a tool call: title, locations, raw input/output, content."""
    out = [f"    title: {' '.join(record.title.split())}",
           f"    kind: {record.kind} · status: {record.display_status}"]
    for loc in record.locations[:20]:
        line = loc.get("line")
        out.append(f"    at {loc.get('path')}" + (f":{line}" if isinstance(line, int) else ""))
    for name, value in (("input", record.raw_input), ("output", record.raw_output)):
        if value is not None:
            text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
            out.append(f"    {name}:")
            out.extend(_clip(["      " + line for line in text.splitlines()], 40))
    for item in record.content:
        if item.get("type") == "content" and isinstance(item.get("content"), dict):
            block = item["content"]
            if block.get("type") == "text":
                out.extend(_clip(["    │ " + line
                                  for line in str(block.get("text", "")).splitlines()], 40))
    for tid, terminal in record.terminals.items():
        out.append(f"    terminal {tid}" + (f" · {terminal.exit_text()}"
                                               if terminal.exited else ""))
        out.extend(_clip(["    │ " + line for line in terminal.text.splitlines()], 40))
    out.extend(diff_lines(record.content))
    return _clip(out, MAX_DIFF_LINES)
