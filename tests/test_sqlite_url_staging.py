"""A URL batch staged as Arrow columns through the bulk scratch file, or bound row by row: the same store.

A file store stages a URL batch through ADBC (``trawl/stores/sqlite/bulk.py``) and
merges it from the attached scratch file; without the driver (or for ``:memory:``)
the rows are bound with ``executemany``. Both must leave the same ``urls`` rows,
mark the same records new and repeated, refuse a URL twice in one batch, and leave
no scratch file behind.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from scrapy.settings import Settings

from trawl.errors import StoreError
from trawl.sources.cdx.wayback import WaybackSpider
from trawl.stores.sqlite import SqliteStore, bulk

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
        marks.append(
            sorted(zip(batch.column("url"), batch.column("new"), batch.column("repeat"), strict=True))
        )
    con = sqlite3.connect(db)
    try:
        stored = con.execute(
            "SELECT url, host, sources, first_seen, last_seen, captures, statuses, mimes, source_counts,"
            " first_run, last_run FROM urls ORDER BY url"
        ).fetchall()
    finally:
        con.close()
    return stored, marks


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
