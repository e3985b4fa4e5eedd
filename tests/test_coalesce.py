"""Small pages coalesced into one batch: the same rows, each page in the ledger, fewer transactions."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import assert_no_traceback
from tests.helpers.sqlite_store import make_batch, open_store
from tests.helpers.urlscan import EXTRA, FILTERED, crawl
from tests.servers.urlscan import FakeUrlscanServer
from trawl.records.batches import Batch, CaptureBatch
from trawl.stores.contract import PartlyStored

ROW = ("20200101000000", "20200101000000", 1, "200", "text/html")


def ledger(db: Path) -> list[tuple[str, float]]:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT page, stored_at FROM pages ORDER BY page").fetchall()


@pytest.mark.parametrize("coalesce_rows", [5000, 0])
def test_small_pages_are_stored_together_every_page_in_the_ledger(workdir: Path, coalesce_rows: int) -> None:
    # 130 results, 10 a page: 13 full pages and an empty one; coalesced, they share few write transactions
    with FakeUrlscanServer.from_sample(EXTRA) as srv:
        result = crawl(
            workdir,
            srv,
            "-o",
            "u.txt",
            settings={"URLSCAN_PAGE_SIZE": 10, "BATCH_COALESCE_ROWS": coalesce_rows},
        )
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-2000:]
    assert set(result.lines("u.txt")) == FILTERED
    assert len(result.lines("u.txt")) == len(FILTERED)  # each URL once in the export
    assert set(result.stored()) == FILTERED
    pages = ledger(workdir / "trawl.db")
    assert len(pages) == 13
    writes = len({stored_at for _, stored_at in pages})
    if coalesce_rows:
        # pages arrive one after the other (each names the previous page's last result),
        # well within BATCH_COALESCE_SECONDS of each other on a local server
        assert writes < 13
    else:
        assert writes == 13


def test_held_pages_go_once_nothing_more_can_come(workdir: Path) -> None:
    # Held pages may wait a minute for more of their source; but once the last page came and no
    # request is left, nothing more can come, and the crawl ends without waiting. Pages that
    # come one after the other still share transactions.
    with FakeUrlscanServer.from_sample(EXTRA) as srv:
        result = crawl(workdir, srv, settings={"URLSCAN_PAGE_SIZE": 10, "BATCH_COALESCE_SECONDS": 60})
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-2000:]
    # "finished in 2.1 s": well under the minute the last pages would have waited
    assert re.search(r"urlscan: complete \(finished\) in \d\.\d s", result.stderr), result.stderr[-2000:]
    assert set(result.stored()) == FILTERED
    pages = ledger(workdir / "trawl.db")
    assert len(pages) == 13
    assert len({stored_at for _, stored_at in pages}) < 13


def test_coalesce_keeps_every_page_and_row() -> None:
    batches = [
        CaptureBatch.from_columns("otx", [f"https://example.com/{i}"], page=f"page={i}", page_rows=1)
        for i in range(3)
    ]
    combined = Batch.coalesce(batches)
    assert combined.pages == {"page=0": 1, "page=1": 1, "page=2": 1}
    assert combined.frame.get_column("url").to_list() == [f"https://example.com/{i}" for i in range(3)]
    with pytest.raises(ValueError):
        Batch.coalesce([batches[0], CaptureBatch.from_columns("urlscan", [], page="p")])


def test_a_batch_with_a_page_stored_before_is_refused_whole(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    store = open_store(db, "run-1")
    first = make_batch([("https://example.com/a", *ROW)])
    first.page, first.page_rows = "page=1", 1
    store.write_batch(first)
    again = make_batch([("https://example.com/a", *ROW)])
    again.page, again.page_rows = "page=1", 1
    fresh = make_batch([("https://example.com/b", *ROW)])
    fresh.page, fresh.page_rows = "page=2", 1
    with pytest.raises(PartlyStored):
        store.write_batch(Batch.coalesce([again, fresh]))
    # nothing of it was written: page 2 and its URL are still to come
    assert [page for page, _ in ledger(db)] == ["page=1"]
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT url, captures FROM urls").fetchall() == [("https://example.com/a", 1)]
    # a batch whose every page was stored comes back all repeats, and counts nothing twice
    assert store.write_batch(Batch.coalesce([again])) == 0
    assert store.write_batch(fresh) == 1
    store.close("finished")
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT url, captures FROM urls ORDER BY url").fetchall() == [
            ("https://example.com/a", 1),
            ("https://example.com/b", 1),
        ]
