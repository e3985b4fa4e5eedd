"""The crates load's ingest process (``trawl/stores/sqlite/ingest.py``): a full disk is one line.

The staged table of a kind is made on the store's writer when the kind's first batch
comes; a disk that fills just then raised SQLite's ``OperationalError`` through the
reading thread, and the crawl printed two tracebacks. It must be the store's one
``StoreError`` line, which the load says and stops on.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from scrapy.settings import Settings

from trawl.errors import StoreError
from trawl.pipeline.context import RunContext
from trawl.sources.crates.records import VersionBatch
from trawl.stores.sqlite import SqliteStore
from trawl.stores.sqlite.ingest import Ingester


def _context() -> RunContext:
    stats = SimpleNamespace(values={}, get_stats=lambda: {}, inc_value=lambda *a, **k: None)
    crawler = SimpleNamespace(settings=Settings({}), stats=stats)
    return RunContext(
        crawler=crawler, spider=SimpleNamespace(name="crates"), run_id="r1", plugins=None, inputs={}
    )  # type: ignore[arg-type]


def test_a_disk_full_when_the_staged_table_is_made_is_one_store_error(tmp_path: Path) -> None:
    path = tmp_path / "crates.db"
    store = SqliteStore(f"sqlite:///{path}", _context())
    store.open()
    try:
        # The file may not grow by a page: as a full disk does, SQLite says SQLITE_FULL.
        pages = store.on_writer(lambda: store.connection.execute("PRAGMA page_count").fetchone()[0])
        store.on_writer(lambda: store.connection.execute(f"PRAGMA max_page_count = {pages}"))
        ingester = Ingester.for_store(store)
        assert ingester is not None
        frame = pl.DataFrame({"id": [1], "crate_id": [1], "num": ["0.1.0"]}).select(
            *(
                pl.col(c) if c in ("id", "crate_id", "num") else pl.lit(None, t).alias(c)
                for c, t in VersionBatch.SCHEMA.items()
            )
        )
        with pytest.raises(
            StoreError, match=r"cannot write the dump's rows into .*: the disk is full \(SQLite"
        ):
            ingester.put(VersionBatch, frame)
        ingester.discard()
    finally:
        store.close("finished")
