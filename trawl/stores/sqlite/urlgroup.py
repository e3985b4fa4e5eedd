"""URL batches queued for a store file's writer thread, written in one transaction.

A transaction costs the WAL frames of every page its rows touch, and a batch's 2,500-5,000
URLs land all over the URL index: about one 4 KiB page written a row, and copied again by the
next checkpoint (4 sources, 200,000 URLs: 323,000 page writes). Written together the queued
batches share pages and one commit: 300,000 rows in 2,500-row transactions took 6.95 s of CPU
and 18.9 s of wall, in 10,000-row ones 4.33 and 5.0 s (bench_store_write, load 4.6-5.1).

Each batch has a savepoint of its own, so it keeps its single transaction's promises: one whose
pages were stored before, or that fails, is rolled back alone and the batches before it commit;
batches of a store that failed are refused. If the transaction itself is lost (SQLite ends one
on a full disk) or its COMMIT fails, every batch of it fails: none was reported stored.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from trawl.errors import StoreError
from trawl.stores.contract import PartlyStored

if TYPE_CHECKING:
    import polars as pl

    from trawl.records.batches import Batch
    from trawl.stores.writer import Queued

T = TypeVar("T")


def grouped(batch: Batch) -> bool:
    """A URL batch is written with others (:func:`write_url_group`); a declared kind's alone."""
    from trawl.records.batches import UrlBatch
    from trawl.stores.sqlite import prestage

    return isinstance(batch, UrlBatch) and not type(batch).STAGED and prestage.stage_file(batch) is None


async def _on_pool(function: Callable[..., T], *args: object) -> T:
    """``function(*args)`` on the reactor's thread pool, awaited (polars releases the GIL there)."""
    from scrapy.utils.defer import maybe_deferred_to_future
    from twisted.internet.threads import deferToThread

    return await maybe_deferred_to_future(deferToThread(function, *args))


async def staging_rows_off_reactor(frame: pl.DataFrame) -> pl.DataFrame | None:
    """The batch's staging rows (:func:`~.merge.staging_rows`), made on a pool thread before the
    batch is queued: the writer thread is the four-source crawl's critical path (busy 9.2 s of
    10.3, py-spy), and this sort and join was 0.65 s of it."""
    from trawl.stores.sqlite import merge

    return await _on_pool(merge.staging_rows, frame) if frame.height else None


async def merged_off_reactor(frame: pl.DataFrame, known: pl.DataFrame, run: int) -> pl.DataFrame:
    """The batch's frame as stored (:func:`~.merge.with_merged`: the merged provenance of its known
    URLs joined in, ``new`` and ``repeat``), made on a pool thread after the commit: on the writer
    thread it was 0.8 s of the four-source crawl's 9.2 busy seconds (py-spy)."""
    from trawl.stores.sqlite import merge

    return await _on_pool(merge.with_merged, frame, known, run)


def write_url_group(group: list[Queued]) -> None:
    """On the writer thread: the queued URL batches (``(store, batch, staging rows or None)``, of any
    store of the file) in one transaction, each item's future set to (new records, pages stored
    before, the merged provenance of its URLs stored before or None) or its error."""
    import polars as pl

    from trawl.stores.sqlite import merge
    from trawl.stores.sqlite.bulk import BulkStage

    live: list[Queued] = []
    for queued in group:
        store = queued.item[0]
        if store._failed is not None:
            queued.future.set_exception(StoreError(store._refusal()))
        else:
            live.append(queued)
    if not live:
        return
    con, writer = live[0].item[0].connection, live[0].item[0]._writer
    assert con is not None and writer is not None, "store not open"
    rows: list[tuple[int, int] | None] = [None] * len(live)
    done: list[tuple[Queued, pl.DataFrame | None, int, int]] = []
    attached = False
    try:
        if writer.bulk is not None:
            # Before the transaction (the scratch file is attached only outside one, :mod:`.bulk`):
            # the batches' staging rows one after the other, each batch its range of rowids.
            frames, start = [], 1
            for n, queued in enumerate(live):
                frame, staged = queued.item[1].frame, queued.item[2]
                if frame.height:
                    frames.append(merge.staging_rows(frame) if staged is None else staged)
                    rows[n] = (start, start + frame.height - 1)
                    start += frame.height
            if frames:
                writer.bulk.put(con, frames[0] if len(frames) == 1 else pl.concat(frames, rechunk=False))
                attached = True
        con.execute("BEGIN IMMEDIATE")
        for n, queued in enumerate(live):
            store, batch, _ = queued.item
            assert store.connection is con
            if store._failed is not None:  # an earlier batch of this group
                queued.future.set_exception(StoreError(store._refusal()))
                continue
            try:
                known, new, skipped = store._write_url_batch(con, batch, rows[n])
            except PartlyStored as exc:  # rolled back to its savepoint already
                queued.future.set_exception(exc)
                continue
            except BaseException as exc:
                queued.future.set_exception(store._fail(exc))
                if not con.in_transaction:
                    raise  # SQLite ended the transaction: the batches before it are lost too
                con.execute("ROLLBACK TO url_batch")
                con.execute("RELEASE url_batch")
                continue
            done.append((queued, known, new, skipped))
        con.execute("COMMIT")
        writer.committed(con, live[0].item[0].path)
    except BaseException as exc:
        if con.in_transaction:
            try:
                con.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # SQLite rolled back already
        for queued in live:  # those done so far too: their results are set only after the COMMIT
            if not queued.future.done():
                queued.future.set_exception(queued.item[0]._fail(exc))
        return
    finally:
        if attached:
            BulkStage.detach(con)
    for queued, known, new, skipped in done:
        queued.future.set_result((new, skipped, known))
