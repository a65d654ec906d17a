"""The validator of `[limits]` (louise holds it as `louise/config/limits.py`'s dataclass)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from pydantic import Field, StrictBool, StrictFloat, field_validator

from louise.config.schema.errors import custom_error
from louise.config.schema.fields import ConfigModel
from louise.limits.governor import NEAR_PERCENT, parse_budget_key


class LimitsConfig(ConfigModel):
    confirm: StrictBool = True
    near_percent: StrictFloat = Field(default=NEAR_PERCENT, gt=0, le=100)
    park: StrictBool = True
    # workspace (absolute, expanded) -> window minutes -> share in percent
    budgets: dict[str, dict[int, float]] = Field(default_factory=dict)

    @field_validator("near_percent", mode="before")
    @classmethod
    def _percent(cls, value: Any) -> Any:
        if type(value) is int:
            return float(value)
        return value

    @field_validator("budgets", mode="before")
    @classmethod
    def _budgets(cls, value: Any) -> Any:
        if isinstance(value, list) and not value:
            return {}  # an empty Lua table
        if not isinstance(value, Mapping):
            raise custom_error("limits.budgets is not a table",
                               'use [limits.budgets] "~/work/x" = { "5h" = 50 }')
        budgets: dict[str, dict[int, float]] = {}
        for workspace, shares in value.items():
            where = os.path.expanduser(str(workspace))
            if not os.path.isabs(where):
                raise custom_error(f"budget workspace {workspace!r} is relative",
                                   "use an absolute path or one starting with ~")
            if not isinstance(shares, Mapping) or not shares:
                raise custom_error(f"budget of {workspace!r} is not a table of windows",
                                   'e.g. { "5h" = 50, "7d" = 20 }')
            windows: dict[int, float] = {}
            for key, share in shares.items():
                minutes = parse_budget_key(str(key))
                if minutes is None:
                    raise custom_error(f"budget window {key!r} of {workspace!r} is unknown",
                                       'name a window as louise shows it: "5h", "7d", "90m"')
                if isinstance(share, bool) or not isinstance(share, (int, float)) \
                        or not math.isfinite(share) or not 0 < share <= 100:
                    raise custom_error(f"budget {key!r} of {workspace!r} is not a share",
                                       "use a percentage above 0 and at most 100")
                windows[minutes] = float(share)
            budgets[os.path.normpath(where)] = windows
        return budgets
