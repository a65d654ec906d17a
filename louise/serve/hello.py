"""The attach hello: the one line a front end writes first on a new host connection,
before any ACP, naming the agent it wants (and, optionally, how to start it) and who it
is. Pure: built and parsed here, by `louise attach` and by the host alike.

    {"jsonrpc":"2.0","method":"_louise/attach","params":{"version":1,"agent":"NAME",
     "agentCommand":{"command":"...","args":[...],"env":{...},"cwd":null}|null,
     "frontEnd":{"name":"nvim"|"cli"|"acp","pid":123,"sameMachine":true}}}

A first line that is not this method is not a hello: the connection is plain ACP, served
as the host's default agent. A line that is this method but malformed is refused (the
host answers nothing and closes), never guessed at."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

HELLO_METHOD = "_louise/attach"
HELLO_VERSION = 1
# A hello is small; anything bigger is not one worth reading.
MAX_HELLO_BYTES = 256 * 1024
MAX_ARGS = 1024
MAX_ENV = 1024
MAX_STRING = 32 * 1024
MAX_NAME = 256

FrontEndName = Literal["nvim", "cli", "acp"]
FRONT_END_NAMES: tuple[FrontEndName, ...] = ("nvim", "cli", "acp")


class HelloError(ValueError):
    """A line that says it is the hello but is not a valid one."""


@dataclass(frozen=True)
class AgentCommand:
    """How the front end resolved the agent: shell-free argv, environment, directory."""

    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None

    @property
    def argv(self) -> list[str]:
        return [self.command, *self.args]

    def key(self) -> tuple[Any, ...]:
        """What makes two commands the same agent process (hashable)."""
        return (self.command, self.args, tuple(sorted(self.env.items())), self.cwd)


@dataclass(frozen=True)
class FrontEnd:
    name: FrontEndName = "acp"
    pid: int | None = None
    same_machine: bool = False


@dataclass(frozen=True)
class Hello:
    agent: str
    agent_command: AgentCommand | None = None
    front_end: FrontEnd = FrontEnd()
    version: int = HELLO_VERSION


def hello_message(hello: Hello) -> dict[str, Any]:
    command: dict[str, Any] | None = None
    if hello.agent_command is not None:
        spec = hello.agent_command
        command = {"command": spec.command, "args": list(spec.args), "env": dict(spec.env),
                   "cwd": spec.cwd}
    front = hello.front_end
    return {"jsonrpc": "2.0", "method": HELLO_METHOD, "params": {
        "version": hello.version, "agent": hello.agent, "agentCommand": command,
        "frontEnd": {"name": front.name, "pid": front.pid, "sameMachine": front.same_machine}}}


def build_hello(hello: Hello) -> bytes:
    """The hello as one NDJSON line (ending in a newline)."""
    line = json.dumps(hello_message(hello), ensure_ascii=False, separators=(",", ":"))
    data = line.encode("utf-8", "surrogateescape") + b"\n"
    if len(data) > MAX_HELLO_BYTES:
        raise HelloError(f"the attach hello is over {MAX_HELLO_BYTES} bytes")
    return data


def _string(value: Any, what: str, limit: int = MAX_STRING) -> str:
    if not isinstance(value, str):
        raise HelloError(f"{what} is not a string")
    if len(value) > limit:
        raise HelloError(f"{what} is longer than {limit} characters")
    if "\x00" in value:
        raise HelloError(f"{what} holds a NUL character")
    return value


def _agent_command(value: Any) -> AgentCommand | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise HelloError("agentCommand is not an object")
    command = _string(value.get("command"), "agentCommand.command")
    if not command.strip():
        raise HelloError("agentCommand.command is empty")
    args = value.get("args", [])
    if not isinstance(args, list) or len(args) > MAX_ARGS:
        raise HelloError(f"agentCommand.args is not a list of at most {MAX_ARGS} strings")
    env = value.get("env", {})
    if env is None:
        env = {}
    if not isinstance(env, dict) or len(env) > MAX_ENV:
        raise HelloError(f"agentCommand.env is not an object of at most {MAX_ENV} strings")
    cwd = value.get("cwd")
    return AgentCommand(
        command=command,
        args=tuple(_string(arg, "an agentCommand argument") for arg in args),
        env={_string(k, "an agentCommand.env name", MAX_NAME): _string(v, f"agentCommand.env[{k}]")
             for k, v in env.items()},
        cwd=None if cwd is None else _string(cwd, "agentCommand.cwd"))


def _front_end(value: Any) -> FrontEnd:
    if value is None:
        return FrontEnd()
    if not isinstance(value, dict):
        raise HelloError("frontEnd is not an object")
    name = value.get("name", "acp")
    if name not in FRONT_END_NAMES:
        name = "acp"  # a front end louise does not know is a plain ACP client
    pid = value.get("pid")
    if pid is not None and (not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0):
        raise HelloError("frontEnd.pid is not a positive integer")
    same = value.get("sameMachine", False)
    if not isinstance(same, bool):
        raise HelloError("frontEnd.sameMachine is not true or false")
    return FrontEnd(name=name, pid=pid, same_machine=same)


def hello_from_message(message: Any) -> Hello | None:
    """The hello in a decoded first message; None when it is not the hello (plain ACP)."""
    if not isinstance(message, dict) or message.get("method") != HELLO_METHOD:
        return None
    if "id" in message:
        raise HelloError("the attach hello is a notification, not a request")
    params = message.get("params")
    if not isinstance(params, dict):
        raise HelloError("the attach hello has no params object")
    version = params.get("version")
    if version != HELLO_VERSION:
        raise HelloError(f"attach hello version {version!r} is not {HELLO_VERSION}")
    agent = _string(params.get("agent"), "agent", MAX_NAME)
    if not agent.strip():
        raise HelloError("agent is empty")
    return Hello(agent=agent, agent_command=_agent_command(params.get("agentCommand")),
                 front_end=_front_end(params.get("frontEnd")), version=version)


def parse_hello(line: bytes) -> Hello | None:
    """The hello on a connection's first line; None when that line is not the hello (the
    connection is then plain ACP, this line its first message). Raises HelloError for a
    hello that is malformed or over its bound."""
    if len(line) > MAX_HELLO_BYTES:
        if b'"' + HELLO_METHOD.encode() + b'"' in line[:4096]:
            raise HelloError(f"the attach hello is over {MAX_HELLO_BYTES} bytes")
        return None
    try:
        message = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None  # not JSON: not a hello; the ACP side answers it as it would
    return hello_from_message(message)
