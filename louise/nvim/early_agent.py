"""The first chat's agent, spawned first thing in `python -m louise.nvim`, before the
engine's modules load: the agent's own start (a Python or node program: 100 ms to
seconds of CPU) then runs beside the engine's imports instead of after them.

The Lua side names what its first command wants in `LOUISE_EARLY_AGENT` (JSON: the agent
named, whether setup{} has engine options, its `agents` and `default_agent`), which is
removed from the environment at once (agents never inherit it); without setup{}'s, the
agents are config.toml's (read with tomllib, which the engine then imports anyway).
It is a speculation: the engine, once it has validated the configuration, takes this
process for that agent only when the spec it computes is equal (`AgentProcess.adopt`);
every other way it is stopped (its process group killed). Light on purpose: no anyio,
pydantic or configuration module (nor pynvim) is imported here.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys

from louise.acp.spawn import EarlyAgent, SpawnSpec, spawn_early, spawn_spec
from louise.storage import paths

TYPE_CHECKING = False  # typing's, without importing typing before the spawn
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

ENV_VAR = "LOUISE_EARLY_AGENT"
MAX_HINT_BYTES = 64 * 1024  # a bigger setup{} is not guessed at
MAX_CONFIG_BYTES = 1024 * 1024  # nor a config.toml bigger than this
DEMO_AGENT = "demo"
# setup{}'s engine options (lua/louise/options.lua's ENGINE_KEYS): when setup{} gives any,
# the configuration is setup{}'s alone, config.toml is not read.
ENGINE_KEYS = ("agents", "default_agent", "permissions", "fs", "terminal", "request_timeout",
               "prompt_idle_timeout", "mcp_servers", "checkpoints",
               "limits", "context")

_started: EarlyAgent | None = None


def start_from_environment() -> EarlyAgent | None:
    """Spawn the agent `LOUISE_EARLY_AGENT` asks for, if it can tell which and how (the
    variable is removed either way). Call it first thing, before any thread starts."""
    global _started
    hint = os.environ.pop(ENV_VAR, None)
    if not hint or len(hint) > MAX_HINT_BYTES or _started is not None:
        return None
    try:
        data = json.loads(hint)
    except ValueError:
        return None
    spec = spec_for(data, os.environ, sys.executable)
    if spec is None:
        return None
    # Neovim stopping louise while it still loads (SIGTERM, before app.py's own handler)
    # takes the early agent along; the end of its stdin would not stop an agent that
    # ignores it. The handler is in place before the spawn: a SIGTERM right after it
    # (the agent running, louise not yet told) must not end louise by default and leave
    # the agent behind; one during the spawn waits for it.
    global _spawning
    signal.signal(signal.SIGTERM, _stop_and_die)
    _spawning = True
    try:
        _started = spawn_early(spec)
    finally:
        _spawning = False
    if _started is not None:
        # And a process that fails while it loads (an exception on the way out).
        atexit.register(stop_started)
    else:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _term_pending:
        _stop_and_die(signal.SIGTERM, None)
    return _started


_spawning = False  # start_from_environment is spawning the agent
_term_pending = False  # a SIGTERM came meanwhile: handled once the spawn is over


def _stop_and_die(signum: int, frame: object) -> None:
    global _term_pending
    if _spawning:
        _term_pending = True
        return
    stop_started()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def take_started() -> EarlyAgent | None:
    """The early agent, for the engine's registry (once)."""
    global _started
    early, _started = _started, None
    return early


def stop_started() -> None:
    """Stop an early agent the engine never had (the process leaves before it was built)."""
    early = take_started()
    if early is not None:
        early.stop()


def spec_for(hint: Any, base_env: Mapping[str, str], executable: str) -> SpawnSpec | None:
    """What the engine will spawn for the first command's agent, as far as setup{} or
    config.toml (or no configuration at all: the demo agent) tells; None when it cannot be
    told here (a picker to come, the session host, a table that would not validate as it
    is, a config.toml tomllib does not read)."""
    if not isinstance(hint, dict) or hint.get("host"):
        return None  # through the session host the agent is `louise attach`, not this
    if hint.get("setup"):  # setup{}'s engine options: config.toml is not read
        agents = _table(hint.get("agents"))
        default = hint.get("default_agent")
        # "the first configured": a Lua table has no order, the first by name
        # (engine_options)
        first = min(agents) if agents else DEMO_AGENT
    else:
        data = _config_toml()
        if data is None or data.get("host") is not None:
            return None  # unreadable (the engine says why), or a [host] section
        agents = _table(data.get("agents"))
        default = data.get("default_agent")
        first = next(iter(agents), DEMO_AGENT) if agents else DEMO_AGENT
    if agents is None:
        return None
    named = hint.get("agent")
    if named is None and default is None \
            and len([name for name in agents if name != DEMO_AGENT]) > 1:
        return None  # the engine asks which agent
    name = named if named is not None else (default if default is not None else first)
    if not isinstance(name, str):
        return None
    if name in agents:
        return _agent_spec(agents[name], base_env)
    if name == DEMO_AGENT:
        return spawn_spec(demo_agent_argv(executable), None, {}, base_env)
    return None


def _config_toml() -> dict[str, Any] | None:
    """config.toml as tomllib reads it ({} when there is none), as the engine will read it
    (`louise.config.loading.load_config`); None when it cannot be read here."""
    try:
        with open(paths.config_file_name(), "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError:
        return None
    if len(raw) > MAX_CONFIG_BYTES:
        return None
    import tomllib  # the engine imports it for this file anyway

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def demo_agent_argv(executable: str) -> list[str]:
    """The bundled demo agent's command, as `louise.config.agents.demo_agent_config`
    makes it (a unit test holds the two together)."""
    return [os.path.abspath(executable), "-P", "-m", "louise.demo_agent"]


def _table(value: Any) -> dict[str, Any] | None:
    """A Lua table as JSON: an empty one may come as `[]`."""
    if value is None or value == []:
        return {}
    return value if isinstance(value, dict) else None


def _agent_spec(agent: Any, base_env: Mapping[str, str]) -> SpawnSpec | None:
    """`agents.<name>` as the configuration would start it, if its fields are plainly
    valid (anything else: the engine says what is wrong, and spawns nothing early)."""
    agent = _table(agent)
    if agent is None:
        return None
    command, args, env, cwd = (agent.get("command"), _list(agent.get("args")),
                               _table(agent.get("env")), agent.get("cwd"))
    if not isinstance(command, str) or not command.strip() or args is None or env is None:
        return None
    if not all(isinstance(a, str) for a in args) \
            or not all(isinstance(v, str) for v in env.values()):
        return None
    if command.startswith("~"):  # spawning is shell-free: the configuration expands it
        command = os.path.expanduser(command)
    if cwd is not None:
        if not isinstance(cwd, str) or not cwd:
            return None
        cwd = os.path.expanduser(cwd)
        if not os.path.isabs(cwd):
            return None
        cwd = os.path.normpath(cwd)
    return spawn_spec([command, *args], cwd, env, base_env)


def _list(value: Any) -> list[Any] | None:
    if value is None or value == {}:
        return []
    return value if isinstance(value, list) else None
