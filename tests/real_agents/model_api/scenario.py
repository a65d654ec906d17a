"""What the mock "model" decides to do with one request, whatever API it came through.

A dialect reads its request into a `Conversation` (the latest prompt, the tool results that
came back since, the tools on offer); `decide` answers with a `Reply` (thinking, text, tool
calls) or a `Refusal` (an HTTP error). A scenario is chosen by the last `MOCK-<WORD>` marker
in the prompt; a scenario with tool calls is a script of steps, one per model request, and
the step is the number of tool results since the prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.real_agents.model_api import tools
from tests.real_agents.model_api.tools import ToolCall

# The marker word, and what follows it (a path, an HTTP status, or the prompt's next word).
MARKER = re.compile(r"\bMOCK-([A-Z][A-Z0-9]*)(?:[ \t]+(\S+))?")
SCENARIOS = ("edit", "edit2", "write", "shell", "ask", "think", "slow", "error")

# The plain reply: Markdown with a fenced code block, in uneven pieces.
PLAIN_REPLY = (
    "Here is a streamed ",
    "reply from the **mock** model.",
    "\n\n```python\ndef hello():\n",
    "    return 'world'\n```\n\n",
    "That was a code fence; ",
    "this is the end.",
)
THINKING = ("Weighing ", "the question ", "carefully.")
AFTER_THINKING = ("Having thought it over: ", "the answer is 42.")
SIDE_REPLY = "Mock title"  # requests without tools: session titles, summaries
SLOW_PIECES = 60
SLOW_PACE = 0.25  # seconds between pieces: a turn of 15 s, long enough to cancel midway
RESULT_QUOTED = 160  # characters of the last tool result the closing text repeats

REFUSALS = {
    400: "the request is not valid",
    401: "the API key was not accepted",
    403: "this key may not use this model",
    429: "too many requests; try again later",
    500: "the model failed to answer",
}


@dataclass(frozen=True)
class Conversation:
    """One model request as the scenario sees it."""

    prompt: str
    tool_results: tuple[str, ...]
    tools: tuple[str, ...]


@dataclass(frozen=True)
class Reply:
    scenario: str  # what the request log calls it: side, text, edit, ...
    step: int
    thinking: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    calls: tuple[ToolCall, ...] = ()
    pace: float | None = None  # seconds between streamed events; None: the server's own


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str
    scenario: str = "error"


def marker(prompt: str) -> tuple[str, str]:
    """The scenario of the prompt's last marker and its argument ("text", "" if none).
    The last one counts: after a failed turn Claude Code sends the failed prompt and the
    next one together."""
    found = [m for m in MARKER.finditer(prompt) if m.group(1).lower() in SCENARIOS]
    if not found:
        return "text", ""
    word, argument = found[-1].group(1, 2)
    return word.lower(), (argument or "").rstrip(".,;:'\"")


def decide(conversation: Conversation) -> Reply | Refusal:
    if not conversation.tools:
        return Reply("side", 0, text=(SIDE_REPLY,))
    scenario, argument = marker(conversation.prompt)
    step = len(conversation.tool_results)
    if scenario == "text":
        return Reply(scenario, step, text=PLAIN_REPLY)
    if scenario == "think":
        return Reply(scenario, step, thinking=THINKING, text=AFTER_THINKING)
    if scenario == "slow":
        pieces = tuple(f"slow chunk {n}. " for n in range(SLOW_PIECES))
        return Reply(scenario, step, text=pieces, pace=SLOW_PACE)
    if scenario == "error":
        status = int(argument) if argument.isdigit() else 500
        return Refusal(status, REFUSALS.get(status, f"the mock answers HTTP {status}"))
    script = tools.script(scenario, argument, conversation.tools)
    if script is None:
        return Reply(scenario, step, text=(f"No tool to {tools.PURPOSES[scenario]} with.",))
    if step < len(script):
        words, call = script[step]
        return Reply(scenario, step, text=words, calls=(call,))
    return Reply(scenario, step, text=closing(scenario, conversation.tool_results))


def closing(scenario: str, results: tuple[str, ...]) -> tuple[str, ...]:
    """The text after the script's last tool came back: quotes the start of its result, so
    that a refusal or an answer to a question shows in the reply."""
    last = " ".join(results[-1].split())[:RESULT_QUOTED] if results else "none"
    return ("Done ", f"with the {scenario} scenario.", f" Last tool result: {last}")
