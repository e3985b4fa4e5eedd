"""Requests on the wire: sent and not answered yet, and since when.

A server that accepts the connection and never answers cost 8 minutes of
silence: 49 identical progress lines, nothing about the four requests waiting
120 s each. The download handler notes each request here when it goes
out and when its answer (or failure) is back; the progress line reads the
oldest and says ``waiting 95 s on 4 requests to web.archive.org``.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

_registries: WeakKeyDictionary[Any, InFlight] = WeakKeyDictionary()


@dataclass
class InFlight:
    _started: dict[int, tuple[float, str]] = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=itertools.count)

    def start(self, url: str) -> int:
        token = next(self._ids)
        self._started[token] = (time.monotonic(), urlsplit(url).hostname or "?")
        return token

    def end(self, token: int) -> None:
        self._started.pop(token, None)

    def __len__(self) -> int:
        """Requests on the wire now (the metrics' ``trawl_requests_in_flight``)."""
        return len(self._started)

    def stalled(self, older_than: float) -> tuple[float, int, list[str]] | None:
        """(age of the oldest, how many, their hosts) of the requests out longer than
        ``older_than`` seconds, or ``None``."""
        now = time.monotonic()
        old = [(now - since, host) for since, host in self._started.values() if now - since >= older_than]
        if not old:
            return None
        return max(age for age, _ in old), len(old), sorted({host for _, host in old})


def in_flight(crawler: Any) -> InFlight:
    """The registry of one crawler (one source), made on first use."""
    registry = _registries.get(crawler)
    if registry is None:
        registry = _registries[crawler] = InFlight()
    return registry
