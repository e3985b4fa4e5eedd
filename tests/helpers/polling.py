"""Waiting for a condition by polling it: the one way a test waits (never a bare sleep)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, every: float = 0.02) -> bool:
    """Polls ``predicate`` every ``every`` seconds until it is true or ``timeout`` is up; its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return bool(predicate())
