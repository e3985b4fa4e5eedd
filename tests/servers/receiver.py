"""A notification receiver: logs every request (path, headers, JSON body) and answers as told.

``FakeReceiver()`` answers 200 ``{"ok": true}`` (what Slack, Discord and
Telegram's bot API answer, near enough); ``status=`` makes it answer an error;
``delay=`` makes it hold every answer that long before replying (a receiver
slower than ``NOTIFY_TIMEOUT``). The hold ends early when the server is
stopped, so a test never waits for it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from tests.servers.local import Answer, LocalServer, SeenRequest


class FakeReceiver(LocalServer):
    def __init__(self, status: int = 200, delay: float = 0.0) -> None:
        self.status = status
        self.delay = delay
        self.requests: list[SeenRequest] = []
        #: ``time.monotonic()`` of each request's arrival, in this process.
        self.arrivals: list[float] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def answer(self, request: SeenRequest) -> Answer:
        with self._lock:
            self.requests.append(request)
            self.arrivals.append(time.monotonic())
        if self.delay:
            self._stopping.wait(self.delay)
        return self.status, b'{"ok": true}', {"Content-Type": "application/json"}

    def bodies(self, path: str | None = None) -> list[Any]:
        """The JSON bodies received (at ``path`` only, if given), in arrival order."""
        with self._lock:
            return [r.body for r in self.requests if path is None or r.path == path]

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        super().__exit__(*exc)
