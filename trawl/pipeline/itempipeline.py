"""The one Scrapy item pipeline: runs a batch through the plugin hooks into the store.

normalize -> filter -> dedup, each a pluggy hook called once per batch, then
the store that ``STORE_URI`` names (a class registered with
``trawl_register_stores``, implementing :mod:`trawl.stores.contract`), then
``trawl_batch_stored``. What comes out is the batch with the store's merged
values, ``new`` and ``repeat`` columns, which the feed exporters flatten to one
line per record. Items that are not batches pass through untouched; batches of
a kind no hook transforms go to the store as they are.

The pipeline knows no record kind: URL statistics, ``-a new_only=`` and the
in-memory "seen" set of a run without a store belong to the URL plugin
(:mod:`trawl.pipeline.builtins.dedup`), and what plugins read about the run
(domain, filters) is in the run context's ``inputs``, which the source fills
(``Source.run_inputs``). A second record kind travels the same path.

Store writes are awaited when the store is an
:class:`~trawl.stores.contract.AsyncWritingStore` (both built-in stores are:
SQLite writes on a thread of its own, Elasticsearch talks to its cluster), so
the reactor goes on downloading and parsing meanwhile; the item's
``process_item`` waits for its batch, which is how Scrapy's scraper limit
holds downloads back when the store falls behind. A synchronous store's
``write_batch`` runs on the reactor thread.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import uuid
from functools import reduce
from typing import TYPE_CHECKING, ClassVar

import polars as pl
from scrapy.exceptions import DropItem
from scrapy.utils.defer import deferred_from_coro

from trawl.common import statkeys
from trawl.common.jobdir import JOB_ID, RESUMABLE, record_end, run_id_for
from trawl.common.outcome import COMPLETE, run_outcome
from trawl.common.stopping import close_reason, watch
from trawl.errors import TrawlUsageError
from trawl.metrics.collector import time_store_write
from trawl.pipeline.backlog import StoreBacklog
from trawl.pipeline.coalesce import Coalescer, crawler_is_quiet
from trawl.pipeline.context import RunContext
from trawl.pipeline.manager import plugin_manager_from_settings
from trawl.records.batches import Batch, Mask
from trawl.stores.contract import AsyncWritingStore, PartlyStored, ResumableStore, WritingStore, keeps
from trawl.stores.registry import create_store

logger = logging.getLogger(__name__)
#: The close reason of a crawl a store error stopped.
STORE_ERROR = "store_error"

if TYPE_CHECKING:
    import pluggy
    from scrapy import Spider
    from scrapy.crawler import Crawler


class PluginPipeline:
    """Drives a pluggy PluginManager (project ``trawl``) over batch items, then the store."""

    #: Store failures logged in this process: the same one from another source is not an ERROR again.
    _failures_said: ClassVar[set[str]] = set()

    def __init__(self, crawler: Crawler, plugins: pluggy.PluginManager) -> None:
        self.crawler = crawler
        self.plugins = plugins
        self.context: RunContext | None = None
        self.store: WritingStore | None = None
        self.store_failed = False
        self.jobdir: str | None = None
        settings = crawler.settings
        rows, wait = settings.getint("BATCH_COALESCE_ROWS"), settings.getfloat("BATCH_COALESCE_SECONDS")
        quiet = functools.partial(crawler_is_quiet, crawler)
        self.coalescer = Coalescer(rows, wait, self._run, quiet) if rows else None
        self.backlog_rows = settings.getint("STORE_BACKLOG_ROWS")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PluginPipeline:
        """Uses the process's manager for these plugin settings: the crawl command built it already."""
        return cls(crawler, plugin_manager_from_settings(crawler.settings))

    def open_spider(self, spider: Spider | None = None) -> None:
        spider = spider or self.crawler.spider
        watch(self.crawler)  # the engine's close reason, known before this pipeline closes
        settings = self.crawler.settings
        run_id = settings.get("TRAWL_RUN_ID") or uuid.uuid4().hex
        self.jobdir = settings.get(RESUMABLE) or None
        if self.jobdir:
            run_id, resumed = run_id_for(self.jobdir, spider.name)
            if resumed:
                logger.info("%s: resuming run %s from %s", spider.name, run_id, self.jobdir)
        job_id = settings.get(JOB_ID) or run_id
        inputs = getattr(spider, "run_inputs", None)  # a project's own spider may have none
        self.context = RunContext(
            crawler=self.crawler,
            spider=spider,
            run_id=run_id,
            plugins=self.plugins,
            job_id=job_id,
            inputs=dict(inputs()) if inputs is not None else {},
            joined=settings.get("SPREAD_ROLE") == "joiner",
        )
        self.crawler.stats.set_value(statkeys.RUN_ID, run_id)
        spider.run_context = self.context  # the spider reads done pages from it (resume)
        self.plugins.hook.trawl_open(context=self.context)
        try:
            self._open_store(self.context)
        except Exception as exc:  # noqa: BLE001 - any store failure ends the run in one line
            self._fail_store("cannot open the store", exc)

    def _open_store(self, context: RunContext) -> None:
        uri = (context.settings.get("STORE_URI") or "").strip()
        if not uri:
            return  # storing switched off: exports only
        store = create_store(uri, context, self.plugins)
        if self.jobdir and not isinstance(store, ResumableStore):
            raise TrawlUsageError(
                f"the store {type(store).__name__} keeps no page ledger: JOBDIR cannot resume"
            )
        store.open()
        self.store = context.store = store
        if self.jobdir:
            # Pages this run stored before it was stopped: a resumed crawl skips them.
            context.done_pages = store.done_pages(context.source)  # type: ignore[attr-defined]

    async def close_spider(self, spider: Spider | None = None) -> None:
        StoreBacklog.release(self.crawler.engine)
        context = self.context
        if context is None:
            return
        store = self.store
        if isinstance(store, AsyncWritingStore) and not self.store_failed:
            # Awaited, not blocked on: the other crawlers of `crawl all` go on meanwhile.
            with contextlib.suppress(Exception):  # a failed write was said by its item; close says the rest
                await store.written()
        # Scrapy's finish_reason is set only after the pipelines close: every run read "finished".
        reason = close_reason(self.crawler) or "finished"
        if self.jobdir:
            finished = run_outcome(self.crawler.stats.get_stats(), reason) == COMPLETE
            record_end(self.jobdir, context.source, context.run_id, reason, finished)
        try:
            if self.store is not None:
                self.store.close(reason)
        except Exception as exc:  # noqa: BLE001 - a full disk fails the run's last UPDATE too
            if not self.store_failed:
                self._fail_store("cannot record the end of the run", exc)
        finally:
            self.store = context.store = None
            self.plugins.hook.trawl_close(context=context, reason=reason)
            self.context = None

    async def process_item(self, item: object, spider: Spider | None = None) -> object:
        if not isinstance(item, Batch):
            return item
        if self.coalescer is not None and self.coalescer.holds(item):
            return await self.coalescer.add(item)
        return await self._run(item)

    async def _run(self, item: Batch) -> Batch:
        """One batch (perhaps several pages coalesced) through the hooks and into the store."""
        context = self.context
        if context is None and self.store_failed:
            # The store failed and the pipeline closed while this batch was on its way (a crates
            # batch handed over from the dump's reading): nothing is written after a store error.
            raise DropItem("the store failed earlier in this run", log_level="DEBUG")
        assert context is not None
        hook = self.plugins.hook
        hook.trawl_normalize_batch(batch=item, context=context)
        keep = _combine(hook.trawl_filter_batch(batch=item, context=context))
        if keep is not None:
            item.select(keep)
        deduped: Batch | None = hook.trawl_dedup_batch(batch=item, context=context)
        batch = item if deduped is None else deduped
        if self.store_failed:
            raise DropItem("the store failed earlier in this run", log_level="DEBUG")
        try:
            new = await self._store(batch)
        except PartlyStored:
            raise  # the coalescer writes its pages one by one
        except Exception as exc:  # noqa: BLE001
            if not self.store_failed:  # a batch queued behind the failed one: the crawl is stopping already
                self._fail_store(f"cannot write {len(batch)} records of {item.source} {item.page}", exc)
            raise DropItem("not stored", log_level="DEBUG") from None
        hook.trawl_batch_stored(batch=batch, new=new, context=context)
        # By kind, whatever the kind: the finish line of a source that is not about URLs says them.
        self.crawler.stats.inc_value(statkeys.records_of(batch.kind), len(batch))
        return batch

    async def _store(self, batch: Batch) -> int:
        with time_store_write(batch.source):  # trawl_store_write_seconds (trawl.metrics)
            return await self._write(batch)

    async def _write(self, batch: Batch) -> int:
        store = self.store
        if store is None or not keeps(store, batch):
            return 0
        if isinstance(store, AsyncWritingStore):
            # The reactor goes on with other pages meanwhile, within the backlog's bound.
            rows, size = len(batch), batch.frame.estimated_size()
            StoreBacklog.add(rows, self.crawler.engine, self.backlog_rows, size)
            try:
                return await store.write_batch_async(batch)
            finally:
                StoreBacklog.done(rows, self.backlog_rows, size)
        return store.write_batch(batch)

    def _fail_store(self, what: str, exc: Exception) -> None:
        """One error line, then stop: pages fetched past this point would be lost.

        Everything committed before stays; a rerun fetches the rest.
        """
        self.store_failed = True
        stats = self.crawler.stats
        stats.inc_value(statkeys.ERRORS)
        stats.inc_value(statkeys.ERRORS_STORE)
        cause = str(exc) or type(exc).__name__
        # A crawl already closing for a store error said so (a crates batch's file on the same full
        # disk, trawl.sources.crates.dumpread): one cause, one ERROR line.
        said = cause in PluginPipeline._failures_said or stats.get_value(statkeys.CLOSE_REASON) == STORE_ERROR
        PluginPipeline._failures_said.add(cause)
        # ``crawl all`` writes one store from every source: one ERROR line for one cause (a full
        # disk, a file that is not a database), not one a source (7 lines before).
        logger.log(
            logging.INFO if said else logging.ERROR,
            "store: %s: %s; stopping the crawl (rerun to complete it)",
            what,
            "the same failure as above" if said else cause,
            extra={"spider": self.crawler.spider},  # this source's error, not its neighbours'
        )
        engine = self.crawler.engine
        if engine is not None and engine.spider is not None:
            deferred_from_coro(engine.close_spider_async(reason=STORE_ERROR))


def _combine(masks: list[Mask | None]) -> Mask | None:
    """AND the keep-masks of every filter; ``None`` when no filter dropped anything."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    if any(isinstance(m, pl.Expr) for m in present):
        present = [m if isinstance(m, pl.Expr) else pl.lit(m) for m in present]
    return reduce(lambda a, b: a & b, present)
