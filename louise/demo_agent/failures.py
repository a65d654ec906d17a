"""Failure modes: the demo agent misbehaving on purpose, so clients can be tested.

Turn modes act inside the prompt that asks for them (`/scenario fail MODE`, or every
plain prompt when `LOUISE_DEMO_FAIL=MODE`). Sticky modes flip a switch for the rest of
the process: the limits read fails, or `session/new` stops answering. `stderr_flood`
set through `LOUISE_DEMO_FAIL` floods during `initialize` instead (see agent.py).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .settings import KnobError
from .turn import Turn
from .wire import RpcError

log = logging.getLogger("louise.demo_agent")

STDERR_FLOOD_MB = 5.0
HUGE_MB = 10.0
CRASH_EXIT_STATUS = 3


def flood_stderr(mb: float) -> None:
    """Write `mb` MiB of log lines to stderr; blocks if the client does not drain it."""
    line = ("louise-demo-agent: stderr flood " + "#" * 990)[:1023].encode() + b"\n"
    remaining = int(mb * 1024 * 1024)
    while remaining > 0:
        piece = line[:remaining]
        sys.stderr.buffer.write(piece)
        remaining -= len(piece)
    sys.stderr.buffer.flush()


async def crash(turn: Turn) -> str:
    chunks = turn.knobs.integer("chunks", 3)
    delay = turn.knobs.number("delay_ms", 0)
    await turn.stream((f"chunk {i} before the crash. " for i in range(chunks)), delay_ms=delay)
    sys.stderr.write(
        "louise-demo-agent: crashing on purpose (fail mode crash), "
        f"exit status {CRASH_EXIT_STATUS}\n"
    )
    sys.stderr.flush()
    turn.peer.flush()  # the chunks before the crash must reach the client
    # os._exit: no clean-up, no reply, just like a process that dies mid-turn.
    os._exit(CRASH_EXIT_STATUS)


async def garbage(turn: Turn) -> str:
    turn.peer.send_raw(b"this line is not JSON: louise-demo-agent fail mode garbage\n")
    await turn.say("A line that is not JSON went to stdout just before this one; the turn goes on.")
    return "end_turn"


async def huge(turn: Turn) -> str:
    mb = turn.knobs.number("mb", HUGE_MB, maximum=1024)
    turn.chunk("x" * int(mb * 1024 * 1024), turn.new_message_id())
    await turn.pause(0)
    await turn.say(f"The previous chunk was a single line of about {mb:g} MiB.")
    return "end_turn"


async def stderr_flood(turn: Turn) -> str:
    mb = turn.knobs.number("mb", STDERR_FLOOD_MB, maximum=1024)
    flood_stderr(mb)
    await turn.say(f"Wrote {mb:g} MiB to stderr.")
    return "end_turn"


async def never_end(turn: Turn) -> str:
    await turn.say("This turn never ends on its own: cancel it.")
    await turn.until_cancelled()  # raises TurnCancelled: stopReason "cancelled"
    return "end_turn"


async def never_answer_new(turn: Turn) -> str:
    turn.state.never_answer_new = True
    await turn.say("From now on, `session/new` is never answered (until `/scenario fail off`).")
    return "end_turn"


async def limits_invalid(turn: Turn) -> str:
    turn.state.account.mode = "invalid"
    await turn.say(
        "Account-limits reads and updates now carry an invalid snapshot (usedPercent 150)."
    )
    return "end_turn"


async def limits_error(turn: Turn) -> str:
    turn.state.account.mode = "error"
    await turn.say("Account-limits reads now answer a JSON-RPC error.")
    return "end_turn"


async def unknown_request(turn: Turn) -> str:
    try:
        result = await turn.ask("_demo/unknown", {})
    except RpcError as error:
        log.info("client answered _demo/unknown with error %d: %s", error.code, error.message)
        await turn.say(
            f"The client answered `_demo/unknown` with error {error.code} ({error.message})."
        )
    else:
        log.warning("client answered _demo/unknown with a result: %r", result)
        await turn.say("The client answered `_demo/unknown` with a result, not an error.")
    return "end_turn"


async def custom_notification(turn: Turn) -> str:
    # Shaped like codex-acp's real extension notification (acp-protocol-notes §3c).
    turn.peer.notify(
        "_auth/status_update", {"authStatus": {"kind": "none", "label": "Not logged in"}}
    )
    await turn.say("Sent the custom notification `_auth/status_update`.")
    return "end_turn"


async def off(turn: Turn) -> str:
    turn.state.account.mode = "fresh"
    turn.state.never_answer_new = False
    await turn.say("Sticky fail modes are off.")
    return "end_turn"


@dataclass(frozen=True)
class FailMode:
    run: Callable[[Turn], Awaitable[str]]
    summary: str


FAIL_MODES: dict[str, FailMode] = {
    "crash": FailMode(crash, "a few chunks, a line on stderr, then exit(3) mid-turn (chunks=3)"),
    "garbage": FailMode(garbage, "a non-JSON line on stdout, then a normal reply"),
    "huge": FailMode(huge, "one agent_message_chunk line of mb MiB (mb=10)"),
    "stderr_flood": FailMode(
        stderr_flood, "mb MiB to stderr (mb=5); with LOUISE_DEMO_FAIL during initialize"
    ),
    "never_end": FailMode(never_end, "the prompt only ends when cancelled"),
    "never_answer_new": FailMode(never_answer_new, "sticky: session/new is never answered"),
    "never_answer": FailMode(never_answer_new, "same as never_answer_new"),
    "limits_invalid": FailMode(limits_invalid, "sticky: limits snapshots have usedPercent 150"),
    "limits_error": FailMode(limits_error, "sticky: limits reads answer a JSON-RPC error"),
    "unknown_request": FailMode(unknown_request, "send `_demo/unknown`, log the client's answer"),
    "custom_notification": FailMode(custom_notification, "send `_auth/status_update`"),
    "off": FailMode(off, "turn the sticky modes off"),
}


def summaries() -> list[tuple[str, str]]:
    return [(name, mode.summary) for name, mode in FAIL_MODES.items()]


async def run(turn: Turn) -> str:
    """The `fail` scenario: `/scenario fail MODE [knobs]`."""
    if not turn.knobs.args:
        raise KnobError(f"say which mode: one of {', '.join(FAIL_MODES)}")
    mode = FAIL_MODES.get(turn.knobs.args[0])
    if mode is None:
        raise KnobError(f"unknown fail mode {turn.knobs.args[0]!r}; one of {', '.join(FAIL_MODES)}")
    return await mode.run(turn)
