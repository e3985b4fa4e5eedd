"""The SQLite store's URL batches: queued together for the writer thread, merged there, finished after.

Mixed into :class:`~trawl.stores.sqlite.store.SqliteStore` (before ``WritesOnThread``, whose
``write_batch``/``write_batch_async`` serve the declared kinds). A URL batch's staging rows are
made on a pool thread before it is queued and its frame as stored after the commit
(:mod:`.urlgroup`): the writer thread, the four-source crawl's critical path, does SQLite's
work only. Inside the group's transaction each batch has a savepoint of its own
(:meth:`UrlWrites._write_url_batch`) and is merged set-wise (:mod:`.merge`).
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

    from trawl.records.batches import Batch


class UrlWrites:
    """``write_batch``/``write_batch_async`` of URL batches, and their merge on the writer thread."""

    _writer: Any
    ledger: Any
    run: int
    _stage: str
    _stage_loaded: str
    _upsert: str

    async def write_batch_async(self, batch: Batch) -> int:
        """A URL batch written with those queued behind it, in one transaction (:mod:`.urlgroup`)."""
        from trawl.stores.sqlite.urlgroup import (
            grouped,
            merged_off_reactor,
            staging_rows_off_reactor,
            write_url_group,
        )

        if not grouped(batch):
            return await super().write_batch_async(batch)
        if not batch.frame.height and not batch.pages:
            return 0
        assert self._writer is not None, "store not open"
        staged = await staging_rows_off_reactor(batch.frame)
        new, skipped, known = await self._writer.submit_grouped(write_url_group, (self, batch, staged))
        if known is not None:
            batch.frame = await merged_off_reactor(batch.frame, known, self.run)
        return self._count(new, skipped)

    def write_batch(self, batch: Batch) -> int:
        from trawl.stores.sqlite.urlgroup import grouped, write_url_group

        if not grouped(batch):
            return super().write_batch(batch)
        if not batch.frame.height and not batch.pages:
            return 0
        assert self._writer is not None, "store not open"
        return self._finish_url_batch(batch, *self._writer.call_grouped(write_url_group, (self, batch, None)))

    def _finish_url_batch(self, batch: Batch, new: int, skipped: int, known: pl.DataFrame | None) -> int:
        """After the commit, on the caller's thread: the batch's frame as stored; its new records."""
        from trawl.stores.sqlite import merge

        if known is not None:
            batch.frame = merge.with_merged(batch.frame, known, self.run)
        return self._count(new, skipped)

    def _write_url_batch(
        self, con: sqlite3.Connection, batch: Batch, rows: tuple[int, int] | None
    ) -> tuple[pl.DataFrame | None, int, int]:
        """Inside the group's transaction: one URL batch under a savepoint of its own; (the merged
        provenance of its URLs stored before, :meth:`_write_urls`; new records; pages stored
        before). ``rows``: its rowids in the bulk scratch table."""
        now = self._next_batch_time()
        con.execute("SAVEPOINT url_batch")
        undo = ("ROLLBACK TO url_batch", "RELEASE url_batch")
        skipped = self.ledger.claim_or_undo(con, self.run, batch, now, *undo)
        if skipped:
            return None, 0, skipped
        known, new = self._write_urls(con, batch.frame, now, rows)
        con.execute("RELEASE url_batch")
        return known, new, 0

    def _write_urls(
        self, con: sqlite3.Connection, frame: pl.DataFrame, now: float, rows: tuple[int, int] | None = None
    ) -> tuple[pl.DataFrame | None, int]:
        """URL rows inserted or merged (:mod:`.merge`); the merged provenance of the URLs stored
        before (None: no rows), and how many were new. The batch's frame as stored is made from it
        after the commit, off this thread (:meth:`write_batch_async`). ``rows``: its staging rows are those
        rowids of the bulk scratch table already (:mod:`.bulk`)."""
        from trawl.stores.sqlite import merge

        if not frame.height:
            return None, 0
        if rows is not None:
            merge.stage(con, self._stage_loaded, frame, rows)
        else:
            merge.stage(con, self._stage, frame)
        merge.upsert(con, self._upsert, frame.height, now)
        known = self._read_known(con)
        return known, frame.height - known.height

    def _read_known(self, con: sqlite3.Connection) -> pl.DataFrame:
        """The merged provenance of the URLs this batch did not bring first (inside the transaction)."""
        from trawl.stores.sqlite import merge

        return merge.read_known(con)
