"""Polling a condition rather than sleeping: the one wait of the tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["wait_for"]


def wait_for(cond: Callable[[], Any], what: str, *, timeout: float = 60.0, every: float = 0.02) -> Any:
    """``cond()``'s first truthy value, polled every ``every`` seconds; fails naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
