"""What each agent sends of its account's limits, and when: the words a person reads
before any figure came (`:LouiseLimits claude` right after start), instead of a bare
"unsupported". Pure.

The agent is recognised by its configured name, its command and the name it gives in
`initialize` (`agentInfo.name`), so `[agents.cc]` running claude-agent-acp reads as claude.
"""

from __future__ import annotations

from typing import Final

# (a word that names the agent, what it sends and when), first match wins.
EXPECTED: Final[tuple[tuple[str, str], ...]] = (
    ("claude", "no figures yet: {agent} sends them with its replies, for a claude.ai "
               "subscription (an API key has no such limits)"),
    ("codex", "no figures yet: {agent} shows its limits only in its /status command today; "
              "louise reads them as soon as it sends them with its replies"),
    ("kimi", "no figures yet: {agent} sends them with its replies, for a Coding Plan"),
    ("gemini", "no figures: {agent} sends none; a reached limit shows when it refuses a "
               "turn for it"),
    ("qwen", "no figures: {agent} sends none; a reached limit shows when it refuses a turn "
             "for it"),
    ("vibe", "no figures: {agent} sends none; a reached limit shows when it refuses a turn "
             "for it"),
)
OTHER: Final = ("no figures: {agent} sends none that louise knows of; a reached limit shows "
                "when it refuses a turn for it")


def known_figures(agent: str, *names: str) -> str | None:
    """What `agent` (its configured name; `names`: its command, its agentInfo name) sends
    of its limits and when, when louise knows the agent; else None."""
    said = " ".join((agent, *names)).lower()
    for word, text in EXPECTED:
        if word in said:
            return text.format(agent=agent)
    return None


def expected_figures(agent: str, *names: str) -> str:
    """As `known_figures`, and for an agent louise does not know (one that has started
    and offers no limits): that it sends none louise knows of."""
    return known_figures(agent, *names) or OTHER.format(agent=agent)
