"""The crates load's ingest process reads ahead, lets the store's own writer go first, and
the store's writer does not queue for the lock for the batches it wrote.

A batch at a time, the loading process waited on a full pipe whenever the ingest
process waited for the write lock; and the ingest process, committing batch after
batch, kept the store's own writer (the page ledger) waiting for seconds.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from types import SimpleNamespace

import polars as pl
from scrapy.settings import Settings

from trawl.pipeline.context import RunContext
from trawl.records.kinds import staged
from trawl.sources.crates.records import DumpSnapshotBatch, VersionBatch
from trawl.stores.sqlite import SqliteStore
from trawl.stores.sqlite.ingest import Ingester
from trawl.stores.sqlite.ingestturn import Turn, TurnWaiter
from trawl.stores.sqlite.prestage import prestaged_type

#: Rows a batch: about 400 KB of Arrow IPC, six times a pipe's 64 KiB buffer.
ROWS = 8_000


def _context() -> RunContext:
    stats = SimpleNamespace(values={}, get_stats=lambda: {}, inc_value=lambda *a, **k: None)
    crawler = SimpleNamespace(settings=Settings({}), stats=stats)
    return RunContext(
        crawler=crawler, spider=SimpleNamespace(name="crates"), run_id="r1", plugins=None, inputs={}
    )  # type: ignore[arg-type]


def _versions(first: int) -> pl.DataFrame:
    ids = pl.int_range(first, first + ROWS, eager=True)
    given = {"id": ids, "crate_id": ids // 10, "num": ids.cast(pl.String) + ".0.0-some-longer-version-text"}
    return pl.DataFrame(given).select(
        *(pl.col(c) if c in given else pl.lit(None, t).alias(c) for c, t in VersionBatch.SCHEMA.items())
    )


def test_batches_are_taken_while_the_ingest_process_waits_for_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "crates.db"
    store = SqliteStore(f"sqlite:///{path}", _context())
    store.open()
    ingester = Ingester.for_store(store)
    assert ingester is not None
    other = sqlite3.connect(path, isolation_level=None, timeout=60)
    try:
        ingester.put(VersionBatch, _versions(0))  # the staged table made, the process started
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock: the ingest process waits
        handed = threading.Event()

        def hand_over() -> None:
            for n in range(1, 6):
                ingester.put(VersionBatch, _versions(n * ROWS))
            handed.set()

        threading.Thread(target=hand_over, daemon=True).start()
        # Read ahead, the five batches (2 MB) are taken although none can be written yet.
        assert handed.wait(30), "the loading process was held up by the ingest process's wait"
        other.execute("COMMIT")
        ingester.finish()
        (count,) = other.execute("SELECT count(*) FROM version_records_next").fetchone()
        assert count == 6 * ROWS
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()
        ingester.discard()
        store.close("finished")


def test_the_ingest_process_starts_no_transaction_while_the_stores_writer_wants_the_lock() -> None:
    turn = Turn.made()
    assert turn is not None
    waiter, gone = TurnWaiter(turn.fd), threading.Event()
    try:
        with turn.taken():
            waiting = threading.Thread(target=waiter.wait, args=(gone,))
            waiting.start()
            waiting.join(0.3)
            assert waiting.is_alive(), "the ingest process went on while the store's writer wanted the lock"
        waiting.join(10)
        assert not waiting.is_alive()
    finally:
        turn.close()


def test_a_flag_left_up_by_a_loader_that_is_gone_holds_nothing() -> None:
    turn = Turn.made()
    assert turn is not None
    waiter, gone = TurnWaiter(turn.fd), threading.Event()
    try:
        with turn.taken():
            waiting = threading.Thread(target=waiter.wait, args=(gone,))
            waiting.start()
            gone.set()  # the loading process's pipe ended
            waiting.join(10)
            assert not waiting.is_alive()
    finally:
        turn.close()


def test_the_stores_writer_goes_first_only_while_an_ingest_process_runs(tmp_path: Path) -> None:
    store = SqliteStore(f"sqlite:///{tmp_path / 'crates.db'}", _context())
    store.open()
    ingester = Ingester.for_store(store)
    assert ingester is not None
    try:
        assert store.turn is None
        ingester.put(VersionBatch, _versions(0))
        assert store.turn is not None
        ingester.finish()
        assert store.turn is None
    finally:
        ingester.discard()
        store.close("finished")


def test_an_ingested_batch_takes_no_lock_and_its_pages_are_claimed_with_the_switch(tmp_path: Path) -> None:
    path = tmp_path / "crates.db"
    store = SqliteStore(f"sqlite:///{path}", _context())
    store.open()
    ingester = Ingester.for_store(store)
    assert ingester is not None
    other = sqlite3.connect(path, isolation_level=None, timeout=60)
    try:
        written, rows = ingester.put(VersionBatch, _versions(0))
        batch = prestaged_type(staged(VersionBatch))("crates", rows, page="s/versions#1", page_rows=ROWS)
        batch.stage_file = written  # type: ignore[attr-defined]
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        stored = threading.Event()
        threading.Thread(target=lambda: (store.write_batch(batch), stored.set()), daemon=True).start()
        assert stored.wait(30), "the store's writer queued for the lock for a batch it does not write"
        other.execute("COMMIT")
        ingester.finish()
        assert other.execute("SELECT page FROM pages").fetchall() == []  # no snapshot yet
        snapshot = pl.DataFrame(
            {"snapshot": ["s"], "timestamp": ["2026-09-01T02:00:03Z"], "tables": [1], "rows": [ROWS]}
        )
        snapshot = snapshot.select(
            *(
                pl.col(c) if c in snapshot.columns else pl.lit(None, t).alias(c)
                for c, t in DumpSnapshotBatch.SCHEMA.items()
            )
        )
        store.write_batch(DumpSnapshotBatch("crates", snapshot, page="s/end", page_rows=1))
        assert other.execute("SELECT page, rows FROM pages ORDER BY page").fetchall() == [
            ("s/end", 1),
            ("s/versions#1", ROWS),
        ]
        assert other.execute("SELECT count(*) FROM version_records").fetchone() == (ROWS,)
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()
        ingester.discard()
        store.close("finished")
