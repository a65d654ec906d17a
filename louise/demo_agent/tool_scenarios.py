"""The scenarios that use the client's tools: diffs and fs/write_text_file behind a
permission request (`edit`, `multi_edit`), fs/read_text_file (`read`), terminal/* or a
simulated run (`execute`). Each degrades to a reply saying what the client did not
advertise."""

from __future__ import annotations

import logging
import os
from typing import Any

from . import catalog
from .turn import Turn, TurnCancelled, text_content
from .wire import RpcError

log = logging.getLogger("louise.demo_agent")

JsonObject = dict[str, Any]

MAX_ECHO = 16 * 1024  # what `read` and `execute` show of the client's data


def _fence(text: str) -> str:
    # Four backticks, so a file that itself holds ``` fences does not end ours.
    return f"````\n{text}{'' if text.endswith(chr(10)) else chr(10)}````\n"


# ---- edit and multi_edit: diffs, a permission request, fs/write_text_file ----------------


async def _differs(turn: Turn, path: str, old_text: str | None, new_text: str) -> bool:
    """Whether the file is there and is not what the edit was written against (a file of
    the person's: never overwritten). A missing file is created; without fs reads the
    demo cannot tell, and writes as before."""
    if not turn.client.read_text_file or turn.knobs.integer("blind", 0, maximum=1):
        return False  # blind=1: written without a look, as a write_file tool does
    try:
        result = await turn.ask("fs/read_text_file", {"path": path})
    except RpcError:
        return False  # not there (or unreadable): the write says what it can
    content = result.get("content") if isinstance(result, dict) else None
    return isinstance(content, str) and content not in (old_text or "", new_text)


async def _apply_edits(turn: Turn, call: str, title: str,
                       edits: list[tuple[str, str | None, str]]) -> str:
    """Ask permission for the tool call, then write each (path, old text or None, new
    text) if allowed; a file that is not what the edit expects is left as it is (as real
    agents read a file before they edit it)."""
    decision = await turn.permission(call, title, "edit")
    if decision == "cancelled":
        raise TurnCancelled  # the prompt handler answers stopReason cancelled
    if decision == "reject":
        turn.tool_update(call, status="failed", rawOutput={"reason": "rejected"})
        await turn.say("Understood, I left the files unchanged.")
        return "end_turn"
    turn.tool_update(call, status="in_progress")
    if not turn.client.write_text_file:
        turn.tool_update(call, status="completed", rawOutput={"written": False})
        await turn.say(
            "Approved. The client did not advertise `fs.writeTextFile`, so nothing was written."
        )
        return "end_turn"
    written: list[str] = []
    kept: list[str] = []
    for path, old_text, new_text in edits:
        if await _differs(turn, path, old_text, new_text):
            kept.append(path)
            continue
        try:
            await turn.ask("fs/write_text_file", {"path": path, "content": new_text})
        except RpcError as error:
            turn.tool_update(call, status="failed", rawOutput={"error": error.message})
            await turn.say(f"The client could not write `{path}`: {error.message}")
            return "end_turn"
        written.append(path)
    turn.tool_update(call, status="completed", rawOutput={"written": written, "kept": kept})
    done = f"Done: wrote {len(written)} file(s) through the client."
    if kept:
        names = ", ".join(f"`{os.path.basename(p)}`" for p in kept)
        done += f" I left {names} as it is: it is not the file I expected (yours, or changed)."
    await turn.say(done)
    return "end_turn"


async def edit(turn: Turn) -> str:
    relative = turn.knobs.text("path", "hello.py")
    path = turn.path(relative)
    await turn.say(f"I will change `greet` in `{relative}` to take a name.")
    title = f"Edit {relative}"
    diff = {
        "type": "diff",
        "path": path,
        "oldText": catalog.HELLO_OLD,
        "newText": catalog.HELLO_NEW,
    }
    call = turn.tool_call(
        title,
        "edit",
        content=[diff],
        locations=[{"path": path, "line": 1}],
        rawInput={"path": path},
    )
    return await _apply_edits(turn, call, title, [(path, catalog.HELLO_OLD, catalog.HELLO_NEW)])


async def multi_edit(turn: Turn) -> str:
    files = [(turn.path(rel), old, new) for rel, old, new in catalog.MULTI_EDIT]
    await turn.say(f"This change touches {len(files)} files, one of them new.")
    title = f"Edit {len(files)} files"
    call = turn.tool_call(
        title,
        "edit",
        content=[
            {"type": "diff", "path": p, "oldText": old, "newText": new} for p, old, new in files
        ],
        locations=[{"path": p, "line": 1} for p, _, _ in files],
        rawInput={"paths": [p for p, _, _ in files]},
    )
    return await _apply_edits(turn, call, title, files)


# ---- read: fs/read_text_file -------------------------------------------------------------


async def read(turn: Turn) -> str:
    relative = turn.knobs.text("path", "README.md")
    line = turn.knobs.optional_integer("line")
    limit = turn.knobs.optional_integer("limit")
    path = turn.path(relative)
    params: JsonObject = {"path": path}
    if line is not None:
        params["line"] = line
    if limit is not None:
        params["limit"] = limit
    call = turn.tool_call(
        f"Read {relative}", "read", locations=[{"path": path, "line": line or 1}], rawInput=params
    )
    if not turn.client.read_text_file:
        turn.tool_update(
            call, status="failed", rawOutput={"error": "fs.readTextFile not advertised"}
        )
        await turn.say(
            f"I cannot read `{relative}`: the client did not advertise `fs.readTextFile`."
        )
        return "end_turn"
    turn.tool_update(call, status="in_progress")
    try:
        result = await turn.ask("fs/read_text_file", params)
    except RpcError as error:
        turn.tool_update(call, status="failed", rawOutput={"error": error.message})
        await turn.say(f"The client could not read `{relative}`: {error.message}")
        return "end_turn"
    content = result.get("content") if isinstance(result, dict) else None
    if not isinstance(content, str):
        turn.tool_update(call, status="failed", rawOutput={"error": "no content in the reply"})
        await turn.say("The client's reply to `fs/read_text_file` had no `content` string.")
        return "end_turn"
    shown = content[:MAX_ECHO]
    turn.tool_update(call, status="completed", content=[text_content(shown)])
    await turn.say(f"Here is what I read from `{relative}` ({len(content)} characters):\n\n")
    await turn.say(_fence(shown))
    return "end_turn"


# ---- execute: terminal/* when the client offers terminals, else a simulated run ----------


async def execute(turn: Turn) -> str:
    command = turn.knobs.text("cmd", "echo")
    args = ["hello from louise-demo-agent"] if command == "echo" else []
    shown = " ".join([command, *args])
    title = f"Run `{shown}`"
    call = turn.tool_call(title, "execute", rawInput={"command": command, "args": args})
    # Ask before running anything, as real agents do (even a simulated run).
    decision = await turn.permission(call, title, "execute")
    if decision == "cancelled":
        raise TurnCancelled
    if decision == "reject":
        turn.tool_update(call, status="failed", rawOutput={"reason": "rejected"})
        await turn.say(f"Understood, I did not run `{shown}`.")
        return "end_turn"
    turn.tool_update(call, status="in_progress")
    if not turn.client.terminal:
        output = "hello from louise-demo-agent\n" if command == "echo" else ""
        turn.tool_update(
            call,
            status="completed",
            content=[text_content(output or "(no output)")],
            rawOutput={"exitCode": 0, "stdout": output, "simulated": True},
        )
        await turn.say("The client has no terminal support, so I only pretended to run it.")
        return "end_turn"
    created = await turn.ask(
        "terminal/create",
        {"command": command, "args": args, "cwd": turn.session.cwd, "outputByteLimit": 65536},
    )
    terminal_id = created.get("terminalId") if isinstance(created, dict) else None
    if not isinstance(terminal_id, str):
        turn.tool_update(call, status="failed", rawOutput={"error": "no terminalId"})
        await turn.say("The client's reply to `terminal/create` had no `terminalId`.")
        return "end_turn"
    turn.tool_update(
        call, status="in_progress", content=[{"type": "terminal", "terminalId": terminal_id}]
    )
    try:
        exited = await turn.ask("terminal/wait_for_exit", {"terminalId": terminal_id})
        output = await turn.ask("terminal/output", {"terminalId": terminal_id})
    finally:
        # Release even after a cancel: it also kills the command if it still runs.
        try:
            await turn.ask("terminal/release", {"terminalId": terminal_id}, even_if_cancelled=True)
        except RpcError as error:
            log.info("terminal/release failed: %s", error.message)
    text = output.get("output") if isinstance(output, dict) else None
    text = text if isinstance(text, str) else ""
    exit_code = exited.get("exitCode") if isinstance(exited, dict) else None
    turn.tool_update(
        call,
        status="completed" if exit_code == 0 else "failed",
        rawOutput={"exitCode": exit_code, "output": text[:MAX_ECHO]},
    )
    await turn.say(f"`{shown}` exited with {exit_code}. Its output:\n\n")
    await turn.say(_fence(text[:MAX_ECHO]))
    return "end_turn"


