"""The PostgreSQL store's writer thread: the one thread its connection is used on.

Every statement of a crawl's store runs here (``open``, each batch, the
ledger, ``close``); the pipeline hands a batch over and awaits it
(:meth:`WriterThread.submit`) while the reactor goes on downloading and
parsing. psycopg releases the GIL while it waits on the server and while
libpq sends the ``COPY`` data, and the CSV and JSON are made and read by
polars (in Rust, GIL released), so the reactor keeps the CPU meanwhile.

Why a thread, and not psycopg's ``AsyncConnection`` on the reactor's asyncio
loop: the work between round trips (the CSV of a batch, reading the merged
rows back) is CPU on polars, which on the loop would run on the reactor's
thread; a thread keeps the reactor's latency what it is with SQLite, with the
same code (and ``scrapy search``, exports and the benchmark use the same
synchronous connection).

Unlike SQLite's (one thread per file and process: the file has one write
lock), each store (one per source of ``crawl all``) has its own thread and
connection: PostgreSQL merges batches of different sources in parallel, and
row locks in URL order keep them correct (:mod:`.schema`).

Backpressure as SQLite's: at most :data:`QUEUED` batches wait for the thread;
the next one waits on the reactor (a Deferred, never a blocked thread).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred, DeferredSemaphore

T = TypeVar("T")

#: Batches handed to the writer and not written yet, at most.
QUEUED = 4


class WriterThread:
    """A single worker thread and the bounded queue in front of it."""

    def __init__(self, name: str = "trawl-postgresql-writer") -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._slots: DeferredSemaphore | None = None  # made on the reactor, when first needed

    def call(self, function: Callable[..., T], *args: object) -> T:
        """``function(*args)`` on the writer thread, after everything queued before; waits for it."""
        return self._executor.submit(function, *args).result()

    async def submit(self, function: Callable[..., T], *args: object) -> T:
        """``function(*args)`` on the writer thread, awaited on the reactor (in order, bounded)."""
        if self._slots is None:
            self._slots = DeferredSemaphore(QUEUED)
        await maybe_deferred_to_future(self._slots.acquire())
        try:
            done: Deferred[T] = Deferred()
            future = self._executor.submit(function, *args)
            future.add_done_callback(lambda finished: _settle_on_reactor(done, finished))
            return await maybe_deferred_to_future(done)
        finally:
            self._slots.release()

    def shutdown(self) -> None:
        """Let the queued work finish, then end the thread."""
        self._executor.shutdown(wait=True)


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
