"""Authentication methods an agent advertises (`initialize` → `authMethods`), read
defensively, and the interactive command of a terminal method.

Two flows (schema v1.21, stable): an `agent` method (the default when there is no
`type`) is passed to `authenticate`; a `terminal` method is never passed to it: the
client runs its own configured agent command, with the method's `args` appended and its
`env` applied, in an interactive terminal, and exit status 0 means signed in. The
method's args and env come from the agent, so `terminal_invocation` checks them (bounded,
no NUL, no dynamic-loader variables) and the caller shows the command to the person
before anything runs. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from louise.acp.errors import AcpError

MAX_AUTH_METHODS = 32
MAX_TEXT_CHARS = 500  # a method's name or description
MAX_TERMINAL_ARGS = 64
MAX_ARG_CHARS = 4096
MAX_TERMINAL_ENV = 64
MAX_ENV_VALUE_CHARS = 8192

# Variables that change which code the agent's executable loads: a terminal method may
# not set them (an agent's restart should not become another program).
_LOADER_ENV = re.compile(r"(LD_|DYLD_).*|NODE_OPTIONS|PYTHONPATH|PYTHONSTARTUP|PATH",
                         re.IGNORECASE)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

AuthKind = Literal["agent", "terminal", "other"]


class AuthMethodError(AcpError):
    """A terminal method louise will not run (what it asks for is unsafe or malformed)."""


@dataclass(frozen=True, slots=True)
class AuthMethod:
    """One advertised method. `kind` is `other` for a type louise does not know (shown,
    never used)."""

    id: str
    name: str
    description: str
    kind: AuthKind
    type: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    raw_args: Any = None
    raw_env: Any = None

    @property
    def usable(self) -> bool:
        return self.kind in ("agent", "terminal")


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else ""
    return text[:MAX_TEXT_CHARS]


def parse_auth_methods(raw: Any) -> list[AuthMethod]:
    """Every well-formed method (an `id` string), at most MAX_AUTH_METHODS; a malformed
    entry is skipped, as the schema's `x-deserialize-skip-invalid-items` says."""
    methods: list[AuthMethod] = []
    for entry in raw if isinstance(raw, list) else []:
        if len(methods) >= MAX_AUTH_METHODS:
            break
        if not isinstance(entry, dict):
            continue
        ident = entry.get("id")
        if not isinstance(ident, str) or not ident or len(ident) > MAX_TEXT_CHARS:
            continue
        kind_raw = entry.get("type", "agent")
        kind_raw = kind_raw if isinstance(kind_raw, str) else "agent"
        kind: AuthKind = kind_raw if kind_raw in ("agent", "terminal") else "other"  # type: ignore[assignment]
        args: tuple[str, ...] = ()
        env: tuple[tuple[str, str], ...] = ()
        if kind == "terminal":
            raw_args = entry.get("args")
            args = tuple(a for a in raw_args if isinstance(a, str)) \
                if isinstance(raw_args, list) else ()
            raw_env = entry.get("env")
            env = tuple((k, v) for k, v in raw_env.items()
                        if isinstance(k, str) and isinstance(v, str)) \
                if isinstance(raw_env, dict) else ()
        methods.append(AuthMethod(
            id=ident, name=_text(entry.get("name")) or ident,
            description=_text(entry.get("description")), kind=kind, type=kind_raw[:64],
            args=args, env=env, raw_args=entry.get("args"), raw_env=entry.get("env")))
    return methods


@dataclass(frozen=True, slots=True)
class TerminalInvocation:
    """What a terminal method runs: argv (no shell), the environment on top of the
    person's (the Agent's configured env, then the method's), and the working
    directory."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    method_env: Mapping[str, str]
    cwd: str | None

    def display(self) -> str:
        """The command as a person reads it: the method's env, then argv, quoted where
        a word holds spaces or quotes."""
        words = [f"{k}={_quote(v)}" for k, v in self.method_env.items()]
        words.extend(_quote(a) for a in self.argv)
        return " ".join(words)


def _quote(word: str) -> str:
    if word and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def terminal_invocation(method: AuthMethod, command: str, args: Sequence[str],
                        env: Mapping[str, str], cwd: str | None) -> TerminalInvocation:
    """The configured agent command with the method's args appended and its env applied
    (it overrides the configured env). Raises AuthMethodError for what louise will not
    run: not a terminal method, too many or too long args, NUL anywhere, a bad or
    dynamic-loader variable name."""
    if method.kind != "terminal":
        raise AuthMethodError(f"{method.name!r} is not a terminal sign-in method")
    raw_args, raw_env = method.raw_args, method.raw_env
    if raw_args is not None and not (isinstance(raw_args, list)
                                     and all(isinstance(a, str) for a in raw_args)):
        raise AuthMethodError(f"{method.name!r}: its args are not a list of strings")
    if raw_env is not None and not (isinstance(raw_env, dict)
                                    and all(isinstance(v, str) for v in raw_env.values())):
        raise AuthMethodError(f"{method.name!r}: its env is not a table of strings")
    if len(method.args) > MAX_TERMINAL_ARGS:
        raise AuthMethodError(f"{method.name!r}: more than {MAX_TERMINAL_ARGS} arguments")
    for arg in method.args:
        if len(arg) > MAX_ARG_CHARS or "\0" in arg:
            raise AuthMethodError(f"{method.name!r}: an argument is too long or holds NUL")
    if len(method.env) > MAX_TERMINAL_ENV:
        raise AuthMethodError(f"{method.name!r}: more than {MAX_TERMINAL_ENV} variables")
    method_env: dict[str, str] = {}
    for name, value in method.env:
        if not _ENV_NAME.fullmatch(name) or len(name) > 256:
            raise AuthMethodError(f"{method.name!r}: invalid variable name {name[:40]!r}")
        if _LOADER_ENV.fullmatch(name):
            raise AuthMethodError(f"{method.name!r} sets {name}, which changes what program "
                                  "runs; louise does not run it")
        if len(value) > MAX_ENV_VALUE_CHARS or "\0" in value:
            raise AuthMethodError(f"{method.name!r}: the value of {name} is too long or "
                                  "holds NUL")
        method_env[name] = value
    return TerminalInvocation(argv=(command, *args, *method.args),
                              env={**env, **method_env}, method_env=method_env, cwd=cwd)
