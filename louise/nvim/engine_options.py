"""The engine's options of `setup{}`: which keys are the engine's (the rest are Lua's),
the configuration they make (validated whole; else config.toml), and whether the person
named the default Agent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from louise.config.host import HostConfig
from louise.config.loading import load_config, load_config_mapping
from louise.config.louiselm import LOUISELM_TOP_KEYS
from louise.config.model import Config
from louise.config.problems import ConfigError, problem_from_error
from louise.nvim.early_agent import ENGINE_KEYS
from louise.storage import paths

__all__ = ["ENGINE_KEYS", "default_agent_named", "engine_config", "host_config"]


def engine_config(opts: Mapping[str, Any] | None) -> Config:
    """`setup{}` engine options when given (validated whole), else config.toml. LouiseLM's
    top-level settings come along (to be named in `Config.warnings`, then ignored).
    `setup{ host = "auto", host_via = … }` (sent as `host = {mode, via}`) replaces the
    `[host]` section of either."""
    config = _engine_config(opts)
    host = (opts or {}).get("host")
    if isinstance(host, Mapping):
        return config.model_copy(update={"host": host_config(host)})
    return config


def host_config(host: Mapping[str, Any]) -> HostConfig:
    """`setup{}`'s host options as a checked `[host]` section (ConfigError when not)."""
    try:
        return HostConfig.model_validate({k: v for k, v in host.items() if v is not None})
    except ValidationError as exc:
        raise ConfigError([problem_from_error(error, lambda _loc: HostConfig)
                           for error in exc.errors()], "setup{host_via}") from None


def _engine_config(opts: Mapping[str, Any] | None) -> Config:
    chosen = {k: v for k, v in (opts or {}).items() if k in ENGINE_KEYS}
    if chosen:
        louiselm = {k: v for k, v in (opts or {}).items() if k in LOUISELM_TOP_KEYS}
        agents = chosen.get("agents")
        if chosen.get("default_agent") is None and isinstance(agents, Mapping) and agents:
            # A Lua table has no order (its keys arrive in hash order): "the first
            # configured" is the first by name, the same in every Neovim.
            chosen["default_agent"] = min(str(name) for name in agents)
        return load_config_mapping({**chosen, **louiselm})
    return load_config()


def default_agent_named(opts: Mapping[str, Any] | None) -> bool:
    """Whether the person named `default_agent` (setup{} or config.toml), rather than
    louise picking the first Agent: then :LouiseChat uses it without asking."""
    chosen = {k: v for k, v in (opts or {}).items() if k in ENGINE_KEYS}
    if chosen:
        return isinstance(chosen.get("default_agent"), str)
    try:
        text = paths.config_file().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    import tomllib  # only for a config.toml that is there (not at the start of setup{}'s)

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    return isinstance(data.get("default_agent"), str)
