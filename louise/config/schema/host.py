"""The validator of `[host]` (louise holds it as `louise/config/host.py`'s dataclass)."""

from __future__ import annotations

import shlex
from typing import Literal

from pydantic import Field, StrictFloat, StrictStr, field_validator

from louise.config.host import DEFAULT_IDLE_EXIT
from louise.config.schema.errors import custom_error
from louise.config.schema.fields import ConfigModel, seconds


class HostConfig(ConfigModel):
    mode: Literal["off", "auto"] = "off"
    via: StrictStr | None = None
    idle_exit: StrictFloat = Field(default=DEFAULT_IDLE_EXIT, ge=0)

    @field_validator("idle_exit", mode="before")
    @classmethod
    def _idle_number(cls, value: object) -> object:
        return seconds(value, "idle_exit")

    @field_validator("via")
    @classmethod
    def _via(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise custom_error(f"via cannot be read as a command: {exc}",
                               'quote as in a shell, e.g. via = "ssh devbox louise serve '
                               '--stdio"') from None
        if not words:
            raise custom_error("via is empty", 'e.g. via = "ssh devbox louise serve --stdio"')
        return value
