"""A store's writer thread: one thread, a bounded queue in front of it, results awaited on the reactor.

Shared by the SQLite and PostgreSQL stores (each adds what its backend needs:
SQLite one thread per file and process, :mod:`trawl.stores.sqlite.writer`;
PostgreSQL one per store, :mod:`trawl.stores.postgresql.writer`). Why a
thread at all: the store's writes were 42% of a four-source
crawl's profile, all of it on the reactor thread; both drivers release the
GIL while the database works, so a thread lets the reactor download and
parse meanwhile and a crawl uses both cores.

Backpressure: at most :data:`QUEUED` batches wait for the thread; the next
one waits on the reactor (a Deferred, never a blocked thread) and its item's
``process_item`` with it, so Scrapy's own scraper limit
(``SCRAPER_SLOT_MAX_ACTIVE_SIZE``) holds further downloads while the store is
behind. One thread and a FIFO queue keep the batches in the order the
pipeline handed them over.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from trawl.common import statkeys

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred, DeferredSemaphore

    from trawl.pipeline.context import RunContext
    from trawl.records.batches import Batch

T = TypeVar("T")

#: Batches handed to the writer and not written yet, at most (memory: a few frames; time: enough
#: that the thread never waits for the reactor to hand it the next one).
QUEUED = 4


@dataclass
class Queued:
    """One item handed to :meth:`WriterThread.submit_grouped`: its ``future`` is set by the group's writer."""

    item: Any
    #: Items of one epoch may be written together; any other task in between starts a new one.
    epoch: int
    future: Future[Any] = field(default_factory=Future)


class WriterThread:
    """A single worker thread and the bounded queue in front of it."""

    def __init__(self, name: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._slots: DeferredSemaphore | None = None  # made on the reactor, when first needed
        #: Items of :meth:`submit_grouped` not taken by a group yet (appended on the reactor).
        self._grouped: deque[Queued] = deque()
        self._epoch = 0

    def call(self, function: Callable[..., T], *args: object) -> T:
        """``function(*args)`` on the writer thread, after everything queued before; waits for it."""
        return self._executor.submit(function, *args).result()

    async def submit(self, function: Callable[..., T], *args: object) -> T:
        """``function(*args)`` on the writer thread, awaited on the reactor (in order, bounded)."""

        def queue() -> Future[T]:
            self._epoch += 1  # grouped items queued after this task are never written before it
            return self._executor.submit(function, *args)

        return await self._awaited(queue)

    async def submit_grouped(self, write_group: Callable[[list[Queued]], None], item: object) -> Any:
        """``item`` written by ``write_group`` on the writer thread, with the items queued behind it
        by the time the thread gets to it (in order, bounded as :meth:`submit`); its result awaited.

        ``write_group(items)`` sets every item's ``future``. A store whose transaction costs more
        than its rows (the WAL frames of every page a batch touches) writes a queue of batches
        in one: the thread is behind exactly when the queue is long.
        """

        def queue() -> Future[Any]:
            queued = Queued(item, self._epoch)
            self._grouped.append(queued)
            self._executor.submit(self._write_grouped, write_group)
            return queued.future

        return await self._awaited(queue)

    async def _awaited(self, queue: Callable[[], Future[T]]) -> T:
        """The future ``queue()`` returns, awaited on the reactor; at most :data:`QUEUED` at once."""
        # Here, not at the top: a store's class (its capabilities, its URI checks) is looked up
        # by read commands too, which need neither Twisted nor Scrapy (0.3 s of imports).
        from scrapy.utils.defer import maybe_deferred_to_future
        from twisted.internet.defer import Deferred, DeferredSemaphore

        if self._slots is None:
            self._slots = DeferredSemaphore(QUEUED)
        await maybe_deferred_to_future(self._slots.acquire())
        try:
            done: Deferred[T] = Deferred()
            queue().add_done_callback(lambda finished: _settle_on_reactor(done, finished))
            return await maybe_deferred_to_future(done)
        finally:
            self._slots.release()

    def call_grouped(self, write_group: Callable[[list[Queued]], None], item: object) -> Any:
        """:meth:`submit_grouped`, blocking: ``item`` written alone, after everything queued before."""
        queued = Queued(item, -1)
        self._executor.submit(_write_all, write_group, [queued]).result()
        return queued.future.result()

    def _write_grouped(self, write_group: Callable[[list[Queued]], None]) -> None:
        """On the thread: the queued items of the first one's epoch (none: an earlier group took them)."""
        group: list[Queued] = []
        while self._grouped and (not group or self._grouped[0].epoch == group[0].epoch):
            group.append(self._grouped.popleft())
        if group:
            _write_all(write_group, group)

    def shutdown(self) -> None:
        """Let the queued work finish (and :meth:`_on_shutdown` run on the thread), then end the thread."""
        try:
            self._executor.submit(self._on_shutdown).result()
        finally:
            self._executor.shutdown(wait=True)

    def _on_shutdown(self) -> None:
        """On the writer thread, after the queued work: what a backend closes there (a connection)."""


def _write_all(write_group: Callable[[list[Queued]], None], group: list[Queued]) -> None:
    """``write_group(group)``; an item it left unset gets its exception (nobody awaits forever)."""
    try:
        write_group(group)
    except BaseException as exc:  # noqa: BLE001 - handed to the items' awaiting callers
        for queued in group:
            if not queued.future.done():
                queued.future.set_exception(exc)
    for queued in group:
        if not queued.future.done():
            queued.future.set_exception(RuntimeError("a grouped write left an item without a result"))


def _nothing() -> None:
    """What :meth:`WritesOnThread.written` queues: its turn is the point."""


def _settle_on_reactor(done: Deferred[T], future: Future[T]) -> None:
    """Fire ``done`` with ``future``'s outcome, on the reactor thread (called on the writer's)."""
    from twisted.internet import reactor

    def settle() -> None:
        error = future.exception()
        if error is not None:
            done.errback(error)
        else:
            done.callback(future.result())

    reactor.callFromThread(settle)  # type: ignore[attr-defined]


class WritesOnThread:
    """``write_batch``/``write_batch_async`` of a store whose ``_write(batch)`` runs on its writer thread.

    The store sets ``_writer`` when it opens and defines ``_write``, which
    returns (new records, pages stored before) on the writer thread; the
    stats are counted here, on the caller's thread (the reactor's), never
    the writer's (Scrapy's stats collector is not thread-safe).
    """

    _writer: WriterThread | None
    context: RunContext

    def _write(self, batch: Batch) -> tuple[int, int]:
        raise NotImplementedError

    def write_batch(self, batch: Batch) -> int:
        """The batch in one transaction on the writer thread (blocking); the count of new records."""
        if not batch.frame.height and not batch.pages:
            return 0
        assert self._writer is not None, "store not open"
        return self._count(*self._writer.call(self._write, batch))

    async def write_batch_async(self, batch: Batch) -> int:
        """:meth:`write_batch` awaited on the reactor while the writer thread merges it."""
        if not batch.frame.height and not batch.pages:
            return 0
        assert self._writer is not None, "store not open"
        return self._count(*await self._writer.submit(self._write, batch))

    async def written(self) -> None:
        """Everything handed to the writer thread so far is written (a no-op queued behind it)."""
        if self._writer is not None:
            await self._writer.submit(_nothing)

    def _count(self, new: int, skipped_pages: int) -> int:
        if skipped_pages:
            self.context.stats.inc_value(statkeys.PAGES_ALREADY_STORED, skipped_pages)
        return new
