"""Reading the db-dump's stream into staged batches, then the row that switches them in.

What :class:`~trawl.sources.crates.spider.CratesSpider` does between the dump's
first byte and its switch, kept apart from the spider's modes, settings and
close handling. A mixin: it reads the spider's own attributes (``dump_url``,
``batch_rows``, ``parquet_dir``, ``items_pending``...) and its helpers
(``record_error``, ``bridged``, ``wait``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet import threads

from trawl.common.counts import counted
from trawl.common.stopping import is_stopping
from trawl.errors import StoreError
from trawl.pipeline.backlog import StoreBacklog
from trawl.pipeline.itempipeline import STORE_ERROR
from trawl.sources.crates.dump import DumpInfo, NotAnArchive, NotNewer, iso, read_dump, tar_members
from trawl.sources.crates.parquet import ParquetError
from trawl.sources.crates.prefetch import Stopped, StopSignal
from trawl.sources.crates.records import DumpSnapshotBatch
from trawl.sources.crates.snapshot import DumpLoad, newest_held
from trawl.sources.crates.stream import BodyStream
from trawl.sources.crates.tables import DumpError
from trawl.sources.crates.zipstream import zip_members
from trawl.stores.sqlite.ingest import Ingester


class DumpReading:
    """The dump's reading, for :class:`~trawl.sources.crates.spider.CratesSpider`."""

    async def read_stream(self, stream: BodyStream) -> AsyncIterator[Any]:
        """The dump's batches as they are read, then the row that makes them the live snapshot.

        A stop (Ctrl-C, SIGTERM, a store error) ends it wherever it is: waiting for the
        store, for the reading thread, or handed a batch to the engine that will never
        ask for the next (:meth:`_watch_close` stops the reading then). Either way the
        reading threads end, the stream is closed, the switch is never written, and
        the run says so in one WARNING line.
        """
        where = self.describe_url(self.dump_url)
        context = getattr(self, "run_context", None)
        store = context.store if context is not None else None
        newer_than = newest_held(store, self.parquet_dir)
        info = DumpInfo()
        zipped = self.expected == "a zip"
        stop = StopSignal()
        batches = read_dump(
            stream, info, self.batch_rows, newer_than=newer_than,
            members=zip_members if zipped else tar_members, expected=self.expected, stop=stop,
            max_bytes=self.dump_max_bytes,
        )  # fmt: skip
        lock = getattr(self, "_load_lock", None)
        stager = Ingester.for_store(store, lock.fileno() if lock is not None else None)
        small = int(self.crawler.settings.getint("BATCH_COALESCE_ROWS"))
        load = DumpLoad(batches, info, self.parquet_dir, stop, stager, small)
        self._reading = (load, stream)
        ended = False  # the load ended by itself (read and switched, skipped, failed): nothing to say
        try:
            while True:
                if not await self._store_caught_up():  # the crawl stops (Ctrl-C, a store error)
                    return
                try:
                    read = await maybe_deferred_to_future(threads.deferToThread(load.step))
                except Stopped:
                    return
                except NotNewer:
                    assert newer_than is not None
                    self.logger.info(
                        "%s: skipped the db-dump %s (exported %s): not newer than the one held (exported %s)",
                        self.name, info.snapshot, iso(info.time or newer_than), iso(newer_than),
                    )  # fmt: skip
                    ended = True
                    return
                except DumpError as exc:
                    ended = True
                    if isinstance(exc, NotAnArchive) and exc.html:
                        self.record_error("html", "the db-dump %s: %s", where, exc)
                    elif not stream.broken:  # a failed transfer is the errback's to say
                        self.record_error("malformed", "the db-dump %s: %s", where, exc)
                    else:
                        ended = not is_stopping(self.crawler)
                    return
                except ParquetError as exc:
                    ended = True
                    self.record_error("parquet", "%s", exc)
                    return
                except StoreError as exc:  # a batch's file could not be written (a full disk)
                    ended = True
                    if not is_stopping(self.crawler):  # else the store's own line said it already
                        self.record_error("store", "%s; stopping the crawl (rerun to complete it)", exc)
                        # The pipeline's writes of batches already handed over fail next: closing
                        # as a store error makes them say nothing more (trawl.pipeline.itempipeline).
                        engine = self.crawler.engine
                        deferred_from_coro(engine.close_spider_async(reason=STORE_ERROR))
                    return
                if read is None:
                    break
                for item in self.bridged(load.staged_batch(self.name, read)):
                    self.items_pending += 1
                    yield item
            missing = info.missing()
            if missing:  # no snapshot of the registry: the one held stays live
                ended = True
                self.record_error(
                    "malformed", "the db-dump %s has no %s: not loaded, the snapshot held stays live",
                    where, " and no ".join(missing),
                )  # fmt: skip
                return
            stream.close()
            self._reading_all = True
            if not await self._store_caught_up(everything=True):
                return
            try:
                await maybe_deferred_to_future(threads.deferToThread(load.finish))
            except Stopped:
                return
            except ParquetError as exc:
                ended = True
                self.record_error("parquet", "%s", exc)
                return
            except StoreError as exc:  # a batch's rows could not be written (a full disk)
                ended = True
                if not is_stopping(self.crawler):
                    self.record_error("store", "%s; stopping the crawl (rerun to complete it)", exc)
                    deferred_from_coro(self.crawler.engine.close_spider_async(reason=STORE_ERROR))
                return
            ended = True
            yield DumpSnapshotBatch(self.name, load.dump_row(), page=f"{info.snapshot}/switch", page_rows=1)
        finally:
            self._reading = None
            if not ended:
                self._say_stopped()
            stream.close()  # what still arrives is dropped, and the download ends (_stop_streaming)
            load.abandon()  # the reading threads end; a load that did not end: its Parquet files go
        self.logger.info(
            "%s: read the db-dump %s (%s, %s, exported %s)",
            self.name,
            info.snapshot,
            counted(info.tables, "table"),
            counted(load.rows, "row"),
            info.timestamp or "at an unknown time",
        )

    #: The load being read (:meth:`read_stream`): what a stop ends.
    _reading: tuple[DumpLoad, BodyStream] | None = None
    #: Every batch of the dump was read: a stop now comes before the switch.
    _reading_all = False
    _stop_said = False

    def _say_stopped(self) -> None:
        """One WARNING line for a load the crawl stopped, however it learnt of the stop."""
        if self._stop_said:
            return
        self._stop_said = True
        if self._reading_all:
            self.logger.warning(
                "%s: stopped before the db-dump was switched to; it is read again next run", self.name
            )
        else:
            self.logger.warning("%s: stopped while reading the db-dump; it is read again next run", self.name)

    async def _store_caught_up(self, everything: bool = False) -> bool:
        """Wait while the store is more than ``STORE_BACKLOG_ROWS`` rows behind, or more than
        :attr:`MAX_ITEMS_PENDING` batches are in the pipeline; False if the crawl stops.

        :class:`~trawl.pipeline.backlog.StoreBacklog` pauses the engine, which
        holds back requests, not a callback's items: without this wait the reader
        ran ahead of the SQLite writer (840,000 rows read in 4 s, written in 15 s)
        and a real dump's tables would pile up in memory. 50 ms steps: a fraction of
        the ~1 s of writing the bound stands for.
        """
        limit = int(self.crawler.settings.getint("STORE_BACKLOG_ROWS"))
        if everything:
            # Every batch written before the switch: small ones wait up to BATCH_COALESCE_SECONDS
            # for others before they count in the backlog.
            limit = 0
            if not await self.wait(float(self.crawler.settings.getfloat("BATCH_COALESCE_SECONDS")) + 0.05):
                return False
        while (
            (limit or everything) and StoreBacklog.rows > limit or self.items_pending > self.MAX_ITEMS_PENDING
        ):
            if not await self.wait(0.05):
                return False
        return not is_stopping(self.crawler)
