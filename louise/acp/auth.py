"""Authentication methods an agent advertises (`initialize` → `authMethods`), read
defensively, and the interactive command of a terminal method.

Two flows (schema v1.21, stable): an `agent` method (the default when there is no
`type`) is passed to `authenticate`; a `terminal` method is never passed to it: the
client runs its own configured agent command, with the method's `args` appended and its
`env` applied, in an interactive terminal, and exit status 0 means signed in. The
method's args and env come from the agent, so `terminal_invocation` checks them (bounded,
no NUL, env only from an allow-list) and the caller shows the command to the person
before anything runs (`TerminalInvocation.shown`: argv first, bounded, saying what was
cut). Pure: no I/O.

The env allow-list: a method may set only the agent's own settings, variables named in
upper case after the agent (`<NAMESPACE>_<NAME>`), the namespaces being the first word of
the Agent's configured name and of its program's name (`claude-agent-acp` → `CLAUDE`;
`python -m louise.demo_agent` → `LOUISE`; `npx @scope/codex-acp` → `CODEX`), and never
one that a loader, interpreter, shell or common tool reads (`LD`, `NODE`, `PYTHON`,
`GIT`, `BASH`, …), whatever the agent is called. Real agents' terminal sign-ins set no
variable, or a few of their own. Anything else (`BASH_ENV`, `NODE_OPTIONS`,
`npm_config_*`, `PERL5OPT`, `GCONV_PATH`, `GIT_SSH_COMMAND`, `PATH`, …) makes louise
refuse the method, naming the variable.
"""

from __future__ import annotations

import os
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
MAX_ENV_NAME_CHARS = 128
# What a one-line prompt shows of a command: each word, each variable's value, the whole.
MAX_SHOWN_WORD = 120
MAX_SHOWN_VALUE = 60
MAX_SHOWN_COMMAND = 600

# Patterns for a terminal method only: compiled (and cached by `re`) when one is checked.
# An agent's own setting: upper case, its namespace word, then `_` and more.
_OWN_SETTING = r"([A-Z][A-Z0-9]*)(?:_[A-Z0-9]+)+"
# Namespaces of loaders, interpreters, shells and tools a program may start: never an
# agent's, whatever it is called.
_RESERVED = frozenset({
    "LD", "DYLD", "NODE", "NODEJS", "NPM", "NPX", "YARN", "PNPM", "PNPX", "COREPACK", "BUN",
    "BUNX", "DENO", "PYTHON", "PYTHON2", "PYTHON3", "PIP", "PIPX", "UV", "UVX", "VIRTUAL",
    "CONDA", "PERL", "PERL5", "PERLLIB", "RUBY", "RUBYLIB", "RUBYOPT", "GEM", "BUNDLE",
    "BUNDLER", "JAVA", "JDK", "JRE", "CLASSPATH", "MAVEN", "GRADLE", "GIT", "SSH", "GPG",
    "GNUPG", "BASH", "ZSH", "KSH", "SH", "DASH", "FISH", "SHELL", "ENV", "GCONV", "GLIBC",
    "MALLOC", "LC", "LANG", "LANGUAGE", "TZ", "HOME", "USER", "LOGNAME", "TMP", "TMPDIR",
    "TEMP", "XDG", "PATH", "SSL", "OPENSSL", "CURL", "REQUESTS", "HTTP", "HTTPS", "FTP", "ALL",
    "NO", "SOCKS", "PROXY", "PS", "PROMPT", "EDITOR", "VISUAL", "PAGER", "LESS", "BROWSER",
    "TERM", "TERMINFO", "DISPLAY", "WAYLAND", "DBUS", "GIO", "GTK", "QT", "ELECTRON", "CHROME",
    "NVIM", "VIM", "LUA", "TCL", "TK", "GO", "CARGO", "RUST", "RUSTC", "DOTNET", "CORECLR",
    "COMPLUS", "R", "SUDO", "DOAS", "PKG", "CC", "CXX", "CPP",
})
# Programs that run another one named in their arguments: that one names the agent.
_LAUNCHERS = frozenset({
    "python", "pypy", "node", "nodejs", "npx", "bunx", "bun", "deno", "uv", "uvx", "pipx",
    "env", "sh", "bash", "zsh", "dash", "fish", "ruby", "perl", "java", "npm", "pnpm", "pnpx",
    "yarn", "cmd", "powershell", "pwsh", "exec", "nice", "nohup",
})
_ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"

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
class CommandView:
    """A command as a one-line prompt shows it: `text` (argv first, then `with` the
    variables the method adds), each word and the whole bounded; `cut` when something is
    left out (`text` then says so, and `whole` has all of it, one item a line)."""

    text: str
    cut: bool
    whole: tuple[str, ...]


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
        """The whole command as a person reads it: argv, quoted where a word holds
        spaces or quotes, then `with` the method's variables."""
        text = " ".join(_quote(a) for a in self.argv)
        if self.method_env:
            text += " with " + " ".join(f"{k}={_quote(v)}" for k, v in self.method_env.items())
        return text

    def shown(self, limit: int = MAX_SHOWN_COMMAND) -> CommandView:
        """The command for a one-line prompt: what runs first, then the variables; long
        words and values shortened (`…`), the whole at most about `limit` characters,
        and a note saying how much there is when anything was left out."""
        cut = False

        def short(word: str, size: int) -> str:
            nonlocal cut
            if len(word) <= size:
                return _quote(word)
            cut = True
            return _quote(word[:size]) + "…"

        text = " ".join(short(a, MAX_SHOWN_WORD) for a in self.argv)
        if self.method_env:
            text += " with " + " ".join(f"{k[:MAX_SHOWN_WORD]}={short(v, MAX_SHOWN_VALUE)}"
                                        for k, v in self.method_env.items())
        if len(text) > limit:
            text, cut = text[:limit] + "…", True
        if not cut:
            return CommandView(text, False, ())
        whole = self.display()
        text += f" [shortened: the whole command is {len(whole):,} characters]"
        lines = ["runs:", *(f"  {_quote(a)}" for a in self.argv)]
        if self.method_env:
            lines += ["with:", *(f"  {k}={_quote(v)}" for k, v in self.method_env.items())]
        return CommandView(text, True, tuple(lines))


def _quote(word: str) -> str:
    if word and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def _first_word(name: str) -> str | None:
    words = re.findall(r"[A-Za-z0-9]+", name)
    return words[0].upper() if words else None


def _program(command: str, args: Sequence[str]) -> str:
    """The name of the program the command runs: its file's, or, for a launcher
    (`python -m X`, `npx @scope/X`, `node X.js`), the first argument that is not an
    option, its npm scope, version and directories left out."""
    name = os.path.basename(command)
    launcher = re.match(r"[A-Za-z]+", name)
    if launcher is None or launcher.group().lower() not in _LAUNCHERS:
        return name
    target = next((a for a in args if a and not a.startswith("-")), "")
    if target.startswith("@"):
        target = target.partition("/")[2]
    return os.path.basename(target.partition("@")[0] if "@" in target else target)


def agent_namespaces(agent: str, command: str, args: Sequence[str]) -> tuple[str, ...]:
    """The namespaces of the agent's own settings (see the module docstring)."""
    found: list[str] = []
    for name in (agent, _program(command, args)):
        word = _first_word(name)
        if word is not None and word not in _RESERVED and word not in found:
            found.append(word)
    return tuple(found)


def _own_setting(name: str, namespaces: Sequence[str]) -> bool:
    match = re.fullmatch(_OWN_SETTING, name)
    return match is not None and match.group(1) in namespaces \
        and match.group(1) not in _RESERVED


def terminal_invocation(method: AuthMethod, command: str, args: Sequence[str],
                        env: Mapping[str, str], cwd: str | None,
                        agent: str = "") -> TerminalInvocation:
    """The configured agent command with the method's args appended and its env applied
    (it overrides the configured env). Raises AuthMethodError for what louise will not
    run: not a terminal method, too many or too long args, NUL anywhere, a variable that
    is not one of the agent's own settings (`agent`: the configured Agent's name)."""
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
    namespaces = agent_namespaces(agent, command, args)
    method_env: dict[str, str] = {}
    for name, value in method.env:
        if not re.fullmatch(_ENV_NAME, name) or len(name) > MAX_ENV_NAME_CHARS:
            raise AuthMethodError(f"{method.name!r}: invalid variable name {name[:40]!r}")
        if not _own_setting(name, namespaces):
            own = " or ".join(f"{n}_…" for n in namespaces) or "none"
            raise AuthMethodError(
                f"{method.name!r} would set {name}, which is not one of the agent's own "
                f"settings (a sign-in may set only {own}); louise does not run it")
        if len(value) > MAX_ENV_VALUE_CHARS or "\0" in value:
            raise AuthMethodError(f"{method.name!r}: the value of {name} is too long or "
                                  "holds NUL")
        method_env[name] = value
    return TerminalInvocation(argv=(command, *args, *method.args),
                              env={**env, **method_env}, method_env=method_env, cwd=cwd)
