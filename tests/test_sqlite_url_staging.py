"""A URL batch staged as Arrow columns through the bulk scratch file, or bound row by row: the same store.

A file store stages a URL batch through ADBC (``trawl/stores/sqlite/bulk.py``) and
merges it from the attached scratch file; without the driver (or for ``:memory:``)
the rows are bound with ``executemany``. Both must leave the same ``urls`` rows,
mark the same records new and repeated, refuse a URL twice in one batch, and leave
no scratch file behind.
"""

from __future__ import annotations

import sqlite3
import time
from concurrent.futures import Future
from pathlib import Path

import pytest
from scrapy.settings import Settings

from trawl.errors import StoreError
from trawl.sources.cdx.wayback import WaybackSpider
from trawl.stores.sqlite import SqliteStore, bulk
from trawl.stores.sqlite.urlgroup import write_url_group
from trawl.stores.writer import Queued

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.helpers.sqlite_store import make_batch, open_store
except ImportError:
    from helpers.sqlite_store import make_batch, open_store  # type: ignore[no-redef]

A, B, C = "https://example.com/a", "https://example.com/b?x=ü,1", "http://example.com/c"

PAGES = [
    ("wayback", [(C, "2010", "2012", 2, "200", "text/html"), (A, "2011", "2011", 1, "404,200", "")]),
    ("wayback", [(A, "2009", "2013", 3, "301", "text/plain"), (B, "2013", "2013", 1, "", "")]),
    ("otx", [(B, "2008", "2009", 4, "", "x/y"), (A, "", "", 1, "", "")]),
]


def write_all(db: Path) -> tuple[list[tuple], list[list[tuple]]]:
    """Every page written (one run per source); the stored rows and each batch's (url, new, repeat)."""
    marks = []
    for run, (source, rows) in enumerate(PAGES):
        store = open_store(db, f"run-{run}", source=source)
        batch = make_batch(rows, source=source)
        store.write_batch(batch)
        store.close("finished")
        marks.append(marks_of(batch))
    return stored_rows(db), marks


def marks_of(batch: object) -> list[tuple]:
    return sorted(zip(batch.column("url"), batch.column("new"), batch.column("repeat"), strict=True))


def stored_rows(db: Path) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(
            "SELECT url, host, sources, first_seen, last_seen, captures, statuses, mimes, source_counts,"
            " first_run, last_run FROM urls ORDER BY url"
        ).fetchall()
    finally:
        con.close()


def write_group(items: list[tuple[SqliteStore, object]]) -> list[Future]:
    """The batches written as the writer thread writes those queued together: one transaction; then
    each batch's frame as stored, as the store makes it after the commit. Each future: (new
    records, pages stored before), or the batch's error."""
    queued = [Queued((*item, None), 0) for item in items]  # no staging rows made before: made here
    items[0][0].on_writer(lambda: write_url_group(queued))
    results: list[Future] = []
    for (store, batch), done in zip(items, queued, strict=True):
        result: Future = Future()
        if done.future.exception() is not None:
            result.set_exception(done.future.exception())
        else:
            new, skipped, known = done.future.result()
            store._finish_url_batch(batch, new, skipped, known)
            result.set_result((new, skipped))
        results.append(result)
    return results


def test_arrow_staging_stores_what_row_staging_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert bulk.available(str(tmp_path / "x.db")), "the ADBC SQLite driver is a dependency"
    put_calls = []
    real_put = bulk.BulkStage.put
    monkeypatch.setattr(
        bulk.BulkStage,
        "put",
        lambda self, con, frame: put_calls.append(frame.height) or real_put(self, con, frame),
    )
    through_arrow = write_all(tmp_path / "arrow.db")
    assert put_calls == [2, 2, 2]  # every URL batch went through the scratch file
    monkeypatch.setattr(bulk, "available", lambda path: False)
    by_rows = write_all(tmp_path / "rows.db")
    assert through_arrow == by_rows
    assert [row[0] for row in through_arrow[0]] == [C, A, B]
    assert list(tmp_path.glob("*-load-*")) == []  # each store's scratch file removed when it closed


def test_a_url_twice_in_one_batch_is_refused_through_arrow(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s.db", "run-1")
    twice = make_batch([(A, "2010", "2010", 1, "", ""), (A, "2011", "2011", 1, "", "")])
    with pytest.raises(StoreError, match="1 of 2 URLs could not be stored"):
        store.write_batch(twice)
    store.close("failed")
    con = sqlite3.connect(tmp_path / "s.db")
    try:
        assert con.execute("SELECT count(*) FROM urls").fetchone() == (0,)
    finally:
        con.close()


def test_wayback_writes_in_big_batches_unless_told_otherwise() -> None:
    settings = Settings({"BATCH_COALESCE_ROWS": 5000}, priority="project")
    WaybackSpider.update_settings(settings)
    assert settings.getint("BATCH_COALESCE_ROWS") == 50_000
    given = Settings({"BATCH_COALESCE_ROWS": 5000}, priority="project")
    given.set("BATCH_COALESCE_ROWS", 0, priority="cmdline")  # -s BATCH_COALESCE_ROWS=0
    WaybackSpider.update_settings(given)
    assert given.getint("BATCH_COALESCE_ROWS") == 0


def test_the_urls_alone_of_runs_are_those_of_their_records(tmp_path: Path) -> None:
    """``-o``'s closing line reads the URLs alone, in chunks: the same as the records' URLs."""
    db = tmp_path / "s.db"
    write_all(db)
    uri = f"sqlite:///{db}"
    for runs in (["run-0"], ["run-2"], ["run-0", "run-1"], ["nope"], []):
        records = {url for b in SqliteStore.read_runs(uri, runs, size=2) for url in b.column("url")}
        for size in (1, 2, 50_000):
            chunks = [list(s) for s in SqliteStore.read_run_urls(uri, runs, size=size)]
            assert sorted(url for chunk in chunks for url in chunk) == sorted(records), (runs, size)
            assert all(len(chunk) <= size for chunk in chunks)
    assert {url for s in SqliteStore.read_run_urls(uri, ["run-2"]) for url in s} == {A, B}


def test_batches_queued_together_are_stored_as_one_at_a_time(tmp_path: Path) -> None:
    """The writer thread writes the URL batches queued behind one (of all the file's stores) in one
    transaction: the rows and the new/repeat marks are those of one transaction a batch."""
    alone = write_all(tmp_path / "alone.db")
    db = tmp_path / "together.db"
    stores = [open_store(db, f"run-{run}", source=source) for run, (source, _) in enumerate(PAGES)]
    batches = [make_batch(rows, source=source) for source, rows in PAGES]
    queued = write_group(list(zip(stores, batches, strict=True)))
    assert [q.result() for q in queued] == [(2, 0), (1, 0), (0, 0)]
    for store in stores:
        store.close("finished")
    assert (stored_rows(db), [marks_of(b) for b in batches]) == alone


def test_a_batch_of_a_group_skipped_or_failed_alone(tmp_path: Path) -> None:
    """In a group, a batch whose page was stored before is skipped, and a failed one rolled back,
    alone: the batches before them are stored; the failed store's later batches are refused, the
    other store's stored."""
    db = tmp_path / "s.db"
    wayback, otx = open_store(db, "run-1", source="wayback"), open_store(db, "run-2", source="otx")

    def paged(rows: list[tuple], source: str, page: str) -> object:
        batch = make_batch(rows, source=source)
        batch.page, batch.page_rows = page, len(rows)
        return batch

    first = paged([(A, "2010", "2010", 1, "", "")], "wayback", "p1")
    again = paged([(A, "2010", "2010", 1, "", "")], "wayback", "p1")
    twice = paged([(B, "2010", "2010", 1, "", ""), (B, "2011", "2011", 1, "", "")], "wayback", "p2")
    after = paged([(C, "2010", "2010", 1, "", "")], "wayback", "p3")
    other = paged([(C, "2012", "2012", 1, "", "")], "otx", "p1")
    queued = write_group(
        [(wayback, first), (wayback, again), (wayback, twice), (wayback, after), (otx, other)]
    )
    assert queued[0].result() == (1, 0)
    assert queued[1].result() == (0, 1)  # its page claimed by the batch before it
    assert again.column("repeat") == [True]
    with pytest.raises(StoreError, match="1 of 2 URLs could not be stored"):
        queued[2].result()
    with pytest.raises(StoreError, match="an earlier batch failed"):
        queued[3].result()
    assert queued[4].result() == (1, 0)
    assert wayback.done_pages("wayback") == {"p1": 1}
    assert otx.done_pages("otx") == {"p1": 1}
    wayback.close("store_error")
    otx.close("finished")
    assert [(row[0], row[2]) for row in stored_rows(db)] == [(C, "otx"), (A, "wayback")]


def test_the_wal_is_copied_into_the_file_beside_the_writer(tmp_path: Path) -> None:
    """A file store's checkpoints run on a thread of their own after each commit, not only when the
    WAL passes SQLite's 1,000 pages (nor only at the end): the file grows while the store is open."""
    db = tmp_path / "s.db"
    store = open_store(db, "run-1")
    empty = db.stat().st_size
    rows = [(f"https://example.com/{n:05d}", "2010", "2010", 1, "200", "text/html") for n in range(3000)]
    assert store.write_batch(make_batch(rows)) == 3000
    assert Path(f"{db}-wal").stat().st_size < 1000 * 4096  # below SQLite's own autocheckpoint
    deadline = time.monotonic() + 10
    while db.stat().st_size == empty and time.monotonic() < deadline:
        time.sleep(0.01)  # polling the file for the checkpointer's copy
    assert db.stat().st_size > empty + 100 * 4096
    store.close("finished")
    assert len(stored_rows(db)) == 3000
    assert not Path(f"{db}-wal").exists()  # the last connection copied the rest and removed it
