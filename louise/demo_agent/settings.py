"""What the demo agent is told to do: environment variables and per-prompt knobs.

A prompt `/scenario NAME [ARG …] [key=value …]` picks a scenario and its knobs; a knob
missing from the prompt falls back to its environment variable, then to the scenario's
own default. Without `/scenario`, `LOUISE_DEMO_SCENARIO` (same syntax, without the
`/scenario` word) or a turn-time `LOUISE_DEMO_FAIL` mode picks it, else `chat`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

# knob name -> environment variable giving its default
KNOB_ENV: dict[str, str] = {
    "chunks": "LOUISE_DEMO_CHUNKS",
    "size": "LOUISE_DEMO_CHUNK_SIZE",
    "delay_ms": "LOUISE_DEMO_DELAY_MS",
    "mb": "LOUISE_DEMO_MB",
}

DEFAULT_MAX_LINE = 64 * 1024 * 1024


class KnobError(ValueError):
    """A knob or environment value that cannot be used; shown to the person as text."""


@dataclass(frozen=True)
class Settings:
    scenario: str | None = None  # LOUISE_DEMO_SCENARIO, e.g. "stream chunks=500"
    fail: str | None = None  # LOUISE_DEMO_FAIL
    knob_defaults: Mapping[str, str] = field(default_factory=dict)
    page_size: int = 10  # LOUISE_DEMO_PAGE_SIZE: sessions per session/list page
    saved_sessions: int = 3  # LOUISE_DEMO_SAVED_SESSIONS: loadable sessions at start
    state_dir: str | None = None  # LOUISE_DEMO_STATE_DIR: a directory, or "off"
    max_line: int = DEFAULT_MAX_LINE  # LOUISE_DEMO_MAX_LINE: longest accepted input line
    log_level: int = logging.INFO  # LOUISE_DEMO_LOG: DEBUG, INFO, WARNING, ERROR
    auth_required: bool = False  # LOUISE_DEMO_AUTH=required: sign in first
    legacy_models: bool = False  # LOUISE_DEMO_MODELS=legacy: `models` + session/set_model
    fork_live_only: bool = False  # LOUISE_DEMO_FORK=live: fork only sessions held (vibe)
    quota_step: float = 1.0  # LOUISE_DEMO_QUOTA_STEP: 5-hour window points per prompt

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Read the LOUISE_DEMO_* variables; raises KnobError on a malformed value."""
        defaults = {knob: env[var] for knob, var in KNOB_ENV.items() if env.get(var, "")}
        for knob, raw in defaults.items():
            _number(knob, raw, KNOB_ENV[knob])  # fail at start, not in the middle of a turn
        level_name = env.get("LOUISE_DEMO_LOG", "INFO").upper()
        level = logging.getLevelNamesMapping().get(level_name)
        if level is None:
            raise KnobError(f"LOUISE_DEMO_LOG: unknown level {level_name!r}")
        auth = env.get("LOUISE_DEMO_AUTH", "")
        if auth not in ("", "required"):
            raise KnobError(f"LOUISE_DEMO_AUTH: unknown value {auth!r} (use required)")
        fork = env.get("LOUISE_DEMO_FORK", "")
        if fork not in ("", "live"):
            raise KnobError(f"LOUISE_DEMO_FORK: unknown value {fork!r} (use live)")
        models = env.get("LOUISE_DEMO_MODELS", "")
        if models not in ("", "legacy"):
            raise KnobError(f"LOUISE_DEMO_MODELS: unknown value {models!r} (use legacy)")
        return cls(
            scenario=env.get("LOUISE_DEMO_SCENARIO") or None,
            fail=env.get("LOUISE_DEMO_FAIL") or None,
            knob_defaults=defaults,
            page_size=_env_int(env, "LOUISE_DEMO_PAGE_SIZE", 10, minimum=1),
            saved_sessions=_env_int(env, "LOUISE_DEMO_SAVED_SESSIONS", 3, minimum=0),
            state_dir=env.get("LOUISE_DEMO_STATE_DIR") or None,
            max_line=_env_int(env, "LOUISE_DEMO_MAX_LINE", DEFAULT_MAX_LINE, minimum=1024),
            log_level=level,
            auth_required=auth == "required",
            legacy_models=models == "legacy",
            fork_live_only=fork == "live",
            quota_step=_quota_step(env.get("LOUISE_DEMO_QUOTA_STEP", "")),
        )


def _quota_step(raw: str) -> float:
    if not raw:
        return 1.0
    value = _number("quota step", raw, "LOUISE_DEMO_QUOTA_STEP")
    if not 0 < value <= 100:
        raise KnobError(f"LOUISE_DEMO_QUOTA_STEP: {raw!r} is not in (0, 100]")
    return value


def _number(name: str, raw: str, where: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise KnobError(f"{where}: {raw!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise KnobError(f"{where}: {raw!r} must be a finite number >= 0")
    return value


def _env_int(env: Mapping[str, str], var: str, default: int, *, minimum: int) -> int:
    raw = env.get(var, "")
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise KnobError(f"{var}: {raw!r} is not an integer") from None
    if value < minimum:
        raise KnobError(f"{var}: must be at least {minimum}")
    return value


@dataclass(frozen=True)
class Choice:
    """A scenario picked for one prompt, with its positional args and knobs."""

    scenario: str
    args: tuple[str, ...] = ()
    knobs: Mapping[str, str] = field(default_factory=dict)


def parse_choice(words: str) -> Choice:
    """`NAME [ARG …] [key=value …]` -> Choice; an empty string means `help`."""
    args: list[str] = []
    knobs: dict[str, str] = {}
    for token in words.split():
        key, sep, value = token.partition("=")
        if sep and key:
            knobs[key] = value
        else:
            args.append(token)
    if not args:
        return Choice("help", (), knobs)
    return Choice(args[0], tuple(args[1:]), knobs)


# Fail modes that happen inside a prompt turn: with LOUISE_DEMO_FAIL they replace `chat`
# as the default scenario. The other modes are sticky switches (see failures.py).
TURN_FAIL_MODES = frozenset(
    {"crash", "garbage", "huge", "never_end", "unknown_request", "custom_notification"}
)


def choose(prompt_text: str, settings: Settings) -> Choice:
    text = prompt_text.strip()
    command, _, rest = text.partition(" ")
    if command == "/scenario":
        return parse_choice(rest)
    if command == "/help":
        return Choice("help")
    if settings.scenario:
        return parse_choice(settings.scenario)
    if settings.fail in TURN_FAIL_MODES:
        return Choice("fail", (settings.fail,))
    return Choice("chat")


class Knobs:
    """Typed access to a prompt's knobs, with environment defaults."""

    def __init__(self, choice: Choice, settings: Settings) -> None:
        self.args = choice.args
        self._values = dict(choice.knobs)
        self._env = settings.knob_defaults

    def _raw(self, name: str) -> tuple[str, str] | None:
        if name in self._values:
            return self._values[name], f"knob {name}"
        if name in self._env:
            return self._env[name], KNOB_ENV[name]
        return None

    def number(self, name: str, default: float, *, maximum: float = 1e9) -> float:
        raw = self._raw(name)
        if raw is None:
            return default
        value = _number(name, *raw)
        if value > maximum:
            raise KnobError(f"{raw[1]}: {raw[0]!r} is more than {maximum:g}")
        return value

    def integer(self, name: str, default: int, *, maximum: int = 10_000_000) -> int:
        value = self.number(name, default, maximum=maximum)
        if value != int(value):
            raise KnobError(f"{name}: {value:g} is not a whole number")
        return int(value)

    def optional_integer(self, name: str, *, maximum: int = 10_000_000) -> int | None:
        return None if self._raw(name) is None else self.integer(name, 0, maximum=maximum)

    def text(self, name: str, default: str) -> str:
        return self._values.get(name, default)


# The environment the demo agent reads (its --help epilog).
ENV_HELP = """\
environment:
  LOUISE_DEMO_SCENARIO    scenario for prompts without /scenario, e.g. "stream chunks=500"
  LOUISE_DEMO_CHUNKS      default of the chunks knob
  LOUISE_DEMO_CHUNK_SIZE  default of the size knob
  LOUISE_DEMO_DELAY_MS    default of the delay_ms knob
  LOUISE_DEMO_MB          default of the mb knob (huge, stderr_flood)
  LOUISE_DEMO_FAIL        a fail mode (stderr_flood floods during initialize)
  LOUISE_DEMO_PAGE_SIZE   sessions per session/list page (10)
  LOUISE_DEMO_SAVED_SESSIONS  saved sessions to list and load at start (3)
  LOUISE_DEMO_STATE_DIR   where sessions are stored (default: louise state dir/demo-agent;
                          "off": in memory only)
  LOUISE_DEMO_MAX_LINE    longest accepted input line in bytes (64 MiB)
  LOUISE_DEMO_LOG         stderr log level (INFO)
  LOUISE_DEMO_MODELS      "legacy": offer models the legacy way (`models` in the
                          session replies, session/set_model), as gemini-cli does
  LOUISE_DEMO_FORK        "live": session/fork only of a session this process made,
                          loaded or resumed (as vibe-acp: "Session not found" else)
  LOUISE_DEMO_AUTH        "required": sign in first (methods demo-token and, for clients
                          with terminal auth, demo-login = this command with --login)
  LOUISE_DEMO_LOGIN_ENV   a JSON object of more variables demo-login sets (how a client
                          shows and checks a sign-in's env: long values, foreign names)
  LOUISE_DEMO_QUOTA_STEP  points of the 5-hour request window each prompt uses (1: a
                          first hour of use passes without an alert; 4: the limit at 22)

Send the prompt "/help" for the scenarios, knobs and fail modes.
"""


def version() -> str:
    from louise import __version__

    return __version__
