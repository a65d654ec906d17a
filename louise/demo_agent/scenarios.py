"""The scenario table: what one prompt turn does, by name.

Each scenario reads its knobs first (so a bad knob fails before any output), then
talks through `Turn`, and returns the stop reason. The table at the bottom is the
documentation that `/help` prints.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from . import catalog, failures
from .limits import LIMITS_MODES, LimitsMode
from .settings import Choice, KnobError
from .turn import Turn, TurnCancelled, text_content, usage_update
from .unstable import unstable
from .wire import RpcError

log = logging.getLogger("louise.demo_agent")

JsonObject = dict[str, Any]
ScenarioFn = Callable[[Turn], Awaitable[str]]

MAX_ECHO = 16 * 1024  # what `read` and `execute` show of the client's data
SLOW_MAX_CHUNKS = 100_000  # even "until cancelled" ends somewhere


def _shorten(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fence(text: str) -> str:
    # Four backticks, so a file that itself holds ``` fences does not end ours.
    return f"````\n{text}{'' if text.endswith(chr(10)) else chr(10)}````\n"


# ---- chat: the default, a bit of everything a client renders --------------------------


async def chat(turn: Turn) -> str:
    delay = turn.knobs.number("delay_ms", 15)
    echo = _shorten(turn.prompt) or "(no text)"
    await turn.think(
        f"The person said “{echo}”. I will make a plan, peek at the README, then answer.",
        delay_ms=delay,
    )
    steps = ["Read the README", "Draft the answer", "Add a code example"]
    turn.plan([(steps[0], "in_progress"), (steps[1], "pending"), (steps[2], "pending")])
    readme = turn.path("README.md")
    call = turn.tool_call(
        "Read README.md", "read", locations=[{"path": readme, "line": 1}], rawInput={"path": readme}
    )
    await turn.pause(delay)
    turn.tool_update(call, status="in_progress")
    await turn.pause(delay)
    turn.tool_update(call, status="completed", content=[text_content(catalog.README_EXCERPT)])
    turn.plan([(steps[0], "completed"), (steps[1], "in_progress"), (steps[2], "pending")])
    await turn.say(catalog.CHAT_REPLY.format(echo=echo), delay_ms=delay)
    turn.plan([(step, "completed") for step in steps])
    return "end_turn"


# ---- stream: many chunks of one message, for benchmarks ----------------------------------

_FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit "


def stream_piece(index: int, size: int, stamp: bool = False) -> str:
    """Chunk `index` of the stream: exactly `size` characters, a newline every 10th.

    With `stamp`, the head also holds the writer's monotonic clock in microseconds,
    taken just before the chunk is sent (`00042=123456789012 `), for latency benchmarks.
    """
    head = f"{index:05d}={time.monotonic_ns() // 1000} " if stamp else f"{index:05d} "
    text = (head + _FILLER * (size // len(_FILLER) + 1))[:size]
    if index % 10 == 9 and size > 0:
        text = text[:-1] + "\n"
    return text


async def stream(turn: Turn) -> str:
    chunks = turn.knobs.integer("chunks", 100)
    size = turn.knobs.integer("size", 40, maximum=16 * 1024 * 1024)
    delay = turn.knobs.number("delay_ms", 0)
    stamp = turn.knobs.integer("stamp", 0, maximum=1) == 1
    await turn.stream((stream_piece(i, size, stamp) for i in range(chunks)), delay_ms=delay)
    return "end_turn"


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


# ---- plan, usage, slow, limits, help -----------------------------------------------------


async def plan(turn: Turn) -> str:
    delay = turn.knobs.number("delay_ms", 150)
    steps = ["Survey the code", "Write the change", "Run the tests", "Summarise"]
    for done in range(len(steps) + 1):
        statuses = ["completed"] * done + ["in_progress"] * (done < len(steps))
        statuses += ["pending"] * (len(steps) - len(statuses))
        turn.plan(
            list(zip(steps, statuses, strict=True)), priority="high" if done == 0 else "medium"
        )
        if done < len(steps):
            await turn.say(f"Working on: {steps[done].lower()}.\n")
            await turn.pause(delay)
    await turn.say("All four steps are done.")
    return "end_turn"


async def usage(turn: Turn) -> str:
    tokens = turn.knobs.integer("tokens", 1500)
    session = turn.session
    session.used_tokens = min(catalog.CONTEXT_WINDOW, session.used_tokens + tokens)
    update = usage_update(session)
    turn.update(update)
    await turn.say(
        f"This turn used {tokens} tokens: {update['used']} of {update['size']} are in the "
        f"context, ${update['cost']['amount']:.4f} so far."
    )
    return "end_turn"


async def slow(turn: Turn) -> str:
    delay = turn.knobs.number("delay_ms", 200)
    limit = turn.knobs.optional_integer("chunks") or SLOW_MAX_CHUNKS
    message_id = turn.new_message_id()
    for index in range(min(limit, SLOW_MAX_CHUNKS)):
        turn.check_client_alive()
        if turn.steered:  # a prompt sent into this turn (_session/steering): follow it
            await turn.say(f"\n\nSteered: {turn.steered.pop(0)}")
            return "end_turn"
        turn.chunk(f"tick {index} … ", message_id)
        await turn.pause(delay)
    return "end_turn"


async def limits(turn: Turn) -> str:
    state = turn.knobs.text("state", "")
    if state:
        if state not in LIMITS_MODES:
            raise KnobError(f"state must be one of {', '.join(LIMITS_MODES)}")
        turn.state.account.mode = cast(LimitsMode, state)
    account = turn.state.account
    if turn.state.send_limits_updated(turn.peer):
        await turn.say(f"Sent an account-limits update (state `{account.mode}`).")
    else:
        await turn.say("Account limits are failing (state `error`), so no update was sent.")
    return "end_turn"


async def mcp(turn: Turn) -> str:
    """Which MCP servers the client passed to this session (the demo connects to none)."""
    servers = turn.session.mcp_servers
    if not servers:
        await turn.say("This session got no MCP servers.")
        return "end_turn"
    lines = ["MCP servers of this session:", ""]
    for server in servers:
        if server["type"] == "stdio":
            args = " ".join(str(a) for a in server["args"])
            env = ", ".join(str(e) for e in server["env"])
            lines.append(f"- `{server['name']}` (stdio): `{server['command']} {args}`".rstrip()
                         + (f" env {env}" if env else ""))
        else:
            headers = ", ".join(str(h) for h in server["headers"])
            lines.append(f"- `{server['name']}` ({server['type']}): {server['url']}"
                         + (f" headers {headers}" if headers else ""))
    await turn.say("\n".join(lines) + "\n")
    return "end_turn"


ASK_SCHEMA = {
    "type": "object",
    "title": "About the release",
    "properties": {
        "name": {"type": "string", "title": "Release name", "minLength": 1, "maxLength": 40},
        "color": {"type": "string", "title": "Colour", "default": "green",
                  "oneOf": [{"const": "red", "title": "Red"},
                            {"const": "green", "title": "Green"},
                            {"const": "blue", "title": "Blue"}]},
        "count": {"type": "integer", "title": "How many", "minimum": 1, "maximum": 10},
        "notify": {"type": "boolean", "title": "Notify the team", "default": False},
        "tags": {"type": "array", "title": "Tags",
                 "items": {"type": "string", "enum": ["docs", "fix", "feature"]}},
    },
    "required": ["name", "count"],
}


async def ask(turn: Turn) -> str:
    """A form elicitation (needs the client's `elicitation.form`), then the answers."""
    if not turn.client.elicitation_form:
        await turn.say("Your client cannot answer forms (no `elicitation.form`).")
        return "end_turn"
    call = turn.tool_call("Ask about the release", "other")
    result = await turn.ask("elicitation/create", {
        "toolCallId": call, "mode": "form",
        "message": "A few details about the release, please.",
        "requestedSchema": ASK_SCHEMA})
    action = result.get("action") if isinstance(result, dict) else None
    turn.tool_update(call, status="completed")
    if action == "accept":
        content = result.get("content") or {}
        answers = ", ".join(f"{key}={content[key]!r}" for key in sorted(content))
        await turn.say(f"Thanks: {answers}.")
    else:
        await turn.say(f"You chose not to answer ({action}).")
    return "end_turn"


async def visit(turn: Turn) -> str:
    """A URL elicitation (needs `elicitation.url`); once accepted, `elicitation/complete`
    follows after `delay_ms`."""
    if not turn.client.elicitation_url:
        await turn.say("Your client cannot open pages for me (no `elicitation.url`).")
        return "end_turn"
    turn.session.next_tool_call += 1
    ident = f"{turn.session.id}-visit-{turn.session.next_tool_call}"
    url = turn.knobs.text("url", "https://example.com/louise-demo/connect")
    result = await turn.ask("elicitation/create", {
        "mode": "url", "elicitationId": ident, "url": url,
        "message": "Connect the demo account in your browser."})
    action = result.get("action") if isinstance(result, dict) else None
    if action != "accept":
        await turn.say(f"You did not open the page ({action}).")
        return "end_turn"
    await turn.pause(turn.knobs.number("delay_ms", 200))
    turn.peer.notify("elicitation/complete", {"elicitationId": ident})
    await turn.say("The page says you are connected.")
    return "end_turn"


async def attachments(turn: Turn) -> str:
    """What the prompt carried besides its text."""
    found = turn.session.attachments
    if not found:
        await turn.say("This prompt has no attachments.")
    else:
        await turn.say("Attachments:\n\n" + "\n".join(f"- {a}" for a in found) + "\n")
    return "end_turn"


async def settings(turn: Turn) -> str:
    """The session's mode, model and thought level as the agent holds them."""
    session = turn.session
    await turn.say(f"Mode `{session.mode}`, model `{session.config['model']}`, thinking "
                   f"`{session.config['thought_level']}`.")
    return "end_turn"


async def show_help(turn: Turn) -> str:
    await turn.say(help_text())
    return "end_turn"


@dataclass(frozen=True)
class Scenario:
    run: ScenarioFn
    summary: str
    knobs: str = ""


SCENARIOS: dict[str, Scenario] = {
    "chat": Scenario(chat, "default: thought, plan, read tool call, markdown reply", "delay_ms=15"),
    "stream": Scenario(
        stream, "N chunks of one message (benchmarks)", "chunks=100 size=40 delay_ms=0 stamp=0"
    ),
    "edit": Scenario(edit, "diff for one file, permission, fs/write_text_file (a file not as "
                     "expected is left as it is)", "path=hello.py blind=0"),
    "multi_edit": Scenario(multi_edit, "one tool call with diffs for 3 files, one new",
                           "blind=0"),
    "read": Scenario(read, "fs/read_text_file and echo it", "path=README.md line= limit="),
    "execute": Scenario(execute, "terminal/* if offered, else a simulated run", "cmd=echo"),
    "plan": Scenario(plan, "a plan updated step by step", "delay_ms=150"),
    "usage": Scenario(usage, "usage_update with cost", "tokens=1500"),
    "slow": Scenario(slow, "tick slowly until cancelled", "delay_ms=200 chunks="),
    "limits": Scenario(limits, "send an account-limits `updated` notification", "state=fresh"),
    "fail": Scenario(failures.run, "a failure mode: /scenario fail MODE", "mb= chunks="),
    "mcp": Scenario(mcp, "list the MCP servers this session got", ""),
    "settings": Scenario(settings, "the session's mode, model and thought level", ""),
    "attachments": Scenario(attachments, "list what the prompt carried besides text", ""),
    "ask": Scenario(ask, "a form elicitation (five kinds of fields), then the answers", ""),
    "visit": Scenario(visit, "a URL elicitation, then elicitation/complete",
                      "url=https://example.com/louise-demo/connect delay_ms=200"),
    "unstable": Scenario(unstable, "ID-addressed plans, a notice, a context compaction",
                         "compaction=completed|failed|cancelled delay_ms=50"),
    "help": Scenario(show_help, "this list", ""),
}


def help_text() -> str:
    lines = ["Scenarios (`/scenario NAME [key=value …]`):", ""]
    for name, scenario in SCENARIOS.items():
        knobs = f" — knobs: `{scenario.knobs}`" if scenario.knobs else ""
        lines.append(f"- `{name}`: {scenario.summary}{knobs}")
    lines += ["", "Fail modes (`/scenario fail MODE`):", ""]
    lines += [f"- `{name}`: {summary}" for name, summary in failures.summaries()]
    return "\n".join(lines) + "\n"


async def run(turn: Turn, choice: Choice) -> str:
    """Run the chosen scenario; an unknown name or a bad knob becomes a chat reply."""
    scenario = SCENARIOS.get(choice.scenario)
    if scenario is None:
        await turn.say(f"Unknown scenario `{choice.scenario}`.\n\n{help_text()}")
        return "end_turn"
    try:
        return await scenario.run(turn)
    except KnobError as error:
        await turn.say(f"Cannot run `{choice.scenario}`: {error}")
        return "end_turn"
