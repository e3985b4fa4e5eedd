"""The Scrapy scheduler of a spread run: every request goes through the run's queue in Redis.

A spreadable source's task (``spreadable = True`` on its spider class) runs on
one worker, its *owner*, and ``trawl worker`` queues "join" tasks for the same
run (:meth:`trawl.distributed.worker.Worker._invite`); the workers that take them start a crawler of the
same source with this scheduler and no start requests. Every crawler of the
run pushes the requests its spider yields into the run's queue
(:class:`~trawl.distributed.spread.RunRequests`) and takes its next request
from it, so one domain's pages are fetched by every worker.

Why not scrapy-redis's ``Scheduler``: its queue pops a request for good, so a
worker killed mid-request loses it; this one keeps every request taken in the
worker's held list until its answer is done with, and the reaper returns a
dead worker's. Scrapy's own scheduler interface is all the engine needs.

When a request is done with (acknowledged, off the held list):

- its response or failure went through the spider's callback or errback and
  every item it gave through the item pipeline, the store included (the
  scraper's slot says so when it lets the response go: ``finish_response``);
  the requests it gave are in the queue before that, pushed as yielded;
- or a downloader middleware replaced it (a retry, a redirect): the
  replacement carries the held request's token in its meta (Scrapy copies
  meta into both), and the held request is acknowledged once the replacement
  is queued. A spreadable source's callbacks never copy a response's meta into
  a new request: that is part of being spreadable.

A request that cannot be serialized raises
:class:`~trawl.distributed.spread.UnserializableRequest` out of the spider's
callback: the crawl records the error, never drops it silently.

The reactor never waits on Redis: pushes and acknowledgements are handed to
the crawler's lane (:mod:`.spreadlane`, a thread of its own), which sends
them in batches, one transaction each, and takes requests ahead into
:attr:`SpreadScheduler.ready`, so that the engine finds its next request at
once. A crawler holds at most ``SPREAD_HOLD`` requests (0: three times the
source's concurrency: as many downloading, as many being stored, often held a
moment by the batch coalescer, and as many ready), so that the others get
theirs and a ``kill -9`` doubles little. What it cost before the lane (holding
no more than it downloaded, one Redis call at a time on the reactor's thread)
and after is measured in docs/distributed.md.

An idle crawler raises ``DontCloseSpider`` from ``spider_idle`` and tells its
lane, which asks Redis with a backoff (0.05 s doubling to 2 s) whether the run
is over: the owner closes when nothing is queued or held by anyone (then says
so in Redis and takes the run's counters: its stats are the whole run's), a
joiner when the owner said so. Lanes whose queue ran dry reap dead holders
once a heartbeat. Redis lost: the lane waits it out in the worker's outage
backoff (:mod:`.outage`), the crawl going on with what it holds.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.defer import Deferred

from trawl.distributed.connection import client
from trawl.distributed.spread import RunRequests
from trawl.distributed.spreadlane import Lane

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger("trawl.spread")

#: The meta key of a taken request's token (never serialized; a replacement inherits it).
TOKEN = "_trawl_spread"
#: Settings the worker gives a spread task's crawler (:func:`trawl.distributed.taskrun.task_settings`).
RUN = "SPREAD_RUN"
ROLE = "SPREAD_ROLE"
WORKER = "TRAWL_WORKER_ID"
OWNER, JOINER = "owner", "joiner"
#: ``SPREAD_HOLD`` 0: this many times the source's concurrency (downloading, being stored, next).
HOLD_PER_SLOT = 3


class SpreadScheduler:
    """Scrapy's scheduler interface over one run's queue in Redis; Redis itself is the lane's."""

    def __init__(self, crawler: Crawler, run: RunRequests, role: str, hold: int, heartbeat: float) -> None:
        self.crawler = crawler
        self.run = run
        self.role = role
        self.hold = max(hold, 1)
        self.heartbeat = heartbeat
        self.spider: Spider | None = None
        #: token -> the raw request, for every request given to the engine and not yet acknowledged.
        self.held: dict[int, bytes] = {}
        #: Taken from Redis, not yet asked for by the engine.
        self.ready: deque[bytes] = deque()
        self.over = False
        self._tokens = itertools.count(1)
        self.lane: Lane | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SpreadScheduler:
        settings = crawler.settings
        role = settings.get(ROLE, OWNER)
        run = RunRequests(client(settings), settings[RUN], settings[WORKER], role=role)
        hold = settings.getint("SPREAD_HOLD") or HOLD_PER_SLOT * _concurrency(crawler)
        return cls(crawler, run, role, hold, settings.getfloat("QUEUE_HEARTBEAT", 10.0))

    # --- Scrapy's scheduler interface ------------------------------------------------------

    def open(self, spider: Spider) -> Deferred:
        self.spider = spider
        stats = self.crawler.stats
        self.lane = Lane(
            self.run, role=self.role, hold=self.hold, heartbeat=self.heartbeat,
            stats=lambda: stats.get_stats() if stats is not None else {},
            deliver=self._delivered, over=self._finished, failed=self._failed,
        )  # fmt: skip
        self.crawler.signals.connect(self._opened, signal=signals.spider_opened)
        self.crawler.signals.connect(self._idle, signal=signals.spider_idle)
        logger.info("%s: spreading run %s's pages (%s)", spider.name, self.run.run, self.role)
        opened: Deferred = Deferred()
        self.lane.call(self.run.open if self.role == OWNER else (lambda: None), opened.callback)
        return opened

    def close(self, reason: str) -> Deferred | None:
        if self.lane is None:
            return None
        closed: Deferred = Deferred()
        hand_back = bool(self.held or self.ready or self.lane.in_hand)

        def done(moved: int) -> None:
            if moved:  # stopped before they were done: another worker's crawler takes them
                logger.info("spread run %s: %d request(s) handed back", self.run.run, moved)
            closed.callback(None)

        self.held.clear()
        self.ready.clear()
        self.lane.stop(hand_back, done)
        return closed

    def has_pending_requests(self) -> bool:
        return bool(self.ready)  # the run's queue is in Redis: what the lane took is pending here

    def enqueue_request(self, request: Request) -> bool:
        token = request.meta.pop(TOKEN, None)
        if self.role == JOINER and request.meta.get("is_start_request"):
            return False  # a joiner's spider starts nothing: the owner's start is the run's
        assert self.spider is not None and self.lane is not None
        fingerprint = self.crawler.request_fingerprinter.fingerprint(request).hex()
        self.lane.push(self.run.entry(request, self.spider, fingerprint))  # UnserializableRequest: loud
        if token is not None and token in self.held:  # a retry or redirect: it replaces the held one
            self._ack(token)
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value("scheduler/enqueued")
            stats.inc_value("scheduler/enqueued/redis")
        return True  # the run's dedup is Redis's: a request it saw before is not queued again there

    def next_request(self) -> Request | None:
        if not self.ready:
            return None
        assert self.spider is not None
        raw = self.ready.popleft()
        request = self.run.decode(raw, self.spider)
        token = next(self._tokens)
        self.held[token] = raw
        request.meta[TOKEN] = token
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value("scheduler/dequeued")
            stats.inc_value("scheduler/dequeued/redis")
        return request

    def __len__(self) -> int:
        return len(self.ready)

    # --- from the lane ---------------------------------------------------------------------

    def _delivered(self, taken: list[bytes]) -> None:
        if self.lane is None or self.lane.stopping:  # closing: the lane hands them back
            return
        self.ready.extend(taken)
        self.lane.set_idle(False)
        self._poke()

    def _finished(self, totals: dict[str, float]) -> None:
        """The run is over for this crawler; the owner takes the run's counters, summed over its crawlers."""
        self.over = True
        stats = self.crawler.stats
        if self.role == OWNER and stats is not None:
            for name, value in totals.items():
                stats.set_value(name, int(value) if float(value).is_integer() else value)
        self._poke()

    def _failed(self, reason: str) -> None:
        logger.error("spread run %s: %s", self.run.run, reason)
        engine = self.crawler.engine
        if engine is not None and self.spider is not None:
            deferred_from_coro(engine.close_spider_async(reason="spread_failed"))

    # --- acknowledgements ------------------------------------------------------------------

    def _opened(self, spider: Spider) -> None:
        """Wrap the scraper's slot: a response let go is one whose items went through the pipeline."""
        engine = self.crawler.engine
        slot = getattr(getattr(engine, "scraper", None), "slot", None)
        finish = getattr(slot, "finish_response", None)
        if finish is None:  # a Scrapy without it: fail the crawl rather than acknowledge too early
            raise RuntimeError("spreading pages needs Scrapy's scraper slot (finish_response)")

        def finish_response(result: Any, request: Request) -> None:
            finish(result, request)
            token = request.meta.get(TOKEN)
            if token in self.held:
                self._ack(token)

        slot.finish_response = finish_response

    def _ack(self, token: int) -> None:
        raw = self.held.pop(token)
        assert self.lane is not None
        self.lane.ack(raw)

    # --- the end of the run ----------------------------------------------------------------

    def _idle(self, spider: Spider) -> None:
        """Close once the lane said the run is over; until then ask it (it backs off, 0.05 s to 2 s)."""
        if self.over:
            return
        assert self.lane is not None
        self.lane.set_idle(True)
        raise DontCloseSpider

    def _poke(self) -> None:
        """Ask the engine for its next request now, not at its 5 s heartbeat."""
        engine = self.crawler.engine
        slot = getattr(engine, "_slot", None)
        nextcall = getattr(slot, "nextcall", None)
        if nextcall is None or getattr(slot, "closing", None) or not getattr(engine, "running", False):
            return  # closing: the engine asks for nothing more
        if getattr(getattr(engine, "scraper", None), "slot", None) is None:
            return
        nextcall.schedule()


def _concurrency(crawler: Crawler) -> int:
    from trawl.politeness.ratelimit import source_concurrency

    return int(source_concurrency(crawler.settings, crawler.spidercls) or 1)
