"""A source's gate shared by every process through Redis (``TRAWL_REDIS_URL``).

Without it, each process has its own gate (trawl.politeness.gate): three
workers, or two scrapyd jobs, on one source send up to three (two) times its
budget, and a 429 with ``Retry-After`` answered to one leaves the others
hammering. :class:`SharedLimiter` is that same gate, with one more condition
before a request goes: the source's shared state (trawl.distributed.gatestate)
must let it go too. The local gate still orders this process's requests and
applies the AutoThrottle delay, its own log of sends and any pause it knows;
the shared one adds the budget, the concurrency and the pauses of all.

* The budget is held between *arrivals*, as the upstream counts them, under
  any load: a slot and a window entry are taken in one atomic script, and the
  entry counts until ``T`` seconds after the request's answer came back, not
  after the slot was taken. (Counting from the slot, the first version let an
  upstream see 6 requests in a 2 s window of ``5/2s`` under load: one request
  reached the server 170 ms after its slot was taken, the next ones at once;
  trawl.distributed.gatestate has the reasoning and the price.)

* A pause this process starts (Retry-After, a bare 429, a ban) is written to
  Redis before the request that caused it gives its slot back, so with the
  concurrency the only slot, no process sends inside it. A pause another
  process started is read at the next claim, adopted here (progress lines and
  the summary say it) and slept out on a timer, not polled.
* The AIMD budget (trawl.politeness.aimd) is shared as the cut: a process that
  cuts publishes its budget and concurrency with a TTL of the recovery time,
  every claim reads it and no process sends above it; the cutting process's
  recovery republishes it, and if that process dies the cut expires.
* Redis lost: fail closed. The waiting requests stay waiting, claims are
  retried with a doubling backoff (at most ``MAX_BACKOFF``), the outage is
  logged once per process; nothing is sent unthrottled. If Redis came back
  empty (restarted without persistence), the first process back pauses the
  source for one window, since the window of sends before the outage is lost.

Every Redis call runs on the asyncio loop of Twisted's asyncio reactor
(redis-py's asyncio client): a round trip is a wait like any other, the
reactor never blocks on one.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer, task

from trawl.distributed.gatestate import BUSY, FULL, PAUSED, REDIS_ERRORS, GateState, gate_state
from trawl.politeness.aimd import DEFAULT_WINDOW, RECOVERY_WINDOWS
from trawl.politeness.gate import ON_ANSWER, SourceLimiter, sleep

logger = logging.getLogger("trawl.distributed.gate")

#: Seconds a request's slot is held in Redis without news from its process; renewed every
#: third of it while the request is out, so only a dead process's slots ever run out.
LEASE = 30.0
#: Seconds between two claims while every slot of the source is in flight in some process, or
#: the window is full of requests still out (a slot freed elsewhere is not announced): 10
#: claims a second per waiting process.
BUSY_RETRY = 0.1
#: The longest wait between two attempts to reach a lost Redis.
MAX_BACKOFF = 10.0
#: Up to this many seconds added to a wake-up at the window's edge: processes waiting for the
#: same edge do not all claim in the same millisecond, only for one of them to get it.
EDGE_JITTER = 0.05
FIRST_BACKOFF = 0.25


def _deferred(coro: Coroutine[Any, Any, Any]) -> defer.Deferred:
    """Run an asyncio coroutine on the reactor's loop, as a Deferred."""
    return defer.Deferred.fromFuture(asyncio.ensure_future(coro))


@dataclass(frozen=True)
class _Verdict:
    token: str | None = None  # granted: the slot's token
    delay: float = 0.0  # not granted: when to ask again


@dataclass
class SharedLimiter(SourceLimiter):
    state: GateState | None = None
    lease: float = LEASE
    #: The AIMD cut another process shared (requests, period, concurrency), or None.
    shared_cut: tuple[int, float, int] | None = None
    _tokens: deque[str] = field(default_factory=deque)
    _pumping: bool = False
    _adopting: bool = False
    _outage_since: float = 0.0
    _published: tuple[int, float, int] | None = None
    _writes: defer.Deferred | None = None
    _ids: Any = field(default_factory=itertools.count)
    _heartbeat: task.LoopingCall | None = None

    @classmethod
    def shared(cls, url: str) -> Callable[[str, str | None, int], SourceLimiter]:
        """For :func:`trawl.politeness.gate.limiter_for`: makes the gate of a source, shared at ``url``."""

        def make(source: str, rate: str | None, concurrency: int) -> SourceLimiter:
            plain = SourceLimiter.from_spec(source, rate, concurrency)
            return cls(
                source,
                plain.requests,
                plain.period,
                plain.concurrency,
                margin=plain.margin,
                state=gate_state(url),
            )

        return make

    # --- what changes here is shared ----------------------------------------------------------

    def pause(self, until: float, reason: str) -> bool:
        extended = super().pause(until, reason)
        if extended and not self._adopting:
            source, state = self.source, self.state
            assert state is not None

            async def publish() -> None:
                # Until it lands, or until the pause is over anyway: a pause other processes
                # miss is the one fault here that would send into a limit.
                backoff = FIRST_BACKOFF
                while True:
                    left = until - time.time()
                    if left <= 0:
                        return
                    try:
                        await state.pause(source, left, reason)
                        return
                    except REDIS_ERRORS as exc:
                        state.lost(exc)
                        await asyncio.sleep(backoff)
                        backoff = min(backoff * 2, MAX_BACKOFF)

            self._write(publish)
        return extended

    def release(self) -> None:
        if self._tokens:
            # Queued behind the pause this answer may have started: others see the pause first.
            # The oldest token, whichever request answered: the k-th answer stamps the k-th
            # token, and an answer never comes before its own request arrived, so each of this
            # process's arrivals is still covered by an entry stamped no earlier than it.
            self._give_back(self._tokens.popleft())
        super().release()

    def _give_back(self, token: str) -> None:
        source, state, ttl = self.source, self.state, self._window_ttl()
        assert state is not None

        async def give_back() -> None:
            try:
                await state.release(source, token, ttl)
            except REDIS_ERRORS:
                pass  # its lease runs out: the slot frees itself

        self._write(give_back)

    def _write(self, step: Callable[[], Awaitable[None]]) -> None:
        """Run Redis writes one after another, in the order they were asked for."""
        previous = self._writes

        async def run() -> None:
            if previous is not None and not previous.called:
                await previous
            await _deferred(step())  # type: ignore[arg-type]

        done = defer.Deferred.fromCoroutine(run())
        done.addErrback(lambda failure: logger.debug("shared gate write failed: %s", failure.value))
        self._writes = done

    # --- waiting ------------------------------------------------------------------------------

    def _wake(self) -> None:
        if self._pumping or not self._waiters or self._in_flight >= self.concurrency:
            return
        self._pumping = True
        done = defer.Deferred.fromCoroutine(self._pump())
        done.addErrback(self._pump_failed)

    def _pump_failed(self, failure: Any) -> None:
        self._pumping = False
        logger.error("shared gate of %s: %s", self.source, failure.getErrorMessage())
        self._schedule(FIRST_BACKOFF)

    async def _pump(self) -> None:
        """Let waiters go, head first, while both the local and the shared gate agree."""
        try:
            while self._waiters and self._in_flight < self.concurrency:
                waiter = self._waiters[0]
                now = self.clock()
                at = self.ready_at(waiter.not_before)  # type: ignore[attr-defined]
                if at > now:
                    if at != ON_ANSWER:  # else the next release wakes it
                        self._schedule(at - now)
                    return
                verdict = await self._ask()
                if verdict is None:
                    return  # nobody waits any more (the crawl stopped while Redis was away)
                if verdict.token is None:
                    self._schedule(verdict.delay)
                    return
                now = self.clock()
                if (
                    not self._waiters
                    or self._waiters[0] is not waiter
                    or self.ready_at(waiter.not_before) > now  # type: ignore[attr-defined]
                    or self._in_flight >= self.concurrency
                ):
                    self._give_back(verdict.token)  # paused or abandoned meanwhile
                    continue
                self._waiters.popleft()
                self._in_flight += 1
                self._last_send = now
                self._tokens.append(verdict.token)
                self._keep_leases()
                waiter.callback(now)
        finally:
            self._pumping = False

    async def _ask(self) -> _Verdict | None:
        """One claim, retried with backoff while Redis is away (never a send without it)."""
        backoff = FIRST_BACKOFF
        while True:
            try:
                verdict = await _deferred(self._ask_once())
            except REDIS_ERRORS as exc:
                assert self.state is not None
                self.state.lost(exc)
                if not self._outage_since:
                    self._outage_since = time.time()
                await sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
                if not self._waiters:
                    return None
                continue
            self._outage_since = 0.0
            return verdict

    def _window_ttl(self) -> float:
        """How long the window key must outlive a write: a lease, then the longest period in force."""
        cut = self.shared_cut
        return self.lease + max(self.period, cut[1] if cut else 0.0, DEFAULT_WINDOW if cut else 0.0)

    def _cut_to_share(self) -> tuple[int, float, int, float] | None:
        """This process's AIMD budget, when it changed since last shared."""
        mine = (self.requests or 0, self.period, self.concurrency)
        below = mine[2] < self.base_concurrency or (
            self.base_requests is not None and mine[0] < self.base_requests
        )
        if mine == self._published or (self._published is None and not below):
            return None
        window = self.period or DEFAULT_WINDOW
        return (*mine, (RECOVERY_WINDOWS + 1) * window)

    async def _ask_once(self) -> _Verdict:
        """One claim: pause, cut, slot and window, decided in Redis in one atomic script.

        Taking the slot and the window's entry in one step is what keeps several processes
        from both finding room for the last request of a window (trawl.distributed.gatestate
        says why the window counts answers, not sends).
        """
        state = self.state
        assert state is not None
        token = f"{state.ident}:{self.source}:{next(self._ids)}"
        lost = 0.0
        if self._outage_since:
            lost = self._outage_since + (self.period or 0.0) + self.margin - time.time()
        share = self._cut_to_share()
        budget = (self.requests, self.period, self.period or DEFAULT_WINDOW)
        claim = await state.claim(
            self.source, token, self.concurrency, self.lease, budget, max(lost, 0.0), share
        )
        state.back()
        if share is not None:
            self._published = share[:3]
        self.shared_cut = claim.cut if claim.cut != self._published else None
        if claim.status == PAUSED:
            self._adopt_pause(claim.pause, claim.reason)
            return _Verdict(delay=claim.pause)
        if claim.status == BUSY or (claim.status == FULL and claim.wait is None):
            return _Verdict(delay=BUSY_RETRY)
        if claim.status == FULL:
            return _Verdict(delay=(claim.wait or 0.0) + random.uniform(0, EDGE_JITTER))
        return _Verdict(token)

    def _adopt_pause(self, seconds: float, reason: str) -> None:
        """Another process paused the source: hold here too, and say so once."""
        until = self.clock() + seconds
        if until <= self.paused_until + 0.5:
            return  # already known (ours, or adopted at an earlier claim)
        self._adopting = True
        try:
            super().pause(until, reason)
        finally:
            self._adopting = False
        logger.warning(
            "%s: paused until %s by another process (%s)",
            self.source,
            time.strftime("%H:%M:%S", time.localtime(until)),
            reason,
        )
        backpressure = getattr(self, "backpressure", None)
        if backpressure is not None and ("429" in reason or reason.startswith("banned")):
            # The server is limiting us: a refused connection here is the same ban, waited out.
            backpressure.rate_limited = True

    def _keep_leases(self) -> None:
        if self._heartbeat is not None:
            return
        self._heartbeat = task.LoopingCall(self._renew)
        self._heartbeat.start(self.lease / 3, now=False)

    def _renew(self) -> None:
        if not self._tokens:
            return
        tokens, source, state, lease = list(self._tokens), self.source, self.state, self.lease
        ttl = self._window_ttl()
        assert state is not None

        async def renew() -> None:
            try:
                await state.heartbeat(source, tokens, lease, ttl)
            except REDIS_ERRORS as exc:
                state.lost(exc)

        self._write(renew)
