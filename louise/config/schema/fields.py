"""The pieces every section of the configuration is built from: the base model (frozen,
unknown keys refused, Lua's empty table read as "no entries") and the checked field types
(Agent and environment names, absolute paths, finite seconds)."""

from __future__ import annotations

import math
import os
import re
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    model_validator,
)

from louise.config.schema.errors import custom_error

_AGENT_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def lua_empty_table(value: Any) -> Any:
    # Neovim sends an empty Lua table `{}` as an empty array; where a table is expected, it
    # means "no entries".
    return {} if isinstance(value, list) and not value else value


def expand_absolute(value: str, what: str) -> str:
    if not value:
        raise custom_error(f"{what} is empty", "use an absolute path or one starting with ~")
    expanded = os.path.expanduser(value)
    if not os.path.isabs(expanded):
        raise custom_error(
            f"{what} {value!r} is relative",
            "use an absolute path, or one starting with ~ which is expanded",
        )
    return os.path.normpath(expanded)


def seconds(value: Any, what: str) -> Any:
    """Seconds must be finite (`inf` would mean "no limit", which is spelled 0)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise custom_error(f"{what} is not finite",
                           "use a number of seconds, e.g. 300 (0: no limit)")
    return value


def check_agent_name(name: str) -> str:
    if not _AGENT_NAME_RE.fullmatch(name):
        raise custom_error(
            f"invalid Agent name {name!r}",
            "use letters, digits, '_', '-' or '.', starting with a letter or digit",
        )
    return name


def check_env_name(name: str) -> str:
    if not name or "=" in name or "\0" in name:
        raise custom_error(
            f"invalid environment variable name {name!r}", "use a name without '=' or NUL"
        )
    return name


AgentName = Annotated[StrictStr, AfterValidator(check_agent_name)]
EnvName = Annotated[StrictStr, AfterValidator(check_env_name)]
EnvMap = Annotated[dict[EnvName, StrictStr], BeforeValidator(lua_empty_table)]
RootPath = Annotated[StrictStr, AfterValidator(lambda v: expand_absolute(v, "root"))]
PositiveInt = Annotated[StrictInt, Field(gt=0)]


class ConfigModel(BaseModel):
    """Every table of the configuration: frozen, unknown keys refused (with a hint)."""

    # defer_build: a model's validator is built when it first validates, not when its
    # class is made (the engine's start validates a few of them; louise inspect none).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _empty_lua_table(cls, data: Any) -> Any:
        return lua_empty_table(data)
