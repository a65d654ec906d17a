"""louise's own hint for a failure whose cause it knows, read from what the agent said (its
error and the tail of its stderr): claude run as root with its permission prompts off, an
agent that is not signed in, a model API that cannot be reached. Pure.

The words are the agents' own (claude-agent-acp's Claude Code refuses
`--dangerously-skip-permissions` as root unless `IS_SANDBOX=1`; Node's `ECONNREFUSED` and
`fetch failed`; codex's `error sending request`, `stream disconnected`)."""

from __future__ import annotations

from typing import Final

MAX_SCANNED_CHARS: Final = 16_000

_ROOT: Final = ("--dangerously-skip-permissions cannot be used with root",
                "cannot be used with root/sudo privileges")
_SIGNED_OUT: Final = ("not logged in", "please run /login", "invalid api key",
                      "authentication_error", "oauth token has expired", "not signed in",
                      "login required", "401 unauthorized", "missing api key",
                      "no api key", "openai_api_key")
_UNREACHABLE: Final = ("econnrefused", "connection refused", "enotfound", "getaddrinfo",
                       "fetch failed", "unable to connect", "error sending request",
                       "network is unreachable", "stream disconnected",
                       "could not resolve host", "connection error", "waiting for network",
                       "api_connection_error", "econnreset")


def hint_for(agent: str, said: str) -> str | None:
    """What louise knows of the cause of a failure the agent described in `said`, as a
    person acts on it; None when louise knows nothing more."""
    text = said[-MAX_SCANNED_CHARS:].lower()
    if any(words in text for words in _ROOT):
        return (f"{agent} will not skip its permission prompts as root: set env = "
                f'{{ IS_SANDBOX = "1" }} for this agent (setup{{ agents = {{ {agent} = '
                f'{{ env = {{ IS_SANDBOX = "1" }} }} }} }}, or [agents.{agent}] in config.toml)')
    if any(words in text for words in _SIGNED_OUT):
        return (f"{agent} is not signed in: :LouiseSignIn {agent} in Neovim, "
                f"louise login {agent} from a shell")
    if any(words in text for words in _UNREACHABLE):
        return ("the model API could not be reached: check the network, a proxy, or the "
                "agent's API base URL")
    return None


def with_hint(message: str, agent: str, *said: str) -> str:
    """`message`, then louise's hint (from the message and whatever else the agent
    `said`, e.g. its stderr's tail) when it has one."""
    hint = hint_for(agent, "\n".join((message, *said)))
    return f"{message} — {hint}" if hint is not None and hint not in message else message
