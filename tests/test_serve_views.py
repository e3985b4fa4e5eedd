"""The views of ``trawl serve`` read the columns the record kinds declare, where their tables are.

The record kinds' tables are made as the SQLite store makes them (:class:`KindTable`
from each kind's declaration), empty; each view's SQL then runs on them: a
column renamed in a declaration breaks this test, not a user's page. What the
views show is tested on a crawled store in tests/test_serve.py.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from trawl.mining.records import EndpointBatch, MinedBatch
from trawl.serve.views import VIEWS, available
from trawl.sources.crates.records import CrateBatch, DependencyBatch, VersionBatch, VersionDownloadBatch
from trawl.sources.live.records import LinkBatch
from trawl.sources.probe.records import ProbeBatch
from trawl.stores.sqlite.kinds import KindTable
from trawl.stores.sqlite.schema import SCHEMA

KINDS = (EndpointBatch, MinedBatch, ProbeBatch, LinkBatch, CrateBatch, VersionBatch, DependencyBatch,
         VersionDownloadBatch)  # fmt: skip


def store_with_every_kind(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    for kind in KINDS:
        table = KindTable(kind)
        table.create(con)
        if table.table != table.live:  # a staged kind: its rows reach the live table by a rename
            con.execute(f"ALTER TABLE {table.table} RENAME TO {table.live}")
    return con


def test_every_view_runs_on_the_tables_the_kinds_declare(tmp_path: Path) -> None:
    con = store_with_every_kind(tmp_path / "trawl.db")
    tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert [view.name for view in available(tables)] == [view.name for view in VIEWS]
    for view in VIEWS:
        con.execute(view.sql, {"crate": "serde"}).fetchall()


def test_a_store_of_urls_alone_has_the_url_views_only() -> None:
    assert [view.name for view in available({"urls", "pages", "runs"})] == [
        "url_provenance", "hosts", "runs_by_source", "new_since_last_run",
    ]  # fmt: skip
