"""Redis calls that wait out an outage: bounded backoff, one line when it starts, one when it ends.

scrapy-redis lets a lost connection end the spider with a traceback (its #108).
A worker instead keeps what it holds (a crawl running, a task to acknowledge),
retries with a delay doubling up to :data:`MAX_DELAY`, and says so once per
outage, whichever of its threads (the loop, the heartbeat) noticed first. What
the store already has is not touched by an outage; a task is acknowledged only
once Redis is back, so nothing is lost and nothing is run twice because of it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import redis

from trawl.common.secrets import redact

T = TypeVar("T")
FIRST_DELAY = 0.5
#: The longest wait between two tries: a restarted Redis is noticed within this (a worker uses the
#: shorter of this and its heartbeat's expiry, so that it beats again before the reaper may act).
MAX_DELAY = 15.0


class Outages:
    """Shared by a worker's threads, so that an outage is logged once, not once per thread."""

    def __init__(self, logger: logging.Logger, max_delay: float = MAX_DELAY) -> None:
        self.logger = logger
        self.max_delay = max_delay
        self._lock = threading.Lock()
        self._since: float | None = None

    def call(self, action: Callable[[], T]) -> T:
        """``action()``, tried again after each connection error until Redis answers."""
        delay = min(FIRST_DELAY, self.max_delay)
        wake = threading.Event()
        while True:
            try:
                result = action()
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                self._started(exc)
                wake.wait(delay)  # backing off from a down server: there is nothing to poll for
                delay = min(delay * 2, self.max_delay)
                continue
            self._ended()
            return result

    def _started(self, exc: Exception) -> None:
        with self._lock:
            if self._since is not None:
                return
            self._since = time.monotonic()
        self.logger.warning(
            "Redis unreachable (%s): holding the work in hand, retrying with a backoff up to %.0f s",
            redact(str(exc)) or type(exc).__name__,
            self.max_delay,
        )

    def _ended(self) -> None:
        with self._lock:
            since, self._since = self._since, None
        if since is not None:
            self.logger.warning("Redis is back after %.1f s", time.monotonic() - since)
