"""One db-dump load as one snapshot: is it newer than what is held, its batches, its end.

Stores and the Parquet layer switch to a dump all at once (:mod:`trawl.records.kinds`:
staged kinds and ``SWITCHES``; :mod:`.parquet`: partitions renamed into place):
the dump's batches go out as the :func:`~trawl.records.kinds.staged` twins of
their kinds, and one :class:`~.records.DumpSnapshotBatch` row, yielded once every
batch is written, makes them the live records. A dump made at or before the
newest one every enabled layer holds is not read (``NotNewer``).

:meth:`DumpLoad.step` runs on the reading thread (``deferToThread``): it reads
the next batch and writes it to Parquet there, off the reactor: a whole block
(8 MiB of CSV) a file, not a batch a file.

:meth:`DumpLoad.abandon` may be called on the reactor while a step runs (the
crawl stops: Ctrl-C, a store error): it sets the load's
:class:`~.prefetch.StopSignal`, which wakes a step waiting for the archive
(:class:`~.prefetch.Stopped`), and the step that was running discards the
Parquet files when it ends, not the reactor under its feet.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from trawl.records.batches import Batch
from trawl.records.kinds import staged
from trawl.sources.crates.dump import DumpBatch, DumpInfo, iso, parse_time
from trawl.sources.crates.parquet import ParquetLayer, newest_dump
from trawl.sources.crates.prefetch import Stopped, StopSignal
from trawl.sources.crates.records import DumpSnapshotBatch
from trawl.stores.sqlite.ingest import Ingester
from trawl.stores.sqlite.prestage import prestaged_type


def newest_held(store: Any, parquet_dir: Path | None) -> datetime | None:
    """The time of the newest dump every enabled layer holds (None: some layer holds none).

    A store that cannot say (no ``newest``) holds none as far as this goes: the
    dump is loaded. With no layer at all (no store, no Parquet), nothing is skipped.
    """
    times: list[datetime | None] = []
    if store is not None:
        newest = getattr(store, "newest", None)
        times.append(parse_time(newest(DumpSnapshotBatch, "timestamp") or "") if newest else None)
    if parquet_dir is not None:
        times.append(parse_time(newest_dump(parquet_dir) or ""))
    if not times or any(t is None for t in times):
        return None
    return min(t for t in times if t is not None)


class DumpLoad:
    """The batches of one dump, written to Parquet as they are read, and the row that ends it."""

    def __init__(
        self,
        batches: Iterator[DumpBatch],
        info: DumpInfo,
        parquet_dir: Path | None,
        stop: StopSignal | None = None,
        stager: Ingester | None = None,
        stage_min_rows: int = 0,
    ) -> None:
        self.batches = batches
        #: Hands each batch's rows to the SQLite store's ingest process (None: the store does it all).
        self.stager = stager
        #: A smaller batch waits to be coalesced with others in the pipeline: it is not staged here.
        self.stage_min_rows = stage_min_rows
        self.info = info
        self.parquet_dir = parquet_dir
        self.parquet: ParquetLayer | None = None
        self.rows = 0
        #: Set by :meth:`abandon`; ``read_dump`` was given the same one.
        self.stop = stop or StopSignal()
        self._lock = threading.Lock()
        self._busy = False
        self._abandoned = False

    def step(self) -> DumpBatch | None:
        """On the reading thread: the next batch (None: the dump's end), in Parquet already;
        :class:`~.prefetch.Stopped` once abandoned."""
        with self._running():
            read = next(self.batches, None)
            if read is None:
                return None
            self.rows += read.frame.height
            if self.parquet_dir is not None and not self.stop.is_set():
                if self.parquet is None:
                    made = self.info.time or datetime.now().astimezone()
                    self.parquet = ParquetLayer(self.parquet_dir, self.info.snapshot, made)
                if read.block is not None:  # a block's first batch: the whole block, one file
                    self.parquet.write(read.table, read.number, read.block)
            if (
                self.stager is not None
                and read.frame.height >= self.stage_min_rows
                and not self.stop.is_set()
            ):
                read.stage_file, read.staged_rows = self.stager.put(read.batch_type, read.frame)
            return read

    @contextmanager
    def _running(self) -> Iterator[None]:
        """A step (or the finish) on the reading thread: refused once abandoned; when abandoned
        meanwhile, this thread removes the leftovers as it ends."""
        with self._lock:
            if self._abandoned:
                raise Stopped("the reading of the db-dump was stopped")
            self._busy = True
        try:
            yield
        finally:
            with self._lock:
                self._busy = False
                cleanup = self._abandoned
            if cleanup:
                self._clean_up()

    def staged_batch(self, source: str, read: DumpBatch) -> Batch:
        """The batch for the pipeline, naming its staged file when it has one (the writer removes it)."""
        kind = staged(read.batch_type)
        if read.stage_file is None or read.staged_rows is None or self.stager is None:
            return kind(source, read.frame, page=read.page, page_rows=read.frame.height)
        rows = read.staged_rows
        batch = prestaged_type(kind)(source, rows, page=read.page, page_rows=read.frame.height)
        batch.stage_file = read.stage_file  # type: ignore[attr-defined]
        self.stager.handed(read.stage_file)
        return batch

    def dump_row(self) -> pl.DataFrame:
        made = self.info.time
        row = {
            "snapshot": self.info.snapshot,
            "timestamp": iso(made) if made else None,
            "crates_io_commit": self.info.commit or None,
            "total_downloads": self.info.total_downloads,
            "tables": self.info.tables,
            "rows": self.rows,
        }
        return pl.DataFrame([row], schema=DumpSnapshotBatch.SCHEMA)

    def finish(self) -> None:
        """On the reading thread: every row in the store's staged tables (``StoreError`` if not), the
        Parquet partitions into place."""
        with self._running():
            if self.stager is not None:
                self.stager.finish()
            if self.parquet is not None:
                self.parquet.commit(self.dump_row())

    def abandon(self) -> None:
        """The load ended (read whole, failed or stopped), on any thread, as often as need be: the
        read-ahead thread stops (:mod:`.prefetch`), a step waiting for it ends, and the Parquet
        files of a load that did not commit go (by the step still running, if one is)."""
        self.stop.set()
        with self._lock:
            self._abandoned = True
            if self._busy:
                return
        self._clean_up()

    def _clean_up(self) -> None:
        close = getattr(self.batches, "close", None)
        if close is not None:
            try:
                close()
            except ValueError:  # still executing: not possible outside a step, but never a crash
                pass
        if self.parquet is not None:
            self.parquet.discard()
        if self.stager is not None:
            self.stager.discard()
