"""The stable messages of the account-limits contract and the error that carries them.

The validation messages are part of the contract (docs/account-limits-v1.md): callers and
tests compare them as exact strings, so they never change wording.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing (louise inspect's start)
if TYPE_CHECKING:
    from typing import Final


MSG_SNAPSHOT_BUCKETS: Final = "account limits snapshot must contain a dense buckets array"
MSG_SNAPSHOT_UNLIMITED: Final = "account limits unlimited must be a boolean"
MSG_BUCKET_ID: Final = "account limit bucket id must be a non-empty string"
MSG_BUCKET_UNIQUE_WINDOWS: Final = (
    "account limit bucket ids must be unique and windows must be dense"
)
MSG_BUCKET_METADATA: Final = "account limit bucket metadata is malformed"
MSG_WINDOW: Final = "account limit window is malformed"
MSG_DEFAULT_BUCKET_MALFORMED: Final = "account limits default bucket is malformed"
MSG_DEFAULT_BUCKET_MISSING: Final = "account limits default bucket is missing"
MSG_RESET_CREDITS: Final = "account limit reset credits are malformed"

# Every message `parse_snapshot` can raise, in the order its checks run.
VALIDATION_MESSAGES: Final[tuple[str, ...]] = (
    MSG_SNAPSHOT_BUCKETS,
    MSG_SNAPSHOT_UNLIMITED,
    MSG_BUCKET_ID,
    MSG_BUCKET_UNIQUE_WINDOWS,
    MSG_BUCKET_METADATA,
    MSG_WINDOW,
    MSG_DEFAULT_BUCKET_MALFORMED,
    MSG_DEFAULT_BUCKET_MISSING,
    MSG_RESET_CREDITS,
)

# Errors that `inspect` puts on a state (observation notes, not validation failures).
ERROR_RESET_PASSED: Final = "account limits reset time passed without a confirmed refresh"
ERROR_NO_LIVE_SESSION: Final = "no live limits-capable Session"

# The note on a state whose latest read or update failed validation names its origin, so
# `account limit window is malformed` is not mistaken for a note about the window itself.
MALFORMED_SNAPSHOT: Final = "malformed account limits snapshot"


def malformed_note(message: str) -> str:
    """`malformed account limits snapshot: <validation message>`."""
    return f"{MALFORMED_SNAPSHOT}: {message}"


class LimitsError(ValueError):
    """A snapshot failed validation; `str(error)` is exactly one of `VALIDATION_MESSAGES`."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message
