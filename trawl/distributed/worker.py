"""``trawl worker``'s loop: take tasks, run them in this process's reactor, acknowledge them.

One long-lived Scrapy process per worker: every task runs as a crawler on the
worker's own reactor (:mod:`.taskrun`), built exactly as ``trawl crawl all``
builds a source's crawler, up to ``--tasks`` at once (as ``crawl all`` runs a
domain's sources at once). A child process per task cost the interpreter, the
imports and the store's opening every time: 1.95x ``crawl all``'s wall time on
the bench, for one worker.

Nothing that waits on Redis runs on the reactor. A taker thread blocks in
``BLMOVE`` (at most 5 s, one command, no polling) while a slot is free and hands
what it took to the reactor; acknowledgements, the checks before a crawl and
the work after it (exports, notifications) run on the reactor's thread pool;
the heartbeat has a thread of its own. What a worker holds stays in its
processing list until acknowledged (:mod:`trawl.distributed.queue`).

A store that loses its server (PostgreSQL restarting) waits it out
(:mod:`trawl.stores.postgresql.outage`); one that gives up (``POSTGRES_OUTAGE_MAX``)
stops its crawl, and the task goes back to the queue, never to the dead
letters (:mod:`.storelost`). ``--until-empty`` exits only once nothing is
pending, held or in hand anywhere, so a worker does not end while a
handed-back task waits for the server.

Signals: the first SIGTERM or SIGINT takes no more work (the blocked ``BLMOVE``
is ended with ``CLIENT UNBLOCK``), finishes the tasks held and exits 0; a
second one stops the crawls (each as a stopped crawl stops: ``partial``, its
batches stored) and hands their tasks back to the queue. ``kill -9``: the
crawls die with the process, the heartbeat expires, and another worker's
reaper returns the tasks held.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import redis
from scrapy import signals
from scrapy.utils.defer import deferred_from_coro
from twisted.internet import threads
from twisted.internet.defer import Deferred, DeferredList

from trawl.distributed import storelost, taskrun
from trawl.distributed.outage import MAX_DELAY, Outages
from trawl.distributed.queue import MISSED_BEATS, WorkQueue
from trawl.distributed.spreadlane import share_outages
from trawl.distributed.taskrun import HeldTask
from trawl.distributed.tasks import Task
from trawl.errors import TrawlError
from trawl.stores.postgresql import outage as store_outage
from trawl.stores.postgresql.outage import StoreOutage

if TYPE_CHECKING:
    from scrapy.crawler import CrawlerProcessBase
    from twisted.python.failure import Failure

logger = logging.getLogger("trawl.worker")
#: The longest one BLMOVE blocks: how soon an idle worker reaps and notices ``--until-empty``.
MAX_TAKE_WAIT = 5.0
#: The longest the taker waits for a task it took to start before it takes another (a preflight
#: waiting out a store outage must not stop the worker taking join tasks for ever).
START_WAIT = 30.0


def new_worker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def separate_client(client: redis.Redis) -> redis.Redis:
    """A client on the same server with a pool of its own (a blocked ``BLMOVE`` holds a connection)."""
    pool = client.connection_pool
    return redis.Redis(connection_pool=redis.ConnectionPool(connection_class=pool.connection_class,
                                                            **pool.connection_kwargs))  # fmt: skip


def watch_depths(client: redis.Redis, sources: Sequence[str]) -> None:
    """``trawl_queue_depth``: the tasks of each source pending in the queue, read at each scrape.

    On the metrics server's thread, with a client of its own; a Redis that does not
    answer leaves the last values (:func:`trawl.metrics.watch_queue_depth`). Every
    source this worker knows has a series, at 0 when none of its tasks waits.
    """
    from trawl.metrics import watch_queue_depth

    queue = WorkQueue(client)

    def depths() -> dict[str, float]:
        pending = dict.fromkeys(sources, 0.0)
        for (_, source), count in queue.status().pending.items():
            pending[source] = pending.get(source, 0.0) + count
        return pending

    watch_queue_depth(depths)


def as_deferred(crawling: Any) -> Deferred:
    """What ``process.crawl()`` returned (a Deferred, or an asyncio Task) as a Deferred."""
    return crawling if isinstance(crawling, Deferred) else Deferred.fromFuture(crawling)


class Worker:
    def __init__(
        self,
        queue: WorkQueue,
        process: CrawlerProcessBase,
        own_settings: Mapping[str, str],
        known_sources: Sequence[str],
        slots: int = 1,
        until_empty: bool = False,
    ) -> None:
        self.queue = queue
        self.process = process
        self.own_settings = dict(own_settings)
        self.known_sources = list(known_sources)
        self.slots = slots
        self.until_empty = until_empty
        self.id = new_worker_id()
        self.outages = Outages(logger, min(MAX_DELAY, queue.heartbeat * MISSED_BEATS))
        share_outages(self.outages)  # a spread crawl's Redis thread rides the same outages
        store_outage.on_dropping(self._store_dropping)
        #: The taker's own connection, so that ``CLIENT UNBLOCK`` ends exactly its ``BLMOVE``.
        self.take_queue = WorkQueue(separate_client(queue.client), queue.max_deaths, queue.heartbeat)
        self.taker_id: int | None = None
        self.held: list[HeldTask] = []
        self.signals = 0
        self.draining = threading.Event()
        self.beating = threading.Event()
        self.slots_free = threading.Semaphore(slots)
        self._lock = threading.Lock()
        self._in_hand = 0  # taken and not acknowledged yet (any thread)
        #: Set once the task last taken has started (or was refused): the next is taken only then.
        self.settled = threading.Event()

    # --- the process -------------------------------------------------------------------------

    def run(self) -> int:
        from twisted.internet import reactor

        self._install_signals()
        self.outages.call(lambda: self.queue.beat(self.id))
        beater = threading.Thread(target=self._beat, name="heartbeat", daemon=True)
        beater.start()
        taker = threading.Thread(target=self._take_loop, name="taker", daemon=True)
        logger.info("worker %s: waiting for work (%d at a time)", self.id, self.slots)
        reactor.callWhenRunning(taker.start)
        try:
            self.process.start(stop_after_crawl=False, install_signal_handlers=False)
        finally:
            self.draining.set()
            self._unblock()
            if taker.is_alive():
                taker.join(MAX_TAKE_WAIT + 1)
            self.beating.set()
            returned = self.outages.call(lambda: self.queue.release_all(self.id))
            if returned:
                logger.info("worker %s: handed %d task(s) back to the queue", self.id, returned)
        logger.info("worker %s: stopped", self.id)
        return 0

    # --- the taker thread ----------------------------------------------------------------------

    def _take_loop(self) -> None:
        from twisted.internet import reactor

        wait = min(self.queue.heartbeat, MAX_TAKE_WAIT)
        next_reap = 0.0
        while not self.draining.is_set():
            if time.monotonic() >= next_reap:
                self._reap()
                next_reap = time.monotonic() + self.queue.heartbeat
            if not self.slots_free.acquire(timeout=wait):
                continue
            raw = self._take(wait)
            if raw is not None and self.draining.is_set():
                self.outages.call(lambda raw=raw: self.queue.release(self.id, raw))  # type: ignore[misc]
                raw = None
            if raw is None:
                self.slots_free.release()
                if self.until_empty and not self.draining.is_set() and self._idle():
                    logger.info("worker %s: the queue is empty and no worker holds work: exiting", self.id)
                    self.draining.set()
                    reactor.callFromThread(self._maybe_exit)
                continue
            with self._lock:
                self._in_hand += 1
            self.settled.clear()
            reactor.callFromThread(self._start, raw)
            self._wait_settled()

    def _wait_settled(self) -> None:
        """Take no more until the task just taken has started: one worker took all six tasks of a
        queue in a few milliseconds while another waited; taking one at a time, as Celery and
        Dramatiq workers prefetch, shares a burst of tasks among the workers waiting for it."""
        deadline = time.monotonic() + START_WAIT
        while not self.settled.wait(0.5):
            if self.draining.is_set() or time.monotonic() > deadline:
                return

    def _take(self, wait: float) -> bytes | None:
        def take() -> bytes | None:
            self.taker_id = int(self.take_queue.client.client_id())
            if self.draining.is_set():
                return None
            return self.take_queue.take(self.id, wait)

        return self.outages.call(take)

    def _idle(self) -> bool:
        with self._lock:
            if self._in_hand:
                return False
        return bool(self.outages.call(self.queue.idle))

    def _unblock(self) -> None:
        """End the taker's blocked ``BLMOVE`` at once (as if it timed out): nothing is moved after it."""
        if self.taker_id is None:
            return
        try:
            self.queue.client.client_unblock(self.taker_id)
        except redis.RedisError:
            pass  # Redis away: the take ends by itself within MAX_TAKE_WAIT

    def _reap(self) -> None:
        for worker, back, dead in self.outages.call(lambda: self.queue.reap(self.id)):
            logger.warning(
                "worker %s: worker %s is dead: %d task(s) back in the queue, %d dead-lettered",
                self.id, worker, back, dead,
            )  # fmt: skip

    # --- tasks, on the reactor's thread --------------------------------------------------------

    def _start(self, raw: bytes) -> None:
        try:
            task = Task.from_json(raw)
        except ValueError as exc:
            reason = str(exc)
            logger.error("worker %s: dead-lettered an unreadable task: %s", self.id, reason)
            self.settled.set()
            d = threads.deferToThread(self.outages.call, lambda: self.queue.dead_letter(self.id, raw, reason))
            d.addBoth(lambda _: self._released(None))
            return
        if task.join and any(task.join in (h.task.id, h.task.join) for h in self.held):
            logger.info("worker %s: already in spread run %s; join task done", self.id, task.join[:8])
            self.settled.set()
            d = threads.deferToThread(self.outages.call, lambda: self.queue.done(self.id, raw))
            d.addBoth(lambda _: self._released(None))
            return
        held = HeldTask(
            raw, task, taskrun.task_settings(self.process.settings, task, self.own_settings),
            taskrun.task_arguments(task, self.known_sources),
        )  # fmt: skip
        held.spread = taskrun.spread_role(held.settings, task, self._source_class(task.source))
        if held.spread:
            taskrun.use_spreading(held.settings, task, held.spread, self.id)
        self.held.append(held)
        if task.join:  # not "took": the queue's tasks are counted by that line, and a join is no new work
            logger.info("worker %s: joined spread run %s of %s", self.id, task.join[:8], held.what)
        else:
            logger.info("worker %s: took %s (task %s)", self.id, held.what, task.id[:8])
        d = threads.deferToThread(taskrun.preflight, held, self.process.spider_loader)
        d.addCallbacks(lambda _: self._launch(held), lambda failure: self._refused(held, failure))

    def _refused(self, held: HeldTask, failure: Failure) -> None:
        self.settled.set()
        exc = failure.value
        if isinstance(exc, StoreOutage):  # the store's server stayed away: not the task's fault
            held.store_outage = str(exc)
        else:
            held.refused = str(exc) if isinstance(exc, TrawlError) else f"{type(exc).__name__}: {exc}"
        self._finish(held)

    def _launch(self, held: HeldTask) -> None:
        self.settled.set()
        if held.stopped:
            self._finish(held)
            return
        try:
            taskrun.launch(held, self.process)
        except TrawlError as exc:
            held.refused = str(exc)
            self._finish(held)
            return
        if held.spread == taskrun.OWNER:
            for run in held.runs:  # after its store registered the run: joiners write under it
                run.crawler.signals.connect(lambda spider: self._spread_opened(held, spider),
                                            signal=signals.spider_opened, weak=False)  # fmt: skip
        ended = DeferredList([as_deferred(run.crawling) for run in held.runs], consumeErrors=True)
        ended.addCallback(lambda results: self._crawled(held, results))

    def _source_class(self, name: str) -> Any:
        try:
            return self.process.spider_loader.load(name)
        except KeyError:
            return None  # an unknown source: the checks before the crawl refuse the task

    def _spread_opened(self, held: HeldTask, spider: Any) -> None:
        """The owner's spider is open: its joiners are invited, if its store registered the run (a store
        that did not open, its server away past ``POSTGRES_OUTAGE_MAX`` or any failure, registered no
        run: a joiner would fail on it and its join task be dead-lettered)."""
        if getattr(getattr(spider, "run_context", None), "store", None) is None:
            return
        threads.deferToThread(self._invite, held)

    def _invite(self, held: HeldTask) -> None:
        """A join task of the owner's spread run into every other live worker's inbox (on a thread).

        Addressed, not queued for any taker: a worker with free slots that already runs the
        run's crawler would take them itself.
        """
        others = [w for w in self.outages.call(self.queue.live_workers) if w != self.id]
        for index, worker in enumerate(others, 1):
            task = held.task.joining(index)
            self.outages.call(lambda worker=worker, task=task: self.queue.invite(worker, task))  # type: ignore[misc]
        logger.info("worker %s: %s: spreading its pages, %d join task(s) queued",
                    self.id, held.what, len(others))  # fmt: skip

    def _crawled(self, held: HeldTask, results: list[tuple[bool, Any]]) -> None:
        for success, value in results:
            if not success:
                held.crashed = True
                logger.error("worker %s: %s: the crawl could not run: %s", self.id, held.what,
                             value.getErrorMessage())  # fmt: skip
        self._finish(held)

    def _finish(self, held: HeldTask) -> None:
        d = threads.deferToThread(self._acknowledge, held)
        d.addErrback(lambda failure: logger.error("worker %s: %s: %s", self.id, held.what, failure.value))
        d.addBoth(lambda _: self._released(held))

    def _acknowledge(self, held: HeldTask) -> None:
        """After the crawl, on a thread: ``crawl all``'s wrap-up, then the queue told done, back or dead."""
        held.store_outage = taskrun.store_outage(held)
        if held.store_outage is None and held.spread == taskrun.OWNER and held.runs and not held.stopped:
            held.store_outage = storelost.dropped_by_joiner(self.queue, self.outages, held)
        if not held.stopped and held.store_outage is None:
            try:
                taskrun.wrap_up(held)
            except Exception as exc:  # noqa: BLE001 - the crawl's outcome stands
                logger.error("worker %s: %s: after the crawl: %s: %s",
                             self.id, held.what, type(exc).__name__, exc)  # fmt: skip
        kind, reason = taskrun.verdict(held)
        took = time.monotonic() - held.started
        if kind == taskrun.DONE:
            self.outages.call(lambda: self.queue.done(self.id, held.raw))
            if held.task.join:
                logger.info("worker %s: %s: its share of spread run %s fetched in %.1f s",
                            self.id, held.what, held.task.join[:8], took)  # fmt: skip
            else:
                logger.info("worker %s: %s done in %.1f s", self.id, held.what, took)
        elif kind == taskrun.BACK and held.store_outage is not None:
            self._store_lost(held, reason)
        elif kind == taskrun.BACK:
            self.outages.call(lambda: self.queue.release(self.id, held.raw))
            logger.info("worker %s: %s stopped; handed back to the queue", self.id, held.what)
        else:
            self.outages.call(lambda: self.queue.dead_letter(self.id, held.raw, reason))
            logger.error("worker %s: %s dead-lettered: %s; see this worker's log", self.id, held.what, reason)

    def _store_lost(self, held: HeldTask, reason: str) -> None:
        storelost.hand_back(self.queue, self.outages, self.id, held, reason)

    def _store_dropping(self, settings: Any) -> None:
        storelost.joiner_dropping(self.queue, self.outages, self.id, settings)

    def _released(self, held: HeldTask | None) -> None:
        if held is not None and held in self.held:
            self.held.remove(held)
        with self._lock:
            self._in_hand -= 1
        self.slots_free.release()
        self._maybe_exit()

    def _maybe_exit(self) -> None:
        from twisted.internet import reactor

        with self._lock:
            busy = self._in_hand > 0
        if self.draining.is_set() and not busy and not self.held and reactor.running:
            reactor.stop()

    # --- heartbeat and signals ---------------------------------------------------------------

    def _beat(self) -> None:
        while not self.beating.wait(self.queue.heartbeat):
            self.outages.call(lambda: self.queue.beat(self.id))

    def _install_signals(self) -> None:
        from twisted.internet import reactor

        def handler(signum: int, _frame: Any) -> None:
            reactor.callFromThread(self._signalled, signum)  # never log inside a signal handler

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def _signalled(self, signum: int) -> None:
        self.signals += 1
        name = signal.Signals(signum).name
        if self.signals == 1:
            logger.warning(
                "worker %s: %s: taking no more work, finishing the %d task(s) held (again: stop them)",
                self.id, name, len(self.held),
            )  # fmt: skip
            self.draining.set()
            threads.deferToThread(self._unblock)
            self._maybe_exit()
            return
        if self.signals > 2:
            return
        logger.warning("worker %s: %s again: stopping %d crawl(s), handing their tasks back",
                       self.id, name, len(self.held))  # fmt: skip
        for held in self.held:
            held.stopped = True
            for run in held.runs:
                try:
                    crawler = run.crawler
                    if crawler.crawling:
                        deferred_from_coro(crawler.stop_async())  # as Scrapy's own stop: a graceful close
                except Exception as exc:  # noqa: BLE001 - a crawler still starting: it ends by itself
                    logger.debug("worker %s: cannot stop a crawler yet: %s", self.id, exc)
