"""The SQLite store's writer thread: the one thread its connection lives on.

Every statement of a crawl's store runs here: ``open``, each batch, the
ledger, ``close``. The pipeline hands a batch over and awaits it
(:meth:`WriterThread.submit`); the reactor meanwhile downloads and parses
other pages, so a multi-source crawl keeps both cores busy (issue 14: the
store's writes took 42% of the profile, all of it on the reactor thread,
and urlscan's next page waited up to 1.4 s behind another source's batch).

Why a thread, and why it pays now: sqlite3 releases the GIL inside each
``sqlite3_step``, and takes it back after. The old four-pass merge bound
every row in Python (``executemany``) and called a Python set union back
from SQL, so a writer thread took the GIL back once a row and ran slower
than the reactor alone (1M captures: 22.6 s against 18.3 s). The set-based
merge (:mod:`trawl.stores.sqlite.merge`) is a handful of statements a batch,
each one C call over the whole batch, so the thread holds the GIL only
between them.

One writer thread per store file and process, and one connection on it: the
four sources of ``crawl all`` each have a store (and a run) of their own, and
all of them write on the file's one thread, one transaction after the other
as on the reactor before. A thread each would make them wait for each other's
write lock in SQLite's busy handler, which sleeps up to 100 ms at a time; a
connection each held a page cache (``SQLITE_CACHE_MB``) and a staging table
each, four times the memory for the same pages (issue 14: peak RSS 450 MB
against 340 MB before the writer thread). The first store to open the file
makes the connection with its settings; the last one to close ends it.

Backpressure: at most :data:`QUEUED` batches wait for this thread; the next
one waits on the reactor (a Deferred, never a blocked thread) and its
item's ``process_item`` with it, so Scrapy's own scraper limit
(``SCRAPER_SLOT_MAX_ACTIVE_SIZE``) holds further downloads while the store
is behind. One thread and a FIFO queue keep the batches in the order the
pipeline handed them over, as when they were written on the reactor.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ClassVar, TypeVar

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred, DeferredSemaphore

T = TypeVar("T")

#: Batches handed to the writer and not written yet, at most (memory: a few frames; time: enough
#: that the thread never waits for the reactor to hand it the next one).
QUEUED = 4


class WriterThread:
    """A single worker thread and the queue in front of it."""

    _shared: ClassVar[dict[str, tuple[WriterThread, int]]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, name: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._slots = DeferredSemaphore(QUEUED)
        #: The file's one connection, made, used and closed on this thread only.
        self._connection: sqlite3.Connection | None = None

    def connection(self, connect: Callable[[], sqlite3.Connection]) -> sqlite3.Connection:
        """On this thread: the file's connection, made with ``connect`` by the first store to ask."""
        if self._connection is None:
            self._connection = connect()
        return self._connection

    @classmethod
    def acquire(cls, key: str) -> WriterThread:
        """The writer thread of the store file ``key`` (made by the first store that opens it)."""
        with cls._shared_lock:
            writer, users = cls._shared.get(key) or (cls("trawl-sqlite-writer"), 0)
            cls._shared[key] = (writer, users + 1)
            return writer

    @classmethod
    def release(cls, key: str) -> None:
        """One store of ``key`` is done with its thread; the last one ends it (queued work done first)."""
        with cls._shared_lock:
            writer, users = cls._shared[key]
            if users > 1:
                cls._shared[key] = (writer, users - 1)
                return
            del cls._shared[key]
        writer.shutdown()

    def call(self, function: Callable[..., T], *args: object) -> T:
        """``function(*args)`` on the writer thread, after everything queued before; waits for it."""
        return self._executor.submit(function, *args).result()

    async def submit(self, function: Callable[..., T], *args: object) -> T:
        """``function(*args)`` on the writer thread, awaited on the reactor (in order, bounded)."""
        await maybe_deferred_to_future(self._slots.acquire())
        try:
            done: Deferred[T] = Deferred()
            future = self._executor.submit(function, *args)
            future.add_done_callback(lambda finished: _settle_on_reactor(done, finished))
            return await maybe_deferred_to_future(done)
        finally:
            self._slots.release()

    def shutdown(self) -> None:
        """Let the queued work finish, close the connection, then end the thread."""
        try:
            self._executor.submit(self._close_connection).result()
        finally:
            self._executor.shutdown(wait=True)

    def _close_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


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
