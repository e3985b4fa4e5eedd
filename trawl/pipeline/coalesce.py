"""Small pages of one source held for a moment and run through the pipeline as one batch.

Every batch pays fixed costs whatever its size: a store transaction (its WAL
commit), the store's four statements and a dozen polars calls in the
normalizer, dedup and store, each ~0.3-1 ms on a small frame. Measured on the
SQLite store alone, a 100-row urlscan page cost ~6 ms to insert and ~16 ms to
merge, against ~0.1 ms a row in 5,000-row pages; OTX (500 rows) and urlscan
(100) send hundreds of such pages (bench/bench_sources.py). So a
batch smaller than ``BATCH_COALESCE_ROWS`` waits, at most
``BATCH_COALESCE_SECONDS``, for others of its source; then they go through the
hooks and into the store together, every page claimed in the store's ledger in
the same transaction as the rows (:attr:`trawl.records.batches.Batch.pages`).

Nothing waits on the pipeline but the items themselves: requests for further
pages are scheduled as soon as the callback yields them, so the wait costs no
throughput, only up to ``BATCH_COALESCE_SECONDS`` before a page's URLs reach
the store and the exports. A page that waits is in no ledger yet: a crash
loses it and a resumed crawl fetches it again, as for a page in flight.

Nor does a held batch wait when nothing more can come: the crawler is polled
every ``QUIET_POLL_SECONDS`` while it holds one, and once no request is being
downloaded, none is scheduled, no start request is left and no response waits
to be parsed (:func:`crawler_is_quiet`), the held batches go. The last pages of
every crawl waited out the whole ``BATCH_COALESCE_SECONDS`` before (0.2 s of a
0.96 s wayback crawl of one page, the reactor idle). A poll, not a check on
arrival: a sequentially paged source (urlscan, OTX) yields a page's items before
its next request is scheduled, and coalescing those pages is the point.

The first waiting item returns the combined batch (what the feed exports
write, each URL once); the others return empty batches of their own pages.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred

from trawl.records.batches import Batch
from trawl.stores.contract import PartlyStored

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet.interfaces import IDelayedCall

#: How often a crawler holding batches is asked whether more may come: a page's callback
#: has yielded its next request well within this (a local CDX page parses in ~5 ms).
QUIET_POLL_SECONDS = 0.02


def crawler_is_quiet(crawler: Crawler) -> bool:
    """Can no more items come to this crawler's pipeline, but from responses parsed already?

    Scrapy's engine says so only through its private slots; a crawler whose engine does not
    show them (another Scrapy) is never quiet, and held batches wait their time as before.
    """
    engine = getattr(crawler, "engine", None)
    slot = getattr(engine, "_slot", None)
    scraper_slot = getattr(getattr(engine, "scraper", None), "slot", None)
    if engine is None or slot is None or scraper_slot is None or not hasattr(engine, "_start"):
        return False
    try:
        return (
            not engine.downloader.active
            and engine._start is None
            and not slot.scheduler.has_pending_requests()
            and not scraper_slot.queue
        )
    except AttributeError:
        return False


class Coalescer:
    """Holds the small batches of one crawler (one source) until enough rows or time have come."""

    def __init__(
        self,
        rows: int,
        seconds: float,
        process: Callable[[Batch], Awaitable[Batch]],
        quiet: Callable[[], bool] = lambda: False,
    ) -> None:
        self.rows = rows
        self.seconds = seconds
        self._process = process
        #: Whether no more items can come (:func:`crawler_is_quiet`): then nothing waits.
        self._quiet = quiet
        self._waiting: list[tuple[Batch, Deferred[Batch]]] = []
        self._held_rows = 0
        self._timer: IDelayedCall | None = None
        #: When the oldest held batch must go, by the reactor's clock.
        self._due = 0.0

    def holds(self, batch: Batch) -> bool:
        """Whether ``batch`` is small enough to wait for others."""
        return self.rows > 0 and len(batch) < self.rows

    async def add(self, batch: Batch) -> Batch:
        """``batch``'s result, once it went through the pipeline with the others held with it."""
        done: Deferred[Batch] = Deferred()
        self._waiting.append((batch, done))
        self._held_rows += len(batch)
        if self._held_rows >= self.rows:
            await self.flush()
        elif self._timer is None:
            from twisted.internet import reactor

            self._due = reactor.seconds()  # type: ignore[attr-defined]
            self._due += self.seconds
            self._timer = reactor.callLater(min(QUIET_POLL_SECONDS, self.seconds), self._tick)  # type: ignore[attr-defined]
        return await maybe_deferred_to_future(done)

    def _tick(self) -> None:
        """Flush once the held batches waited their time or nothing more can come; else poll again."""
        from twisted.internet import reactor

        self._timer = None
        left = self._due - reactor.seconds()  # type: ignore[attr-defined]
        if left <= 0 or self._quiet():
            deferred_from_coro(self.flush())
        else:
            self._timer = reactor.callLater(min(QUIET_POLL_SECONDS, left), self._tick)  # type: ignore[attr-defined]

    async def flush(self) -> None:
        """Run what is held through the pipeline, as one batch; hand each waiting item its result."""
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        waiting, self._waiting, self._held_rows = self._waiting, [], 0
        # A source may yield several record kinds (crates.io: crates, versions...): each
        # kind's batches coalesce among themselves, in the order they came.
        kinds: dict[type[Batch], list[tuple[Batch, Deferred[Batch]]]] = {}
        for entry in waiting:
            kinds.setdefault(type(entry[0]), []).append(entry)
        for group in kinds.values():
            await self._flush_group(group)

    async def _flush_group(self, waiting: list[tuple[Batch, Deferred[Batch]]]) -> None:
        if len(waiting) == 1:
            await self._one(*waiting[0])
            return
        batches = [batch for batch, _ in waiting]
        try:
            result = await self._process(Batch.coalesce(batches))
        except PartlyStored:
            # Some of these pages were stored before (a resumed run): each on its own,
            # so that those are skipped and the others merged.
            for batch, done in waiting:
                await self._one(batch, done)
            return
        except Exception as exc:  # noqa: BLE001 - each waiting item fails as the one batch did
            for _, done in waiting:
                done.errback(exc)
            return
        waiting[0][1].callback(result)
        for batch, done in waiting[1:]:
            done.callback(type(result).for_pages_of(batch, result.frame.clear()))

    async def _one(self, batch: Batch, done: Deferred[Batch]) -> None:
        try:
            result = await self._process(batch)
        except Exception as exc:  # noqa: BLE001 - the item fails as its batch did
            done.errback(exc)
        else:
            done.callback(result)
