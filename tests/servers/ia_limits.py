"""The Internet Archive's CDX endpoint as it limits clients: 15 requests a minute, then a ban.

What trawl's politeness is measured against: at most ``per_minute`` requests served in any
window of a minute; beyond that an answer 429 *without* ``Retry-After`` (IA
sends none, see :func:`tests.servers.ia_cdx.rate_limited`); after ``strikes``
429s in a row the IP is banned: connections are refused for ``ban_seconds``
(the real firewall block lasts an hour, and doubles for a repeat offender:
so does this one). Every duration is multiplied by ``time_factor``, so that a
test keeps the ratios and runs in seconds (0.05: 15 requests per 3 s, a 6 s ban).

``ban_mode="refuse"`` closes the listening socket for the ban (a real
``ECONNREFUSED``; requests on connections kept alive from before are reset);
``"reset"`` keeps listening and resets every connection instead. The server
counts what it did: ``served``, ``limited`` (429s), ``bans`` (start, end) and
``resets``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, Literal
from urllib.parse import parse_qsl

from tests.servers.ia_cdx import RESET, Capture, FakeCdxServer, RequestRecord, _Response, rate_limited

__all__ = ["LimitingCdxServer"]


class LimitingCdxServer(FakeCdxServer):
    def __init__(
        self,
        captures: Iterable[Capture] = (),
        *,
        per_minute: int = 15,
        strikes: int = 3,
        ban_seconds: float = 120.0,
        time_factor: float = 1.0,
        ban_mode: Literal["refuse", "reset"] = "refuse",
        **kwargs: Any,
    ) -> None:
        super().__init__(captures, **kwargs)
        self.per_window = per_minute
        self.window = 60.0 * time_factor
        self.ban_length = ban_seconds * time_factor
        self.strikes = strikes
        self.ban_mode = ban_mode
        #: Arrival times (monotonic) of the requests served, of the 429s, and of the resets.
        self.served: list[float] = []
        self.limited: list[float] = []
        self.resets: list[float] = []
        #: (start, end) of each ban, monotonic.
        self.bans: list[tuple[float, float]] = []
        self._recent: deque[float] = deque()
        self._in_a_row = 0
        self._banned_until = 0.0
        self._policy = threading.Lock()
        self._timers: list[threading.Timer] = []
        self._closing = False

    def handle(self, path_qs: str, headers: Mapping[str, str]) -> _Response:
        now = time.monotonic()
        with self._policy:
            if now < self._banned_until:
                self.resets.append(now)
                return _Response(RESET, [], b"")
            while self._recent and self._recent[0] <= now - self.window:
                self._recent.popleft()
            if len(self._recent) >= self.per_window:
                return self._too_many(path_qs, headers, now)
            self._recent.append(now)
            self._in_a_row = 0
            self.served.append(now)
        return super().handle(path_qs, headers)

    def _too_many(self, path_qs: str, headers: Mapping[str, str], now: float) -> _Response:
        path, _, raw_query = path_qs.partition("?")
        params = parse_qsl(raw_query, keep_blank_values=True, errors="replace")
        self.requests.append(RequestRecord(path, params, raw_query, dict(headers), now))
        self.limited.append(now)
        self._in_a_row += 1
        if self._in_a_row >= self.strikes:
            self._ban(now)
        status, body, fault_headers = rate_limited()
        return _Response(status, list(fault_headers.items()), body)

    def _ban(self, now: float) -> None:
        length = self.ban_length * 2 ** len(self.bans)
        self._banned_until = now + length
        self.bans.append((now, now + length))
        self._in_a_row = 0
        if self.ban_mode == "refuse":
            # Not from this handler thread: stop() waits for the accept loop, and this answer
            # (the third 429) must still go out first.
            self._later(0.0, self._close_listener)
            self._later(length, self._reopen)

    def _later(self, delay: float, action: Any) -> None:
        timer = threading.Timer(delay, action)
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    def _close_listener(self) -> None:
        with self._policy:
            if self._closing:
                return
        FakeCdxServer.stop(self)

    def _reopen(self) -> None:
        with self._policy:
            if self._closing:
                return
        FakeCdxServer.start(self)

    def stop(self) -> None:
        with self._policy:
            self._closing = True
        for timer in self._timers:
            timer.cancel()
            if timer.is_alive() and timer is not threading.current_thread():
                timer.join(timeout=5)
        FakeCdxServer.stop(self)
