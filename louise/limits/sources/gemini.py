"""gemini-cli: a `session/prompt` refused with JSON-RPC error code 429 is a reached limit.

gemini-cli exposes no quota windows over ACP (its `_meta.quota` on a prompt response counts
tokens, not entitlement); a rate-limited turn fails with `{"code": 429, "message": "Rate
limit exceeded…"}`. That marks the `gemini` bucket reached, reset unknown.
"""

from __future__ import annotations

from typing import Final

SOURCE: Final = "gemini rate-limit error"
RATE_LIMITED_CODE: Final = 429
BUCKET: Final = "gemini"
BUCKET_LABEL: Final = "Gemini"
REACHED_TYPE: Final = "rate_limit"


def is_rejection(code: int) -> bool:
    return code == RATE_LIMITED_CODE
