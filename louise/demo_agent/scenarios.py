"""The scenario table: what one prompt turn does, by name.

Each scenario reads its knobs first (so a bad knob fails before any output), then
talks through `Turn`, and returns the stop reason. The table at the bottom is the
documentation that `/help` prints. Here: the scenarios that only talk (text, plans,
usage, limits, what the session holds); those that use the client's fs and terminals
are in `tool_scenarios.py`, those that ask the person in `question_scenarios.py`, the
failure modes in `failures.py`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import cast

from . import catalog, failures
from .limits import LIMITS_MODES, LimitsMode
from .question_scenarios import ask, visit
from .settings import Choice, KnobError
from .tool_scenarios import edit, execute, multi_edit, read
from .turn import Turn, text_content, usage_update
from .unstable import unstable

ScenarioFn = Callable[[Turn], Awaitable[str]]

SLOW_MAX_CHUNKS = 100_000  # even "until cancelled" ends somewhere


def _shorten(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
