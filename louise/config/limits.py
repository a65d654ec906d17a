"""`[limits]` of the configuration: the governor (a confirmation before a turn likely to
hit a limit, parking a refused turn until the reset) and per-workspace budgets (checked
by `schema/limits.py`).

```toml
[limits]
confirm = true            # a second send before a turn likely to hit a limit (false: off)
near_percent = 95         # a window this full counts as likely
park = true               # a turn refused for quota waits for the reset, then goes again

[limits.budgets]
"~/work/x" = { "5h" = 50 }   # this workspace may use half of every 5h window
```
"""

from __future__ import annotations

from dataclasses import dataclass, field

from louise.limits.governor import NEAR_PERCENT


@dataclass(frozen=True, slots=True, kw_only=True)
class LimitsConfig:
    """The `[limits]` section: confirmations, the near threshold, parking, budgets."""

    confirm: bool = True
    near_percent: float = NEAR_PERCENT
    park: bool = True
    # workspace (absolute, expanded) -> window minutes -> share in percent
    budgets: dict[str, dict[int, float]] = field(default_factory=dict)
