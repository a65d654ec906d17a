"""The engine's options of `setup{}`: which keys are the engine's (the rest are Lua's),
the configuration they make (validated whole; else config.toml), and whether the person
named the default Agent."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from louise.config.cached import cached_config, parse_toml
from louise.config.host import HostConfig
from louise.config.loading import config_from_file, load_config_mapping, read_config_file
from louise.config.louiselm import LOUISELM_TOP_KEYS
from louise.config.model import Config
from louise.nvim.early_agent import ENGINE_KEYS
from louise.storage import paths

__all__ = ["ENGINE_KEYS", "default_agent_named", "engine_config", "host_config"]


def engine_config(opts: Mapping[str, Any] | None, *, keep: bool = True) -> Config:
    """`setup{}` engine options when given (validated whole), else config.toml. LouiseLM's
    top-level settings come along (to be named in `Config.warnings`, then ignored).
    `setup{ host = "auto", host_via = … }` (sent as `host = {mode, via}`) replaces the
    `[host]` section of either. Through the validated-configuration cache
    (`louise/config/cached.py`): unchanged options are not validated again; `keep` false
    (`:checkhealth`, which only looks) reads the cache and never writes it."""
    host = (opts or {}).get("host")
    host_opts = {k: v for k, v in host.items() if v is not None} \
        if isinstance(host, Mapping) else None
    chosen = _chosen(opts)
    file = raw = None
    if chosen is None:
        file = paths.config_file()
        raw = read_config_file(file)

    def validate() -> Config:
        if chosen is not None:
            config = load_config_mapping(chosen)
        else:
            config = config_from_file(raw, str(file))
        if host_opts is not None:
            return dataclasses.replace(config, host=host_config(host_opts))
        return config

    def parsed() -> Any:
        return [chosen if chosen is not None else parse_toml(raw), host_opts]

    inputs = ("engine", chosen, None if file is None else str(file), raw, host_opts)
    return cached_config(inputs, validate, parsed, keep=keep)


def host_config(host: Mapping[str, Any]) -> HostConfig:
    """`setup{}`'s host options as a checked `[host]` section (ConfigError when not)."""
    from louise.config.schema.validate import validate_host  # pydantic: on validation

    return validate_host({k: v for k, v in host.items() if v is not None}, "setup{host_via}")


def _chosen(opts: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The mapping `setup{}`'s engine options are validated as; None: none given."""
    chosen = {k: v for k, v in (opts or {}).items() if k in ENGINE_KEYS}
    if not chosen:
        return None
    louiselm = {k: v for k, v in (opts or {}).items() if k in LOUISELM_TOP_KEYS}
    agents = chosen.get("agents")
    if chosen.get("default_agent") is None and isinstance(agents, Mapping) and agents:
        # A Lua table has no order (its keys arrive in hash order): "the first
        # configured" is the first by name, the same in every Neovim.
        chosen["default_agent"] = min(str(name) for name in agents)
    ordered: dict[str, Any] = _in_name_order({**chosen, **louiselm})
    return ordered


def _in_name_order(value: Any) -> Any:
    """`setup{}`'s tables with their keys in name order. A Lua table has none: its keys
    arrive in the order of its hash, which differs from one Neovim to the next; in name
    order the same `setup{}` is the same input every time (its Agents listed alike, and
    the validated-configuration cache's key the same)."""
    if isinstance(value, Mapping):
        return {key: _in_name_order(item) for key, item in
                sorted(value.items(), key=lambda entry: (str(entry[0]), type(entry[0]).__name__))}
    if isinstance(value, list):
        return [_in_name_order(item) for item in value]
    return value


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
