"""The crates load's ingest process reads ahead, lets the store's own writer go first, and
the store's writer does not queue for the lock for the batches it wrote.

A batch at a time, the loading process waited on a full pipe whenever the ingest
process waited for the write lock; and the ingest process, committing batch after
batch, kept the store's own writer (the page ledger) waiting for seconds.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from tests.helpers.sqlite_store import open_store
from trawl.records.kinds import staged
from trawl.sources.crates.records import DumpSnapshotBatch, VersionBatch
from trawl.stores.sqlite import SqliteStore
from trawl.stores.sqlite.ingest import Ingester
from trawl.stores.sqlite.ingestturn import Turn, TurnWaiter
from trawl.stores.sqlite.prestage import prestaged_type

#: Rows a batch: about 400 KB of Arrow IPC, six times a pipe's 64 KiB buffer.
ROWS = 8_000


@dataclass
class Load:
    """A store with a load's ingester, and another connection to the file (another writer)."""

    store: SqliteStore
    ingester: Ingester
    other: sqlite3.Connection


@pytest.fixture
def load(tmp_path: Path) -> Iterator[Load]:
    path = tmp_path / "crates.db"
    store = open_store(path, "r1", source="crates")
    ingester = Ingester.for_store(store)
    assert ingester is not None
    other = sqlite3.connect(path, isolation_level=None, timeout=60)
    try:
        yield Load(store, ingester, other)
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()
        ingester.discard()
        store.close("finished")


def _frame(batch_type: type, given: dict) -> pl.DataFrame:
    """``given`` columns, the rest of the kind's schema null."""
    frame = pl.DataFrame(given)
    return frame.select(
        *(pl.col(c) if c in given else pl.lit(None, t).alias(c) for c, t in batch_type.SCHEMA.items())
    )


def _versions(first: int) -> pl.DataFrame:
    ids = pl.int_range(first, first + ROWS, eager=True)
    nums = ids.cast(pl.String) + ".0.0-some-longer-version-text"
    return _frame(VersionBatch, {"id": ids, "crate_id": ids // 10, "num": nums})


def _waiting(turn: Turn, gone: threading.Event) -> threading.Thread:
    waiting = threading.Thread(target=TurnWaiter(turn.fd).wait, args=(gone,))
    waiting.start()
    return waiting


def test_batches_are_taken_while_the_ingest_process_waits_for_the_lock(load: Load) -> None:
    load.ingester.put(VersionBatch, _versions(0))  # the staged table made, the process started
    load.other.execute("BEGIN IMMEDIATE")  # another writer holds the lock: the ingest process waits
    handed = threading.Event()

    def hand_over() -> None:
        for n in range(1, 6):
            load.ingester.put(VersionBatch, _versions(n * ROWS))
        handed.set()

    threading.Thread(target=hand_over, daemon=True).start()
    # Read ahead, the five batches (2 MB) are taken although none can be written yet.
    assert handed.wait(30), "the loading process was held up by the ingest process's wait"
    load.other.execute("COMMIT")
    load.ingester.finish()
    assert load.other.execute("SELECT count(*) FROM version_records_next").fetchone() == (6 * ROWS,)


def test_the_ingest_process_starts_no_transaction_while_the_stores_writer_wants_the_lock() -> None:
    turn = Turn.made()
    assert turn is not None
    try:
        with turn.taken():
            waiting = _waiting(turn, threading.Event())
            waiting.join(0.3)
            assert waiting.is_alive(), "the ingest process went on while the store's writer wanted the lock"
        waiting.join(10)
        assert not waiting.is_alive()
    finally:
        turn.close()


def test_a_flag_left_up_by_a_loader_that_is_gone_holds_nothing() -> None:
    turn = Turn.made()
    assert turn is not None
    gone = threading.Event()
    try:
        with turn.taken():
            waiting = _waiting(turn, gone)
            gone.set()  # the loading process's pipe ended
            waiting.join(10)
            assert not waiting.is_alive()
    finally:
        turn.close()


def test_the_stores_writer_goes_first_only_while_an_ingest_process_runs(load: Load) -> None:
    assert load.store.turn is None
    load.ingester.put(VersionBatch, _versions(0))
    assert load.store.turn is not None
    load.ingester.finish()
    assert load.store.turn is None


def test_an_ingested_batch_takes_no_lock_and_its_pages_are_claimed_with_the_switch(load: Load) -> None:
    written, rows = load.ingester.put(VersionBatch, _versions(0))
    batch = prestaged_type(staged(VersionBatch))("crates", rows, page="s/versions#1", page_rows=ROWS)
    batch.stage_file = written  # type: ignore[attr-defined]
    load.other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    stored = threading.Event()
    threading.Thread(target=lambda: (load.store.write_batch(batch), stored.set()), daemon=True).start()
    assert stored.wait(30), "the store's writer queued for the lock for a batch it does not write"
    load.other.execute("COMMIT")
    load.ingester.finish()
    assert load.other.execute("SELECT page FROM pages").fetchall() == []  # no snapshot yet
    snapshot = _frame(DumpSnapshotBatch, {"snapshot": ["s"], "tables": [1], "rows": [ROWS]})
    load.store.write_batch(DumpSnapshotBatch("crates", snapshot, page="s/end", page_rows=1))
    pages = load.other.execute("SELECT page, rows FROM pages ORDER BY page").fetchall()
    assert pages == [("s/end", 1), ("s/versions#1", ROWS)]
    assert load.other.execute("SELECT count(*) FROM version_records").fetchone() == (ROWS,)
