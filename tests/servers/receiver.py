"""A notification receiver: logs every request (path, headers, JSON body) and answers as told.

``FakeReceiver()`` answers 200 ``{"ok": true}`` (what Slack, Discord and
Telegram's bot API answer, near enough); ``status=`` makes it answer an error;
``delay=`` makes it hold every answer that long before replying (a receiver
slower than ``NOTIFY_TIMEOUT``). The hold ends early when the server is
stopped, so a test never waits for it. ``location=`` makes it answer every
request with a redirect there (``status`` 302 unless given); ``auth=(user,
password)`` makes it answer 401 to a request without that basic auth;
``host=`` serves it on another loopback address (``127.0.0.2``).
"""

from __future__ import annotations

import base64
import threading
import time
from typing import Any

from tests.servers.local import Answer, LocalServer, SeenRequest


class FakeReceiver(LocalServer):
    def __init__(
        self,
        status: int | None = None,
        delay: float = 0.0,
        location: str | None = None,
        auth: tuple[str, str] | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.status = status or (302 if location else 200)
        self.delay = delay
        self.location = location
        self.auth = auth
        self.host = host
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
        if self.auth and request.headers.get("authorization") != basic_auth(*self.auth):
            return 401, b'{"ok": false}', {"WWW-Authenticate": 'Basic realm="hooks"'}
        headers = {"Content-Type": "application/json"}
        if self.location:
            headers["Location"] = self.location
        return self.status, b'{"ok": true}', headers

    def bodies(self, path: str | None = None) -> list[Any]:
        """The JSON bodies received (at ``path`` only, if given), in arrival order."""
        with self._lock:
            return [r.body for r in self.requests if path is None or r.path == path]

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        super().__exit__(*exc)


def basic_auth(user: str, password: str) -> str:
    """The ``Authorization`` header value for HTTP basic auth (RFC 7617, UTF-8)."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
