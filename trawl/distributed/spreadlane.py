"""The one thread that talks to Redis for a spread run's crawler: the reactor only hands it work.

:class:`~trawl.distributed.spreadsched.SpreadScheduler` runs on the reactor's
thread and never waits on Redis: it serializes a request (so that one that
cannot be serialized still fails loudly, in its callback) and appends the push
here; an acknowledgement is appended the same way. This thread sends what has
gathered as **one transaction** (:meth:`RunRequests.apply`): the pushes and
acknowledgements in the order they were made (a request's children before the
request itself), the crawler's stats since the last batch, a take of as many
requests as the crawler may still hold, and, while the crawler is idle, the
run's end check. What it took goes back to the reactor (``deliver``), which
hands it to the engine at its next call: the downloader is never idle while
acknowledgements wait on the store, and a page costs a fraction of a round trip
when the crawl is busy (batches grow with the load).

Redis lost: the batch is retried through the worker's :class:`Outages` (one
line when it starts, one when it ends, a bounded backoff), in order, with
nothing dropped: a push is deduplicated by its entry, an acknowledgement
removes what is no longer there, and a take whose answer was lost is found in
this worker's held list (:meth:`RunRequests.orphans`) and used, not left held
forever. Meanwhile the crawl goes on with what it holds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from trawl.distributed.outage import Outages
from trawl.distributed.spread import Applied

if TYPE_CHECKING:
    from trawl.distributed.spread import RunRequests

logger = logging.getLogger("trawl.spread")
#: After a take found the run's queue empty: wait this long before the next, doubling up to the longest.
FIRST_WAIT, LONGEST_WAIT = 0.05, 1.0

#: Counters summed over every crawler of a run into its owner's stats (others are the owner's own:
#: the upstream's page count, the run's times, maxima, rates).
FOLDED_PREFIXES = (
    "trawl/pages", "trawl/captures", "trawl/duplicates", "trawl/urls_", "trawl/bad_", "trawl/undecodable_",
    "trawl/errors", "trawl/gave_up", "trawl/timeouts", "trawl/filtered/", "trawl/bans", "trawl/log_errors",
    "downloader/request_count", "downloader/response_count", "downloader/response_status_count/",
    "downloader/request_bytes", "downloader/response_bytes", "response_received_count",
    "item_scraped_count", "retry/count", "trawl/commoncrawl/indexes",
)  # fmt: skip
NOT_FOLDED = frozenset({"trawl/pages_resumed", "trawl/pages_already_stored"})


def foldable(stats: Mapping[str, Any]) -> dict[str, float]:
    """The counters of ``stats`` that add up over a run's crawlers."""
    return {
        name: value for name, value in stats.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
        and name.startswith(FOLDED_PREFIXES) and name not in NOT_FOLDED
    }  # fmt: skip


_SHARED: Outages | None = None


def share_outages(outages: Outages) -> None:
    """The worker's outage handling, so that a spread crawl's outage is the same one line."""
    global _SHARED
    _SHARED = outages


class Lane:
    """A crawler's Redis thread for one spread run."""

    def __init__(
        self, run: RunRequests, *, role: str, hold: int, heartbeat: float,
        stats: Callable[[], Mapping[str, Any]], deliver: Callable[[list[bytes]], None],
        over: Callable[[dict[str, float]], None], failed: Callable[[str], None],
    ) -> None:  # fmt: skip
        self.run = run
        self.role = role
        self.hold = max(hold, 1)
        self.heartbeat = heartbeat
        self._stats = stats
        self._deliver = deliver
        self._over = over
        self._failed = failed
        self.outages = _SHARED or Outages(logger)
        self._cond = threading.Condition()
        self._ops: list[tuple[str, Any]] = []
        self._known: Counter[bytes] = Counter()  # taken and not acknowledged: what our held list should be
        self.idle = False
        self._stopping: Callable[[int], None] | None = None
        self._dead = False
        self._hand_back = False
        self._empty_until = 0.0
        self._wait = FIRST_WAIT
        self._next_reap = 0.0
        self._published: dict[str, float] = {}
        self._thread = threading.Thread(target=self._loop, name=f"spread-{run.run[:8]}", daemon=True)
        self._thread.start()

    # --- from the reactor --------------------------------------------------------------------

    def push(self, entry: tuple[str, bytes]) -> None:
        with self._cond:
            self._ops.append(("push", entry))
            self._empty_until, self._wait = 0.0, FIRST_WAIT  # the queue has something now: ask at once
            self._cond.notify()

    def ack(self, raw: bytes) -> None:
        with self._cond:
            self._known[raw] -= 1
            if self._known[raw] <= 0:
                del self._known[raw]
            self._ops.append(("ack", raw))
            self._cond.notify()

    def call(self, action: Callable[[], Any], done: Callable[[Any], None]) -> None:
        """``action()`` on this thread, after everything added before it; ``done(result)`` on the reactor."""
        self._add(("call", (action, done)))

    def set_idle(self, idle: bool) -> None:
        with self._cond:
            self.idle = idle
            if idle:
                self._empty_until = 0.0  # an idle crawler asks at once, then backs off
            self._cond.notify()

    def stop(self, hand_back: bool, done: Callable[[int], None]) -> None:
        """Send what is left; hand what this worker holds back to the queue if asked; then ``done(moved)``."""
        with self._cond:
            if self._dead:  # its thread ended on an error: nothing more can be sent
                done(0)
                return
            self._stopping, self._hand_back = done, hand_back
            self._cond.notify()

    @property
    def stopping(self) -> bool:
        return self._stopping is not None

    @property
    def in_hand(self) -> int:
        return sum(self._known.values())

    def _add(self, op: tuple[str, Any]) -> None:
        with self._cond:
            self._ops.append(op)
            self._cond.notify()

    # --- the thread --------------------------------------------------------------------------

    def _loop(self) -> None:
        from twisted.internet import reactor

        while True:
            with self._cond:
                while True:
                    now = time.monotonic()
                    want = 0 if self._stopping else self.hold - sum(self._known.values())
                    asking = want > 0 and now >= self._empty_until
                    if self._ops or asking or self._stopping:
                        break
                    self._cond.wait(max(self._empty_until - now, 0.01) if want > 0 else None)
                ops, self._ops = self._ops, []
                stopping, check = self._stopping, self.idle and not self._stopping and asking
            try:
                applied = self._send(ops, want if asking else 0, check)
            except Exception as exc:  # noqa: BLE001 - not an outage: the crawl cannot go on without Redis
                with self._cond:
                    self._dead = True
                    stopping = self._stopping
                reactor.callFromThread(self._failed, f"Redis refused a batch: {type(exc).__name__}: {exc}")
                if stopping is not None:
                    reactor.callFromThread(stopping, 0)
                return
            if applied is not None:
                self._received(applied, want if asking else 0)
            if stopping is not None and not self._ops:
                # Also what a take in flight when the crawler closed brought: never left held.
                keep = self._hand_back or sum(self._known.values()) > 0
                moved = self.outages.call(self.run.hand_back) if keep else 0
                reactor.callFromThread(stopping, moved)
                return

    def _send(self, ops: list[tuple[str, Any]], take: int, check: bool) -> Applied | None:
        calls = [value for kind, value in ops if kind == "call"]
        redis_ops = [(kind, value) for kind, value in ops if kind != "call"]
        stats = self._stats_report() if (check or any(kind == "ack" for kind, _ in ops)) else {}
        role = self.role if check else ""
        tries = 0

        def attempt() -> Applied:
            nonlocal tries
            tries += 1
            if tries == 1:
                return self.run.apply(redis_ops, take, role, stats)
            applied = self.run.apply(redis_ops, 0, role, stats)  # the take may have happened: look, not take
            applied.taken = self.run.orphans(self._expected())
            return applied

        applied = self.outages.call(attempt) if (redis_ops or take or check or stats) else None
        if stats:
            self._published = stats
        for action, done in calls:
            self._call_back(done, self.outages.call(action))
        return applied

    def _received(self, applied: Applied, asked: int) -> None:
        from twisted.internet import reactor

        if applied.taken:
            with self._cond:
                self._known.update(applied.taken)
            self._wait = FIRST_WAIT
            reactor.callFromThread(self._deliver, applied.taken)
        if asked and len(applied.taken) < asked:  # the queue ran dry: back off, and reap meanwhile
            with self._cond:
                self._empty_until = time.monotonic() + self._wait
            self._wait = min(self._wait * 2, LONGEST_WAIT)
            self._reap()
        if applied.over:
            reactor.callFromThread(self._over, applied.totals)
            with self._cond:
                self.idle = False

    def _reap(self) -> None:
        now = time.monotonic()
        if now < self._next_reap:
            return
        self._next_reap = now + self.heartbeat
        # A take whose answer was lost (a connection dropped after Redis ran it, and redis-py sent it
        # again): what it moved is in our held list and nowhere else. Used now, not held forever.
        lost = self.outages.call(lambda: self.run.orphans(self._expected()))
        if lost:
            logger.warning("spread run %s: %d request(s) taken by a lost answer, now used",
                           self.run.run, len(lost))  # fmt: skip
            self._received(Applied(taken=lost), 0)
        for worker, back in self.outages.call(lambda: self.run.reap(self.heartbeat)).items():
            logger.warning("spread run %s: worker %s is dead: %d request(s) back in the queue",
                           self.run.run, worker, back)  # fmt: skip

    def _expected(self) -> Counter[bytes]:
        """What this worker's held list holds once the acknowledgements not sent yet are."""
        with self._cond:
            known = Counter(self._known)
            for kind, value in self._ops:
                if kind == "ack":
                    known[value] += 1
        return known

    def _stats_report(self) -> dict[str, float]:
        """This crawler's counters, when they changed since its last report (``{}`` otherwise)."""
        current = {name: float(value) for name, value in foldable(dict(self._stats())).items()}
        return current if current != self._published else {}

    @staticmethod
    def _call_back(done: Callable[[Any], None], result: Any) -> None:
        from twisted.internet import reactor

        reactor.callFromThread(done, result)
