"""mistral-vibe (vibe-acp): a `session/prompt` refused with its application error -31001
("Rate limit exceeded for <provider> (model: <model>)", data `{"provider", "model"}`) is a
reached limit.

vibe 3.0.2 sends no quota figures over ACP (checked in `vibe/acp/exceptions.py`); only this
refusal. The code is vibe's own (outside JSON-RPC's reserved range), so it counts only with
vibe's data shape, never from another agent that happens to use the number.
"""

from __future__ import annotations

from typing import Any, Final

SOURCE: Final = "vibe rate-limit error"
RATE_LIMITED_CODE: Final = -31001
BUCKET: Final = "vibe"
BUCKET_LABEL: Final = "Vibe"
REACHED_TYPE: Final = "rate_limit"


def is_rejection(code: int, data: Any) -> bool:
    return (code == RATE_LIMITED_CODE and isinstance(data, dict)
            and isinstance(data.get("provider"), str) and isinstance(data.get("model"), str))
