"""A source that limits harder than its budget: cut at once, recover slowly, and sit out a ban.

The budgets in ``RATE_LIMITS`` are guesses; the service's real limit is what it
answers. Against a server that behaves like the Internet Archive's CDX endpoint
(15 requests a minute, 429 without ``Retry-After``, and after three 429s in a
row the connection refused for a while), trawl at 60/60s got 6 answers 429, was
banned, spent its retries on 72 refused connections within seconds and gave up
11 of 40 pages. So, per source (one :class:`Backpressure` on its gate):

* a 429 without a hint cuts the budget at once to what the server served in the
  last window (half of it when it served everything asked), halves the
  concurrency, and pauses the source for one window (doubling while 429s go on),
  so that the window the server counts in empties before the next request;
* answers that come back for requests sent before that cut are the same episode,
  not a reason to cut again;
* the budget and the concurrency grow back by one every ``RECOVERY_WINDOWS``
  windows without a 429 (additive increase), up to what was configured;
* a connection refused or reset while the last answer was such a 429 is a ban:
  the source pauses for ``RETRY_BAN_PAUSE``, doubling while the ban lasts, each
  pause at most ``RETRY_MAX_PAUSE``; its requests wait without spending retries.
  Once a pause of ``RETRY_MAX_PAUSE`` did not end it, the server is taken as down
  and retries are spent as for any failure.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from trawl.politeness.gate import MIN_MARGIN, Clock, SourceLimiter

#: Windows without a 429 before the budget and concurrency grow by one. Each probe
#: above the real limit costs one 429 and a window's pause: one in six windows at most.
RECOVERY_WINDOWS = 5
#: The window of a source without a budget: a minute, what most APIs count in.
DEFAULT_WINDOW = 60.0


@dataclass
class Backpressure:
    limiter: SourceLimiter
    ban_pause: float
    max_pause: float
    clock: Clock = time.time
    #: A 429 without a hint came after the last good answer: a failure now is a ban.
    rate_limited: bool = False
    cuts: int = 0
    bans: int = 0
    _last_cut: float = 0.0
    _last_raise: float = 0.0
    _cut_streak: int = 0
    _ban_streak: int = 0
    _ban_started: float = 0.0
    _last_ban_length: float = 0.0
    _good: deque[float] = field(default_factory=deque)  # send times of good answers

    @property
    def window(self) -> float:
        return self.limiter.period or DEFAULT_WINDOW

    def answered(self, sent_at: float) -> None:
        """A good answer: the episode is over; grow back by one after a quiet while.

        An answer to a request sent before the last cut or ban is stale: with two requests
        in flight, the one the server still served can be read after the other's 429. It
        must not end the episode, or the reset that follows is taken for an outage and
        spends retries instead of waiting out the ban (seen in CI under load).
        """
        now = self.clock()
        if not sent_at or sent_at >= max(self._last_cut, self._ban_started):
            self.rate_limited = False
            self._cut_streak = self._ban_streak = 0
        self._good.append(sent_at)
        while self._good and self._good[0] < now - self.window:
            self._good.popleft()
        limiter = self.limiter
        below = (limiter.base_requests is not None and (limiter.requests or 0) < limiter.base_requests) or (
            limiter.concurrency < limiter.base_concurrency
        )
        if not below or now - max(self._last_cut, self._last_raise) < RECOVERY_WINDOWS * self.window:
            return
        self._last_raise = now
        if limiter.base_requests is not None and limiter.requests is not None:
            limiter.requests = min(limiter.requests + 1, limiter.base_requests)
        limiter.concurrency = min(limiter.concurrency + 1, limiter.base_concurrency)

    def too_many(self, sent_at: float) -> float | None:
        """A 429 without a hint: the pause it starts (seconds), or ``None`` if its episode was cut."""
        self.rate_limited = True
        if sent_at < self._last_cut:
            return None
        now = self.clock()
        limiter = self.limiter
        served = sum(1 for t in self._good if t >= now - self.window)
        current = limiter.requests
        if current is None:
            limiter.requests, limiter.period = max(served, 1), self.window
            limiter.margin = max(MIN_MARGIN, self.window * 0.01)
        else:
            limiter.requests = max(1, served if 0 < served < current else current // 2)
        limiter.concurrency = max(1, limiter.concurrency // 2)
        self._cut_streak += 1
        self.cuts += 1
        self._last_cut = now
        length = min(self.window * 2 ** (self._cut_streak - 1), self.max_pause)
        limiter.pause(now + length + limiter.margin, "HTTP 429 without Retry-After")
        return length

    def connection_failed(self, sent_at: float, what: str) -> float | None:
        """A refused or reset connection: ``None`` if it is not a ban, else the pause it starts
        (0.0 for a request sent before the ban began: it just waits)."""
        if not self.rate_limited:
            return None
        if self._ban_streak and sent_at < self._ban_started:
            return 0.0
        if self._ban_streak and self._last_ban_length >= self.max_pause:
            return None  # the longest pause did not end it: down, not banning
        now = self.clock()
        length = min(self.ban_pause * 2**self._ban_streak, self.max_pause)
        if not self._ban_streak:
            self.bans += 1
        self._ban_streak += 1
        self._ban_started, self._last_ban_length = now, length
        self.limiter.concurrency = 1
        self.limiter.pause(now + length, f"banned: {what} after HTTP 429")
        return length
