"""The SQLite store: where ``STORE_URI`` puts it, and what reruns and merges leave in it.

What a user sees is driven through real ``scrapy crawl wayback`` runs (subprocesses)
against the local Internet-Archive-style CDX server; the merge rules that need many
small cases are checked on :class:`SqliteStore` directly.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest

from trawl.errors import StoreError, TrawlUsageError
from trawl.stores.sqlite import SqliteStore, sqlite_path

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import assert_no_traceback
    from tests.helpers.sqlite_store import (
        DOMAIN,
        EXPECTED,
        LINES_PER_PAGE,
        R,
        assert_complete,
        crawl,
        make_batch,
        merge_captures,
        open_store,
        stat,
        summary,
        summary_line,
    )
    from tests.servers.ia_cdx import FakeCdxServer, make_capture
except ImportError:
    from conftest import assert_no_traceback  # type: ignore[no-redef]
    from helpers.sqlite_store import (  # type: ignore[no-redef]
        DOMAIN,
        EXPECTED,
        LINES_PER_PAGE,
        R,
        assert_complete,
        crawl,
        make_batch,
        merge_captures,
        open_store,
        stat,
        summary,
        summary_line,
    )
    from servers.ia_cdx import FakeCdxServer, make_capture  # type: ignore[no-redef]


def stored(db: Path) -> dict[str, dict]:
    con = sqlite3.connect(db)
    try:
        con.row_factory = sqlite3.Row
        return {row["url"]: dict(row) for row in con.execute("SELECT * FROM urls")}
    finally:
        con.close()


def query(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeCdxServer]:
    with FakeCdxServer(merge_captures(), lines_per_page=LINES_PER_PAGE) as srv:
        yield srv


# --------------------------------------------------------------------------------------
# STORE_URI
# --------------------------------------------------------------------------------------


def test_relative_uri_is_relative_to_the_working_directory(workdir: Path, server: FakeCdxServer) -> None:
    (workdir / "data").mkdir()  # an existing directory: never created by trawl
    result = crawl(workdir, server, store_uri="sqlite:///data/rel.db")
    assert_complete(result)
    assert f"INFO: store: sqlite:///{workdir.resolve() / 'data' / 'rel.db'}" in result.stderr
    assert summary(stored(workdir / "data" / "rel.db")) == EXPECTED
    # The default file is not written besides the one asked for.
    assert sorted(p.name for p in workdir.rglob("*.db")) == ["rel.db"]


def test_absolute_uri(workdir: Path, server: FakeCdxServer, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "deeper" / "abs.db"
    target.parent.mkdir(parents=True)
    uri = f"sqlite:///{target}"  # target is absolute: four slashes
    assert uri.startswith("sqlite:////")
    result = crawl(workdir, server, store_uri=uri)
    assert_complete(result)
    assert summary(stored(target)) == EXPECTED
    assert list(workdir.rglob("*.db")) == []


def test_tilde_uri_expands_to_home(workdir: Path, server: FakeCdxServer, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "stores").mkdir(parents=True)
    result = crawl(workdir, server, store_uri="sqlite:///~/stores/x.db", env={"HOME": str(home)})
    assert_complete(result)
    assert summary(stored(home / "stores" / "x.db")) == EXPECTED
    assert list(workdir.rglob("*.db")) == []
    assert not (workdir / "~").exists()


def test_uri_with_a_host_is_a_usage_error(workdir: Path, server: FakeCdxServer) -> None:
    server.clear_requests()
    result = crawl(workdir, server, store_uri="sqlite://dbhost/x.db")
    assert result.returncode == 2, result.stderr[-3000:]
    assert_no_traceback(result)
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert errors == [
        "trawl: error: STORE_URI 'sqlite://dbhost/x.db': a SQLite URI has no host"
        " (use sqlite:///relative.db or sqlite:////absolute/path.db)"
    ]
    # Refused before the crawl started: nothing fetched, nothing written.
    assert server.requests == []
    assert list(workdir.rglob("*.db")) == []


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("sqlite:///trawl.db", "trawl.db"),
        ("sqlite:///sub/dir/t.db", "sub/dir/t.db"),
        ("sqlite:////abs/path.db", "/abs/path.db"),
        ("sqlite://localhost/t.db", "t.db"),
        ("sqlite:///with%20space.db", "with space.db"),
        ("sqlite:///:memory:", ":memory:"),
    ],
)
def test_sqlite_path(uri: str, path: str) -> None:
    assert sqlite_path(uri) == path


def test_sqlite_path_expands_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert sqlite_path("sqlite:///~/x.db") == str(tmp_path / "x.db")


@pytest.mark.parametrize("uri", ["sqlite://host/x.db", "sqlite://host:5432/x.db", "sqlite://", "sqlite:///"])
def test_sqlite_path_rejects(uri: str) -> None:
    with pytest.raises(TrawlUsageError, match="STORE_URI"):
        sqlite_path(uri)


# --------------------------------------------------------------------------------------
# Reruns: two identical crawls into one store
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_runs(server: FakeCdxServer, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    workdir = tmp_path_factory.mktemp("rerun")
    db = workdir / "trawl.db"
    first = crawl(workdir, server)
    after_first = stored(db)
    second = crawl(workdir, server)
    return SimpleNamespace(
        first=first, second=second, after_first=after_first, after_second=stored(db), db=db
    )


def test_page_boundary_really_splits_a_url(server: FakeCdxServer) -> None:
    """Precondition of the next test: the split URL's captures are on two pages."""
    pages = {i // LINES_PER_PAGE for i, c in enumerate(server.captures) if c.original.endswith("/split")}
    assert len(pages) == 2


def test_first_run_stores_every_url_once(two_runs: SimpleNamespace) -> None:
    assert_complete(two_runs.first)
    # The split URL got its capture count summed over both pages, first/last over both.
    assert summary(two_runs.after_first) == EXPECTED
    assert stat(two_runs.first, "trawl/urls_new") == "5"
    assert stat(two_runs.first, "trawl/urls_unique") == "5"
    assert " 5 unique, 5 new this run," in summary_line(two_runs.first)
    assert {r["first_run"] for r in two_runs.after_first.values()} == {1}
    assert {r["last_run"] for r in two_runs.after_first.values()} == {1}


def test_identical_rerun_adds_nothing_and_doubles_nothing(two_runs: SimpleNamespace) -> None:
    second = two_runs.second
    assert_complete(second)
    assert stat(second, "trawl/captures") == "10"
    assert stat(second, "trawl/urls_unique") == "5"
    assert stat(second, "trawl/urls_new") == "0"
    assert " 5 unique, 0 new this run," in summary_line(second)
    # Same rows, same counts: captures not doubled, split URL still 5.
    assert summary(two_runs.after_second) == EXPECTED
    assert query(two_runs.db, "SELECT COUNT(*), COUNT(DISTINCT url) FROM urls") == [(5, 5)]
    for url, row in two_runs.after_second.items():
        assert row["first_run"] == 1, url
        assert row["last_run"] == 2, url
        assert row["added_at"] == two_runs.after_first[url]["added_at"], url


def test_runs_table_records_each_run(two_runs: SimpleNamespace) -> None:
    rows = query(
        two_runs.db,
        "SELECT run, run_id, source, domain, started_at, finished_at, finish_reason, stats"
        " FROM runs ORDER BY run",
    )
    assert [r[0] for r in rows] == [1, 2]
    assert [r[1] for r in rows] == [
        stat(two_runs.first, "trawl/run_id"),
        stat(two_runs.second, "trawl/run_id"),
    ]
    assert rows[0][1] != rows[1][1]
    assert [(r[2], r[3], r[6]) for r in rows] == [("wayback", DOMAIN, "finished")] * 2
    for _, _, _, _, started, finished, _, _ in rows:
        assert started <= finished
    assert rows[0][5] <= rows[1][4]  # the second run started after the first ended
    stats = [orjson.loads(r[7]) for r in rows]
    assert [s["trawl/urls_new"] for s in stats] == [5, 0]
    assert [s["trawl/captures"] for s in stats] == [10, 10]


def test_store_is_wal_and_intact(two_runs: SimpleNamespace) -> None:
    assert query(two_runs.db, "PRAGMA journal_mode") == [("wal",)]
    assert query(two_runs.db, "PRAGMA integrity_check") == [("ok",)]


# --------------------------------------------------------------------------------------
# Merging across runs that saw different captures
# --------------------------------------------------------------------------------------


def test_runs_over_different_dates_and_a_grown_index_merge(workdir: Path) -> None:
    early = [
        make_capture("https://example.com/x", "20100101000000"),
        make_capture("https://example.com/x", "20110101000000", "text/plain"),
        make_capture("https://example.com/old", "20120101000000"),
    ]
    late = [
        make_capture("https://example.com/x", "20160101000000", statuscode="302"),
        make_capture("https://example.com/x", "20170101000000", statuscode="500", mimetype="text/xml"),
        make_capture("https://example.com/x", "20180101000000"),
        make_capture("https://example.com/new", "20190101000000", statuscode="404"),
    ]
    grown = [
        make_capture("https://example.com/x", "20050101000000", "application/pdf"),
        make_capture("https://example.com/x", "20200101000000"),
        make_capture("https://example.com/grown", "20200101000000"),
    ]
    db = workdir / "trawl.db"
    with FakeCdxServer(early + late, lines_per_page=2) as srv:
        first = crawl(workdir, srv, "-a", "to_date=2014")
        assert_complete(first)
        assert stat(first, "trawl/captures") == "3"
        assert summary(stored(db)) == {
            "https://example.com/x": R("20100101000000", "20110101000000", 2, "200", "text/html,text/plain"),
            "https://example.com/old": R("20120101000000", "20120101000000", 1, "200", "text/html"),
        }

        second = crawl(workdir, srv, "-a", "from_date=2015")
        assert_complete(second)
        assert stat(second, "trawl/captures") == "4"
        assert stat(second, "trawl/urls_new") == "1"
        rows = stored(db)
        assert summary(rows) == {
            # first/last: min/max over both runs; statuses and mimes: union. The capture
            # count is the best any run of this source reached (provenance.py): runs over
            # disjoint date ranges are not added up (3 = max(2, 3), not 5).
            "https://example.com/x": R(
                "20100101000000", "20180101000000", 3, "200,302,500", "text/html,text/plain,text/xml"
            ),
            "https://example.com/old": R("20120101000000", "20120101000000", 1, "200", "text/html"),
            "https://example.com/new": R("20190101000000", "20190101000000", 1, "404", "text/html"),
        }
        assert {u: (r["first_run"], r["last_run"]) for u, r in rows.items()} == {
            "https://example.com/x": (1, 2),
            "https://example.com/old": (1, 1),
            "https://example.com/new": (2, 2),
        }

        # The archive learned more; a full run sees every capture.
        srv.set_captures(early + late + grown)
        third = crawl(workdir, srv)
        assert_complete(third)
        assert stat(third, "trawl/captures") == "10"
        assert stat(third, "trawl/urls_new") == "1"
        assert " 4 unique, 1 new this run," in summary_line(third)
    assert summary(stored(db)) == {
        "https://example.com/x": R(
            "20050101000000",
            "20200101000000",
            7,
            "200,302,500",
            "application/pdf,text/html,text/plain,text/xml",
        ),
        "https://example.com/old": R("20120101000000", "20120101000000", 1, "200", "text/html"),
        "https://example.com/new": R("20190101000000", "20190101000000", 1, "404", "text/html"),
        "https://example.com/grown": R("20200101000000", "20200101000000", 1, "200", "text/html"),
    }
    assert query(db, "SELECT run, finish_reason FROM runs ORDER BY run") == [
        (1, "finished"),
        (2, "finished"),
        (3, "finished"),
    ]
    assert query(db, "PRAGMA integrity_check") == [("ok",)]


# --------------------------------------------------------------------------------------
# SqliteStore directly
# --------------------------------------------------------------------------------------


A = "https://example.com/a"
B = "https://example.com/b"
C = "https://example.com/c"


def facts(db: Path) -> dict[str, tuple]:
    return {
        u: (r["first_seen"], r["last_seen"], r["captures"], r["statuses"], r["mimes"])
        for u, r in stored(db).items()
    }


def test_write_batch_inserts_then_merges(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = open_store(db, "run-1")
    one = make_batch([(A, "2010", "2012", 2, "200", "text/html"), (B, "2011", "2011", 1, "404", "text/html")])
    assert store.write_batch(one) == 2
    assert one.column("new") == [True, True]
    # Same run, next page: A again (its captures add up), C new.
    two = make_batch([(A, "2009", "2011", 3, "301", "text/plain"), (C, "2013", "2013", 1, "", "")])
    assert store.write_batch(two) == 1
    assert two.column("new") == [False, True]
    assert two.column("repeat") == [True, False]  # this run wrote A before
    # The batch now carries the merged record (what exports write).
    assert two.frame.row(0, named=True) | {"new": None, "repeat": None} == {
        "url": A,
        "host": DOMAIN,
        "sources": ["wayback"],
        "first_seen": "2009",
        "last_seen": "2012",
        "captures": 5,
        "statuses": ["200", "301"],
        "mimes": ["text/html", "text/plain"],
        "new": None,
        "repeat": None,
    }
    assert store.write_batch(make_batch([])) == 0
    store.close("finished")
    expected = {
        A: ("2009", "2012", 5, "200,301", "text/html,text/plain"),
        B: ("2011", "2011", 1, "404", "text/html"),
        C: ("2013", "2013", 1, "", ""),
    }
    assert facts(db) == expected

    # A second run sends the same two pages: nothing new, nothing doubled.
    store = open_store(db, "run-2")
    assert store.write_batch(make_batch([(A, "2010", "2012", 2, "200", "text/html")])) == 0
    assert facts(db)[A] == expected[A]  # 5: the best count so far, not 5 + 2
    rerun = make_batch([(A, "2009", "2011", 3, "301", "text/plain"), (C, "2013", "2013", 1, "", "")])
    assert store.write_batch(rerun) == 0
    assert rerun.column("new") == [False, False]
    assert rerun.column("repeat") == [True, False]  # A: written earlier in run-2
    store.close("shutdown")
    assert facts(db) == expected
    assert query(db, "SELECT run, run_id, finish_reason FROM runs ORDER BY run") == [
        (1, "run-1", "finished"),
        (2, "run-2", "shutdown"),
    ]


def test_a_second_source_adds_its_captures(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = open_store(db, "run-1")
    store.write_batch(make_batch([(A, "2010", "2012", 2, "200", "text/html")]))
    store.close("finished")
    store = open_store(db, "run-2", source="otx")
    batch = make_batch([(A, "2008", "2009", 3, "", "")], source="otx")
    assert store.write_batch(batch) == 0
    store.close("finished")
    row = stored(db)[A]
    assert (row["sources"], row["first_seen"], row["last_seen"], row["captures"]) == (
        "otx,wayback",
        "2008",
        "2012",
        5,
    )
    assert orjson.loads(row["source_counts"]) == {"wayback": [1, 2, 2], "otx": [2, 3, 3]}


def test_a_repeat_is_per_source_when_sources_interleave(tmp_path: Path) -> None:
    """``crawl all``: otx writing A between two wayback pages does not make A new to wayback again."""
    db = tmp_path / "s.db"
    wayback, otx = open_store(db, "run-w"), open_store(db, "run-o", source="otx")
    assert wayback.write_batch(make_batch([(A, "2010", "2010", 1, "200", "text/html")])) == 1
    assert otx.write_batch(make_batch([(A, "2011", "2011", 1, "", "")], source="otx")) == 0
    again = make_batch([(A, "2012", "2012", 1, "200", "text/html"), (B, "2012", "2012", 1, "200", "")])
    assert wayback.write_batch(again) == 1
    assert again.column("repeat") == [True, False]  # wayback wrote A before in this run
    first_for_otx = make_batch([(B, "2013", "2013", 1, "", "")], source="otx")
    otx.write_batch(first_for_otx)
    assert first_for_otx.column("repeat") == [False]  # known URL, but new to otx's run
    wayback.close("finished")
    otx.close("finished")
    assert orjson.loads(stored(db)[A]["source_counts"])["wayback"] == [1, 2, 2]


def test_a_failed_batch_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "s.db"
    store = open_store(db, "run-1")
    store.write_batch(make_batch([(A, "2010", "2010", 1, "200", "text/html")]))
    before = facts(db)

    read_known = SqliteStore._read_known

    def merge_then_fail(self: SqliteStore, *args: object) -> None:
        read_known(self, *args)  # B inserted, A updated: all inside the batch's transaction
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(SqliteStore, "_read_known", merge_then_fail)
    bad = make_batch([(A, "2000", "2020", 7, "500", "text/xml"), (B, "2011", "2011", 1, "200", "text/html")])
    with pytest.raises(RuntimeError, match="disk on fire"):
        store.write_batch(bad)
    monkeypatch.undo()
    # Neither B's insert nor A's update survived.
    assert facts(db) == before
    assert store.on_writer(lambda: store.connection is not None and not store.connection.in_transaction)
    # Batches queued behind the failed one (the reactor learns of the failure later) are refused,
    # so nothing commits after the error the crawl stops on.
    with pytest.raises(StoreError, match=r"an earlier batch failed \(disk on fire\)"):
        store.write_batch(make_batch([(C, "2012", "2012", 1, "200", "text/html")]))
    store.close("store_error")
    assert facts(db) == before
    # The next run takes batches again.
    store = open_store(db, "run-2")
    assert store.write_batch(make_batch([(B, "2011", "2011", 1, "200", "text/html")])) == 1
    store.close("finished")
    assert facts(db) == {**before, B: ("2011", "2011", 1, "200", "text/html")}
    assert query(db, "PRAGMA integrity_check") == [("ok",)]


def test_open_sets_wal_and_synchronous(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s.db", "run-1")
    con = store.connection
    assert con is not None
    pragmas = "SELECT * FROM pragma_journal_mode, pragma_synchronous"
    assert store.on_writer(lambda: con.execute(pragmas).fetchone()) == ("wal", 1)  # NORMAL
    # The connection belongs to the store's writer thread: no other thread may use it.
    with pytest.raises(sqlite3.ProgrammingError, match="thread"):
        con.execute("SELECT 1")
    store.close("finished")
    assert os.path.exists(tmp_path / "s.db")


# A plugin whose URL batches the store must refuse: every URL twice in one batch.
_BROKEN_BATCHES = """
from trawl import hookimpl
from trawl.records.batches import UrlBatch


@hookimpl
def trawl_dedup_batch(batch, context):
    if batch.kind != "capture":
        return None
    urls, hosts = batch.column("url") * 2, batch.column("host") * 2
    size = len(urls)
    return UrlBatch.from_columns(batch.source, urls, hosts, [None] * size, [None] * size, [1] * size,
                                 [[]] * size, [[]] * size, page=batch.page, page_rows=batch.page_rows)
"""


def test_a_store_failure_stops_the_crawl_with_one_line(workdir: Path) -> None:
    """Batches queued for the writer thread behind the failed one add no second line."""
    module_dir = workdir.parent / "broken"
    module_dir.mkdir()
    (module_dir / "broken_batches.py").write_text(_BROKEN_BATCHES, encoding="utf-8")
    captures = [make_capture(f"https://example.com/p{n}", "20200101000000") for n in range(120)]
    with FakeCdxServer(captures, lines_per_page=3) as many_pages:
        result = crawl(
            workdir,
            many_pages,
            "-s",
            'TRAWL_PLUGINS={"broken_batches": true}',
            "-s",
            "BATCH_COALESCE_ROWS=0",  # 40 batches, one a page: several are queued when the first fails
            env={"PYTHONPATH": os.pathsep.join([str(module_dir), os.environ.get("PYTHONPATH", "")])},
        )
        asked = len(many_pages.requests)
    assert result.returncode != 0
    assert_no_traceback(result)
    lines = [line for line in result.stderr.splitlines() if "store: cannot write" in line]
    assert len(lines) == 1, lines
    assert lines[0].endswith("URLs could not be stored; stopping the crawl (rerun to complete it)"), lines[0]
    assert query(workdir / "trawl.db", "SELECT count(*) FROM urls") == [(0,)]
    assert asked < 40  # the crawl stopped
