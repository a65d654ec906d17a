"""Waiting in a benchmark: until a condition holds, checked every `step` seconds, or a
TimeoutError saying what did not come."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0,
             step: float = 0.005) -> Any:
    """`check()`'s first true value."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(step)
