"""One gate per source: request budget, concurrency, throttle delay and pauses.

Every request of a source passes :meth:`SourceLimiter.acquire` right before it
is handed to the downloader, and :meth:`release` when its answer (or failure)
comes back. Four things decide when it may go:

* the budget, ``N`` requests in any window of ``T`` seconds (``RATE_LIMITS``),
  as the upstream counts them: a request takes its place in the window when
  it goes and keeps it until ``T`` after its *answer* (or failure) came back.
  An answer never comes before its request arrived, so any ``N + 1`` arrivals
  span at least ``T`` however late a request reaches the server after it was
  let go. A log of send times with a 0.15 s margin did not: on a loaded
  2-core machine a request on a new connection arrived 0.3 s after its send
  and the next ones at once, and a server allowing 15 per 3 s counted 16 and
  banned the crawl again (tests/test_ia_limits.py, 2 runs in 6 with both
  cores busy). The price is the answer time: a source answering in ``L``
  seconds gets at most ``N`` per ``T + L`` while the budget binds. The margin on
  top is 1% of ``T``, at least 0.02 s in one process (one clock times the
  answers and the sends: at 0.15 s Common Crawl's 1/1s budget took 209.5 s for
  181 requests, 1.16x its 180 s floor) and 0.15 s for a gate shared through
  Redis, whose processes' clocks differ;
* the source's concurrency (``SOURCE_CONCURRENCY``);
* the throttle interval AutoThrottle sets from latencies and 429/503 answers;
* a pause: a ``Retry-After`` (or the like), a 429 without one or a ban
  (trawl.politeness.aimd) stops the whole source until then, and a retried request may
  carry its own not-before time (backoff).

The gate also keeps what the progress line and the summary report: how long
the source was paused in all, and why the next request is not sent yet
(:meth:`SourceLimiter.holdup`).

The downloader slot itself is left without delay, so a request the gate lets
go is sent at once: all timing decisions live here, in one place, and hold for
the source as a whole whichever host or proxy a request goes through.
Waiting never blocks the reactor: it is a Deferred that fires later.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from twisted.internet import defer, task

from trawl.politeness.rates import parse_rate

Clock = Callable[[], float]
#: Seconds added to every budget window, at least, when the gate is shared by processes
#: on several machines (their clocks differ by tens of ms); see ``from_spec``.
MIN_MARGIN = 0.15
#: The same for a gate in one process: one clock times both the answers and the sends.
LOCAL_MIN_MARGIN = 0.02
#: ``ready_at`` while the window is full of requests still out: the next answer decides.
ON_ANSWER = float("inf")


@dataclass
class SourceLimiter:
    source: str
    requests: int | None = None  # None: no budget
    period: float = 0.0
    concurrency: int = 8
    margin: float = 0.05
    interval: float = 0.0  # AutoThrottle's delay between two sends
    paused_until: float = 0.0
    pause_reason: str = ""
    clock: Clock = time.time
    #: The budget and concurrency configured; ``requests``/``concurrency`` may be cut below them.
    base_requests: int | None = None
    base_concurrency: int = 0
    #: Seconds the source was paused in all, and how many pauses.
    paused_total: float = 0.0
    pauses: int = 0
    #: When each answer of the last window came back (the window's entries of requests still
    #: out are ``_in_flight``).
    _answers: deque[float] = field(default_factory=deque)
    _in_flight: int = 0
    _last_send: float = 0.0
    _waiters: deque[defer.Deferred] = field(default_factory=deque)
    _timer: object | None = None
    #: Set while the source's crawler is stopping: what every waiting request fails with.
    _abandon: Callable[[], Exception] | None = None

    def __post_init__(self) -> None:
        self.base_requests = self.requests
        self.base_concurrency = self.concurrency

    @classmethod
    def from_spec(
        cls, source: str, rate: str | None, concurrency: int, min_margin: float = MIN_MARGIN
    ) -> SourceLimiter:
        if rate:
            count, period = parse_rate(rate)
            # The margin covers the upstream's own clock and rounding (a window "of a minute"
            # counted in whole seconds): counting from answers already covers the send delay.
            margin = max(min_margin, period * 0.01)
            return cls(source, count, period, max(concurrency, 1), margin=margin)
        return cls(source, None, 0.0, max(concurrency, 1))

    # --- state changes ---------------------------------------------------------------------

    def pause(self, until: float, reason: str) -> bool:
        """Stop the whole source until ``until``; True if this extends the pause."""
        if until <= self.paused_until:
            return False
        now = self.clock()
        self.paused_total += until - max(now, self.paused_until)
        self.pauses += 1
        self.paused_until = until
        self.pause_reason = reason
        self._wake()
        return True

    def abandon(self, error: Callable[[], Exception]) -> int:
        """Fail every waiting request with ``error()``, and every one asked for until :meth:`reopen`.

        Its crawler is stopping: a request held by a pause (``Retry-After: 900``)
        or a backoff would otherwise keep the crawl open until the wait ran out.
        Returns how many waited.
        """
        self._abandon = error
        waiters, self._waiters = self._waiters, deque()
        for waiter in waiters:
            waiter.errback(error())
        return len(waiters)

    def reopen(self) -> None:
        """A new crawl of the source (same process): requests may wait again."""
        self._abandon = None

    def release(self) -> None:
        if self._in_flight > 0:
            self._in_flight -= 1
            if self.requests is not None:
                self._answers.append(self.clock())
        self._wake()

    # --- waiting ---------------------------------------------------------------------------

    def acquire(self, not_before: float = 0.0) -> defer.Deferred:
        """A Deferred that fires when one request of this source may be sent."""
        if self._abandon is not None:
            return defer.fail(self._abandon())
        waiter: defer.Deferred = defer.Deferred()
        waiter.not_before = not_before  # type: ignore[attr-defined]
        self._waiters.append(waiter)
        self._wake()
        return waiter

    def ready_at(self, not_before: float = 0.0) -> float:
        """The earliest time the next request may go (ignoring concurrency); ``ON_ANSWER``
        while the budget waits for an answer to come back."""
        return max(self.paused_until, not_before, self._last_send + self.interval, self._budget_at())

    def _budget_at(self) -> float:
        """When the budget lets one more request go (0: now; ``ON_ANSWER``: once one is back)."""
        if self.requests is None:
            return 0.0
        now = self.clock()
        while self._answers and self._answers[0] <= now - self.period - self.margin:
            self._answers.popleft()
        taken = len(self._answers) + self._in_flight
        if taken < self.requests:
            return 0.0
        oldest_to_age = taken - self.requests  # that many entries must leave, oldest first
        if oldest_to_age >= len(self._answers):
            return ON_ANSWER
        return self._answers[oldest_to_age] + self.period + self.margin

    def _wake(self) -> None:
        """Let go every waiter that may go now; set one timer for the next."""
        while self._waiters and self._in_flight < self.concurrency:
            waiter = self._waiters[0]
            now = self.clock()
            at = self.ready_at(waiter.not_before)  # type: ignore[attr-defined]
            if at > now:
                if at != ON_ANSWER:  # else the next release wakes it
                    self._schedule(at - now)
                return
            self._waiters.popleft()
            self._in_flight += 1
            self._last_send = now
            waiter.callback(now)

    def _schedule(self, delay: float) -> None:
        timer = self._timer
        if timer is not None and timer.active():  # type: ignore[attr-defined]
            timer.cancel()  # type: ignore[attr-defined]
        from twisted.internet import reactor  # at call time: importing it installs one

        self._timer = reactor.callLater(delay, self._on_timer)  # type: ignore[attr-defined]

    def _on_timer(self) -> None:
        self._timer = None
        self._wake()

    def holdup(self) -> float | None:
        """Until when the next waiting request is held by the budget alone, or ``None``.

        Not for a pause (said on its own), nor while every slot is in flight
        (the source waits on answers then, not on its budget).
        """
        now = self.clock()
        if not self._waiters or self.requests is None or self._in_flight >= self.concurrency:
            return None
        if self.paused_until > now:
            return None
        budget_at = self._budget_at()
        return budget_at if now < budget_at != ON_ANSWER else None

    def waited(self) -> float:
        """Seconds the source has sat paused so far (the rest of a running pause not counted)."""
        return self.paused_total - max(0.0, self.paused_until - self.clock())

    @property
    def budget(self) -> str:
        """The budget in force, as ``RATE_LIMITS`` writes it (``15/60s``)."""
        return f"{self.requests}/{self.period:g}s" if self.requests is not None else "unlimited"

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def in_flight(self) -> int:
        return self._in_flight


_limiters: dict[str, SourceLimiter] = {}


def limiter_for(
    source: str,
    rate: str | None = None,
    concurrency: int = 8,
    make: Callable[[str, str | None, int], SourceLimiter] | None = None,
) -> SourceLimiter:
    """The process-wide gate of a source (created on first use, by ``make`` if given:
    the gate shared through Redis, trawl.distributed.sharedgate)."""
    limiter = _limiters.get(source)
    if limiter is None:
        if make is None:
            limiter = SourceLimiter.from_spec(source, rate, concurrency, LOCAL_MIN_MARGIN)
        else:
            limiter = make(source, rate, concurrency)
        _limiters[source] = limiter
    return limiter


def existing_limiter(source: str) -> SourceLimiter | None:
    """The gate of a source if one was made (progress lines read its pause)."""
    return _limiters.get(source)


def sleep(seconds: float) -> defer.Deferred:
    from twisted.internet import reactor  # at call time: importing it installs one

    return task.deferLater(reactor, max(seconds, 0.0), lambda: None)  # type: ignore[arg-type]
