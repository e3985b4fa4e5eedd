"""Backpressure for stores that write off the reactor: downloads pause while the store is behind.

A store whose writes are awaited (:class:`~trawl.stores.contract.AsyncWritingStore`:
SQLite on its writer thread, Elasticsearch on the network) lets the reactor go
on downloading and parsing while a batch is written. Nothing then held the
reactor back: Scrapy's scraper limit (``SCRAPER_SLOT_MAX_ACTIVE_SIZE``) counts
responses, and a page's response leaves it before its batch is written. In
the four-source bench the writer fell up to 48 batches (180,000 rows) behind
and peak RSS rose from 348 to 473 MB.

So the rows handed to such stores and not yet written are counted for the
whole process (every crawler of ``crawl all`` shares the memory and, for
SQLite, the store file's one writer thread). A crawler that hands over a batch
while more than ``STORE_BACKLOG_ROWS`` rows wait is paused (its engine sends
no new request; those in flight finish), and every paused crawler goes on as
soon as the backlog is back under the bound. The default, 50,000 rows, is
about a second of the SQLite writer's work (17 µs a row, bench_store_write):
enough that the writer never waits for the reactor, little enough memory.

Rows are not memory: 50,000 URL rows are about 7 MB (polars'
``estimated_size``), a row of another record kind can be many times that. So
the frames' bytes are counted too, and :data:`BYTES_BOUND` pauses a crawler as
the row bound does, whichever is reached first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from scrapy.core.engine import ExecutionEngine


#: The frames' bytes waiting for the stores, at most (with ``STORE_BACKLOG_ROWS`` set): nine times
#: what 50,000 URL rows take, so that the row bound governs URL crawls as before.
BYTES_BOUND = 64 * 1024 * 1024


class StoreBacklog:
    """Rows and bytes waiting for an asynchronous store in this process, and the engines paused for them."""

    rows: ClassVar[int] = 0
    size: ClassVar[int] = 0
    _paused: ClassVar[list[ExecutionEngine]] = []

    @classmethod
    def over(cls, limit: int) -> bool:
        """Is the backlog over ``limit`` rows or :data:`BYTES_BOUND` bytes (``limit`` 0: no bound)?"""
        return bool(limit) and (cls.rows > limit or cls.size > BYTES_BOUND)

    @classmethod
    def add(cls, rows: int, engine: ExecutionEngine | None, limit: int, size: int = 0) -> None:
        """``rows`` (``size`` bytes) handed to a store; pause ``engine`` if the backlog is over the bound."""
        cls.rows += rows
        cls.size += size
        if cls.over(limit) and engine is not None and not engine.paused:
            engine.pause()
            cls._paused.append(engine)

    @classmethod
    def done(cls, rows: int, limit: int, size: int = 0) -> None:
        """``rows`` (``size`` bytes) written, or failed; the paused engines go on once under the bound."""
        cls.rows -= rows
        cls.size -= size
        if cls.over(limit):
            return
        paused, cls._paused = cls._paused, []
        for engine in paused:
            resume(engine)

    @classmethod
    def release(cls, engine: ExecutionEngine | None) -> None:
        """A closing crawler's engine is never left paused (its close must not wait on the heartbeat)."""
        if engine is not None and engine in cls._paused:
            cls._paused.remove(engine)
            resume(engine)


def resume(engine: ExecutionEngine) -> None:
    """Unpause ``engine`` and let it send at once.

    ``unpause`` only clears a flag: the engine would look at its queue again on
    its next heartbeat, up to 5 s later. Its ``nextcall`` is private to Scrapy
    (2.19), hence the guard.
    """
    engine.unpause()
    slot = getattr(engine, "_slot", None)
    nextcall = getattr(slot, "nextcall", None)
    if nextcall is not None:
        nextcall.schedule()
