"""The PostgreSQL store: crawls into it, reruns, resume, search, report, concurrent writers, bad URIs.

A real PostgreSQL 15 (:mod:`tests.servers.postgres_server`, password auth over
TCP) and the local Internet-Archive-style CDX server; the data set and
expectations are the SQLite store's (:mod:`tests.helpers.sqlite_store`) and the
search's (:mod:`tests.helpers.search_oracle`): the stores must agree.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
from scrapy.settings import Settings

from trawl.common import statkeys
from trawl.errors import StoreError, TrawlUsageError
from trawl.pipeline.context import RunContext
from trawl.records.batches import UrlBatch
from trawl.search import FIELDS, parse
from trawl.stores.contract import CAPABILITIES, PartlyStored, missing_capabilities
from trawl.stores.postgresql import PostgresStore
from trawl.stores.postgresql.merge import to_csv
from trawl.stores.postgresql.query import SQL_FIELDS
from trawl.stores.sqlite import SqliteStore
from trawl.stores.sqlite.search import SqliteSearcher

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import assert_no_traceback, crawl_args, run_scrapy
    from tests.helpers.resume import dataset, expected_rows, pages_requested
    from tests.helpers.search_oracle import Merged, Q, batches, copy_batch, merged
    from tests.helpers.sqlite_store import (
        DOMAIN,
        EXPECTED,
        LINES_PER_PAGE,
        FakeStats,
        assert_complete,
        make_batch,
        merge_captures,
        stat,
        summary_line,
    )
    from tests.helpers.sqlite_store import crawl as crawl_into
    from tests.servers.ia_cdx import FakeCdxServer, service_unavailable
    from tests.servers.postgres_server import PASSWORD, PostgresServer, _free_port
except ImportError:
    from conftest import assert_no_traceback, crawl_args, run_scrapy  # type: ignore[no-redef]
    from helpers.resume import dataset, expected_rows, pages_requested  # type: ignore[no-redef]
    from helpers.search_oracle import Merged, Q, batches, copy_batch, merged  # type: ignore[no-redef]
    from helpers.sqlite_store import (  # type: ignore[no-redef]
        DOMAIN,
        EXPECTED,
        LINES_PER_PAGE,
        FakeStats,
        assert_complete,
        make_batch,
        merge_captures,
        stat,
        summary_line,
    )
    from helpers.sqlite_store import crawl as crawl_into  # type: ignore[no-redef]
    from servers.ia_cdx import FakeCdxServer, service_unavailable  # type: ignore[no-redef]
    from servers.postgres_server import PASSWORD, PostgresServer, _free_port  # type: ignore[no-redef]


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


@pytest.fixture
def db(pg: PostgresServer) -> str:
    """A fresh database of the server, its URI (with the password)."""
    return pg.create_database(f"t_{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="module")
def cdx() -> Iterator[FakeCdxServer]:
    with FakeCdxServer(merge_captures(), lines_per_page=LINES_PER_PAGE) as srv:
        yield srv


def rows(uri: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(uri) as con:
        return con.execute(sql, params).fetchall()


def summary(uri: str) -> dict[str, tuple]:
    """The ``urls`` table in ``tests.helpers.sqlite_store.summary``'s shape (sets comma-joined)."""
    return {
        url: (host, ",".join(sources), first, last, captures, ",".join(statuses), ",".join(mimes))
        for url, host, sources, first, last, captures, statuses, mimes in rows(
            uri, "SELECT url, host, sources, first_seen, last_seen, captures, statuses, mimes FROM urls"
        )
    }


def shown(uri: str) -> str:
    return uri.replace(f":{PASSWORD}@", ":***@")


# --------------------------------------------------------------------------------------
# Crawls: what a user sees
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_runs(
    pg: PostgresServer, cdx: FakeCdxServer, tmp_path_factory: pytest.TempPathFactory
) -> SimpleNamespace:
    uri = pg.create_database("two_runs")
    workdir = tmp_path_factory.mktemp("pg-rerun")
    first = crawl_into(workdir, cdx, store_uri=uri)
    after_first = summary(uri)
    second = crawl_into(workdir, cdx, store_uri=uri)
    return SimpleNamespace(uri=uri, workdir=workdir, first=first, second=second, after_first=after_first)


def test_crawl_stores_exactly_the_expected_urls(two_runs: SimpleNamespace) -> None:
    first = two_runs.first
    assert_complete(first)
    assert two_runs.after_first == EXPECTED
    assert stat(first, "trawl/urls_new") == "5"
    assert " 5 unique, 5 new this run," in summary_line(first)
    # The start of the run names the store, its password masked; the password is nowhere.
    assert f"INFO: store: {shown(two_runs.uri)}" in first.stderr
    assert PASSWORD not in first.stderr + first.stdout
    assert not list(two_runs.workdir.rglob("*.db"))


def test_a_rerun_doubles_nothing(two_runs: SimpleNamespace) -> None:
    second = two_runs.second
    assert_complete(second)
    assert stat(second, "trawl/urls_new") == "0"
    assert " 5 unique, 0 new this run," in summary_line(second)
    assert summary(two_runs.uri) == EXPECTED  # captures not doubled: the split URL still 5
    assert rows(
        two_runs.uri, "SELECT count(*), count(DISTINCT url), min(first_run), max(last_run) FROM urls"
    ) == [(5, 5, 1, 2)]
    runs = rows(
        two_runs.uri,
        "SELECT run, run_id, source, domain, finish_reason, started_at <= finished_at,"
        " (stats ->> 'trawl/urls_new')::int FROM runs ORDER BY run",
    )
    assert [(r[0], r[2], r[3], r[4], r[5], r[6]) for r in runs] == [
        (1, "wayback", DOMAIN, "finished", True, 5),
        (2, "wayback", DOMAIN, "finished", True, 0),
    ]
    assert [r[1] for r in runs] == [stat(two_runs.first, "trawl/run_id"), stat(second, "trawl/run_id")]


def test_search_and_report_commands_over_the_store(two_runs: SimpleNamespace) -> None:
    store = ["-s", f"STORE_URI={two_runs.uri}"]
    found = run_scrapy(two_runs.workdir, "search", "status:404", *store)
    assert found.returncode == 0, found.stderr[-3000:]
    assert found.stdout.splitlines() == ["https://example.com/b"]
    count = run_scrapy(two_runs.workdir, "search", "host:blog.example.com OR ext:*", "--count", *store)
    assert count.stdout == "1\n", count.stderr[-3000:]
    facet = run_scrapy(two_runs.workdir, "search", "*", "--facet", "status", *store)
    assert [line.split() for line in facet.stdout.splitlines()] == [["200", "5"], ["301", "1"], ["404", "1"]]
    # The last crawl (the rerun) added nothing; its first run added all five.
    report = run_scrapy(two_runs.workdir, "report", "new", "--domain", DOMAIN, *store)
    assert report.returncode == 0, report.stderr[-3000:]
    assert_no_traceback(report)
    assert report.stdout == ""
    assert report.stderr.startswith(f"trawl: 0 new URLs for {DOMAIN} in the last crawl")
    first_job = stat(two_runs.first, "trawl/run_id")
    earlier = run_scrapy(
        two_runs.workdir, "report", "new", "--domain", DOMAIN, "--since", str(first_job), *store
    )
    assert earlier.returncode == 0, earlier.stderr[-3000:]
    assert earlier.stdout.splitlines() == sorted(EXPECTED)
    for result in (found, count, facet, report, earlier):
        assert PASSWORD not in result.stderr + result.stdout


def test_crawl_all_exports_from_the_store(db: str, cdx: FakeCdxServer, workdir: Path) -> None:
    settings = {"WAYBACK_BASE_URL": cdx.base_url, "PROGRESS_INTERVAL": 0, "STORE_URI": db}
    args = crawl_args(
        "all", DOMAIN, settings, "-a", "sources=wayback", "-a", "filters=false", "-o", "urls.jsonl"
    )
    result = run_scrapy(workdir, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    import orjson

    exported = [orjson.loads(line) for line in (workdir / "urls.jsonl").read_text().splitlines()]
    assert {r["url"]: r["captures"] for r in exported} == {u: e[4] for u, e in EXPECTED.items()}


def test_resume_with_jobdir_fetches_only_the_missing_page(db: str, workdir: Path, tmp_path: Path) -> None:
    per_page = 50
    caps = dataset()[: 6 * per_page]
    with FakeCdxServer(caps, lines_per_page=per_page) as srv:
        srv.fail_pages = {3: [service_unavailable()] * 3}
        settings = {
            "WAYBACK_BASE_URL": srv.base_url,
            "JOBDIR": tmp_path / "job",
            "RETRY_TIMES": 1,
            "STORE_URI": db,
        }
        args = crawl_args("wayback", DOMAIN, settings, "-a", "filters=false")
        partial = run_scrapy(workdir, *args)
        assert partial.returncode == 1
        assert partial.stat("trawl/gave_up") == "1"
        srv.fail_pages = {}
        mark = len(srv.requests)
        resumed = run_scrapy(workdir, *args)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert "resuming run" in resumed.stderr
        assert sorted(pages_requested(srv, mark)) == [3]
    stored = {
        u: (c, f, last) for u, c, f, last in rows(db, "SELECT url, captures, first_seen, last_seen FROM urls")
    }
    assert stored == expected_rows(caps)
    assert rows(db, "SELECT count(*) FROM runs") == [(1,)]  # the resumed run went on under its number
    assert rows(db, "SELECT count(*) FROM pages") == [(7,)]  # six pages and the count request's end


def test_an_unreachable_server_is_one_line_and_exit_1(workdir: Path, cdx: FakeCdxServer) -> None:
    """A store that cannot be reached is a failed run (1, as an unreachable Elasticsearch), not bad input."""
    uri = f"postgresql://trawl:{PASSWORD}@127.0.0.1:{_free_port()}/trawl"
    cdx.clear_requests()
    result = crawl_into(workdir, cdx, store_uri=uri)
    assert result.returncode == 1, result.stderr[-3000:]
    assert_no_traceback(result)
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, result.stderr[-3000:]
    assert errors[0].startswith(f"trawl: error: STORE_URI '{shown(uri)}': cannot reach PostgreSQL: ")
    assert "Connection refused" in errors[0]
    assert PASSWORD not in result.stderr + result.stdout
    assert cdx.requests == []  # refused before anything was fetched


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("postgresql://trawl@127.0.0.1:5432", "names no database"),
        ("postgresql://trawl@127.0.0.1:5432/a/b", "the path is the database's name"),
        ("postgresql://trawl@127.0.0.1:port/db", "Port could not be cast"),
    ],
)
def test_a_bad_uri_is_one_line_and_exit_2(workdir: Path, cdx: FakeCdxServer, uri: str, message: str) -> None:
    result = crawl_into(workdir, cdx, store_uri=uri)
    assert result.returncode == 2, result.stderr[-3000:]
    assert_no_traceback(result)
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith("trawl: error: STORE_URI"), errors
    assert message in errors[0]


def test_a_missing_database_is_bad_input(pg: PostgresServer, workdir: Path, cdx: FakeCdxServer) -> None:
    """The server answered and refused the URI: fixing the URI fixes it, exit status 2 (not 1)."""
    result = crawl_into(workdir, cdx, store_uri=pg.uri("no_such_database"))
    assert result.returncode == 2, result.stderr[-3000:]
    assert 'database "no_such_database" does not exist' in result.stderr


def test_a_wrong_password_is_named_and_masked(pg: PostgresServer, workdir: Path, cdx: FakeCdxServer) -> None:
    uri = pg.uri("postgres", password="not-the-password")
    result = crawl_into(workdir, cdx, store_uri=uri)
    assert result.returncode == 2
    assert "password authentication failed" in result.stderr
    assert "not-the-password" not in result.stderr


# --------------------------------------------------------------------------------------
# PostgresStore directly
# --------------------------------------------------------------------------------------


def open_store(
    uri: str, run_id: str, source: str = "wayback", settings: dict[str, object] | None = None
) -> PostgresStore:
    crawler = SimpleNamespace(settings=Settings(settings or {}), stats=FakeStats())
    inputs = {"target": SimpleNamespace(domain=DOMAIN)}
    context = RunContext(
        crawler=crawler, spider=SimpleNamespace(name=source), run_id=run_id, plugins=None, inputs=inputs
    )  # type: ignore[arg-type]
    store = PostgresStore(uri, context)
    store.open()
    return store


A, B, C = "https://example.com/a", "https://example.com/b", "https://example.com/c"


def test_the_store_has_every_capability_of_the_url_kind() -> None:
    """Every capability but the responses index, which the PostgreSQL store does not keep yet (a store
    class refuses it in one line); the declared kinds' reads are tests/test_postgres_kinds.py's."""
    assert missing_capabilities(PostgresStore, list(CAPABILITIES)) == ["responses"]


def test_write_batch_merges_and_marks_as_sqlite_does(db: str, tmp_path: Path) -> None:
    """``test_sqlite_store.test_write_batch_inserts_then_merges`` and the interleaved sources, on both."""

    def scenario(open_: Callable[[str, str], Any]) -> list[Any]:
        seen: list[Any] = []
        wayback, otx = open_("run-1", "wayback"), open_("run-2", "otx")
        one = make_batch(
            [(A, "2010", "2012", 2, "200", "text/html"), (B, "2011", "2011", 1, "404", "text/html")]
        )
        two = make_batch([(A, "2009", "2011", 3, "301", "text/plain"), (C, "2013", "2013", 1, "", "")])
        three = make_batch([(A, "2008", "2009", 3, "", "")], source="otx")
        four = make_batch([(A, "2014", "2014", 1, "200", "text/html,x"), (B, "2014", "2014", 1, "", "")])
        for store, batch in ((wayback, one), (wayback, two), (otx, three), (wayback, four)):
            seen.append((store.write_batch(batch), batch.frame.to_dicts()))
        wayback.close("finished")
        otx.close("finished")
        return seen

    on_postgres = scenario(lambda run, source: open_store(db, run, source))
    sqlite_uri = f"sqlite:///{tmp_path / 's.db'}"
    crawler = SimpleNamespace(settings=Settings({}), stats=FakeStats())

    def open_sqlite(run: str, source: str) -> SqliteStore:
        inputs = {"target": SimpleNamespace(domain=DOMAIN)}
        context = RunContext(
            crawler=crawler, spider=SimpleNamespace(name=source), run_id=run, plugins=None, inputs=inputs
        )  # type: ignore[arg-type]
        store = SqliteStore(sqlite_uri, context)
        store.open()
        return store

    assert on_postgres == scenario(open_sqlite)
    assert [n for n, _ in on_postgres] == [2, 1, 0, 0]
    assert [r["repeat"] for r in on_postgres[3][1]] == [True, True]  # wayback's run wrote A and B before
    (a,) = rows(db, "SELECT sources, captures, source_counts FROM urls WHERE url = %s", A)
    assert a == (["otx", "wayback"], 9, {"wayback": [1, 6, 6], "otx": [2, 3, 3]})


def paged(batch: UrlBatch, page: str) -> UrlBatch:
    batch.page, batch.page_rows = page, len(batch)
    return batch


def test_the_ledger_skips_pages_stored_before(db: str) -> None:
    store = open_store(db, "run-1")
    first = paged(make_batch([(A, "2010", "2010", 1, "200", "text/html")]), "page-0")
    assert store.write_batch(first) == 1
    again = paged(make_batch([(A, "2010", "2010", 1, "200", "text/html")]), "page-0")
    assert store.write_batch(again) == 0
    assert again.column("repeat") == [True]
    assert store.context.stats.values[statkeys.PAGES_ALREADY_STORED] == 1
    both = UrlBatch.coalesce(
        [
            paged(make_batch([(A, "2010", "2010", 1, "200", "text/html")]), "page-0"),
            paged(make_batch([(B, "2011", "2011", 1, "200", "")]), "page-1"),
        ]
    )
    assert both.pages == {"page-0": 1, "page-1": 1}
    with pytest.raises(PartlyStored):
        store.write_batch(both)
    assert store.done_pages("wayback") == {"page-0": 1}  # the partly stored batch left nothing
    assert rows(db, "SELECT url, captures FROM urls") == [(A, 1)]
    store.close("shutdown")
    resumed = open_store(db, "run-1")  # the same run id: its number, its ledger
    assert resumed.run == store.run
    assert resumed.done_pages("wayback") == {"page-0": 1}
    resumed.close("finished")


def test_sets_with_commas_quotes_and_backslashes_survive(db: str) -> None:
    odd = ['text/html; charset="utf-8"', "a,b", "back\\slash", "{braces}"]
    batch = UrlBatch.from_columns("wayback", [A], [DOMAIN], ["2010"], [None], [1], [["200"]], [sorted(odd)])
    assert b'"a,b"' in to_csv(batch.frame)
    store = open_store(db, "run-1")
    store.write_batch(batch)
    store.write_batch(UrlBatch.from_columns("wayback", [A], [DOMAIN], [None], ["2011"], [1], [[]], [["z"]]))
    store.close("finished")
    assert rows(db, "SELECT mimes, first_seen, last_seen, statuses FROM urls") == [
        (sorted([*odd, "z"]), "2010", "2011", ["200"])
    ]


def test_a_connection_lost_mid_run_is_one_line_naming_it(db: str) -> None:
    store = open_store(db, "run-1", settings={"POSTGRES_OUTAGE_MAX": 0})  # fail at once
    store.write_batch(make_batch([(A, "2010", "2010", 1, "200", "text/html")]))
    rows(db, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'trawl'"
         " AND pid <> pg_backend_pid()")  # fmt: skip
    with pytest.raises(StoreError) as failed:
        store.write_batch(make_batch([(B, "2010", "2010", 1, "200", "text/html")]))
    message = str(failed.value)
    assert "\n" not in message
    assert message.startswith("the database server was shut down (PostgreSQL: ") or message.startswith(
        "the connection to the database server was lost (PostgreSQL: "
    ), message
    with pytest.raises(StoreError, match="an earlier batch failed"):
        store.write_batch(make_batch([(C, "2010", "2010", 1, "200", "text/html")]))
    with pytest.raises(StoreError):
        store.close("finished")
    assert rows(db, "SELECT url FROM urls") == [(A,)]


# --------------------------------------------------------------------------------------
# Concurrent writers
# --------------------------------------------------------------------------------------

URLS = [f"https://example.com/p/{i:05d}" for i in range(3000)]
ROUNDS = 4


def _writer_batches(seed: int, source: str) -> list[UrlBatch]:
    """ROUNDS batches of every URL, each in its own shuffled order, with random provenance."""
    rng = random.Random(seed)
    out = []
    for _ in range(ROUNDS):
        order = URLS[:]
        rng.shuffle(order)
        out.append(
            UrlBatch.from_columns(
                source,
                urls=order,
                hosts=[DOMAIN] * len(order),
                first_seen=[f"20{rng.randint(10, 19)}0101000000" for _ in order],
                last_seen=[f"20{rng.randint(20, 24)}0101000000" for _ in order],
                captures=[rng.randint(1, 5) for _ in order],
                statuses=[sorted(rng.sample(["200", "301", "404"], rng.randint(0, 2))) for _ in order],
                mimes=[sorted(rng.sample(["text/html", "image/png"], rng.randint(0, 2))) for _ in order],
            )
        )
    return out


def _expected(writers: list[tuple[str, list[UrlBatch]]]) -> dict[str, tuple]:
    """The merge rule by hand: min/max, set unions, captures summed within a run per source."""
    out: dict[str, dict[str, Any]] = {}
    for source, written in writers:
        for batch in written:
            for row in batch.frame.iter_rows(named=True):
                blank = {"sources": set(), "first": None, "last": None, "captures": 0}
                m = out.setdefault(row["url"], {**blank, "statuses": set(), "mimes": set()})
                m["sources"].add(source)
                m["first"] = min(filter(None, [m["first"], row["first_seen"]]))
                m["last"] = max(filter(None, [m["last"], row["last_seen"]]))
                m["captures"] += row["captures"]
                m["statuses"] |= set(row["statuses"])
                m["mimes"] |= set(row["mimes"])
    return {
        u: (
            sorted(m["sources"]),
            m["first"],
            m["last"],
            m["captures"],
            sorted(m["statuses"]),
            sorted(m["mimes"]),
        )
        for u, m in out.items()
    }


@pytest.mark.parametrize("same_run", [False, True], ids=["two-sources", "one-run-two-workers"])
def test_two_writers_on_the_same_urls_merge_exactly(db: str, same_run: bool) -> None:
    """Two stores (two connections, as two workers), each batch released by a barrier so that the
    merges of the same 3,000 URLs, staged in different orders, really overlap."""
    specs = (
        [("run-a", "wayback"), ("run-a", "wayback")] if same_run else [("run-a", "wayback"), ("run-b", "otx")]
    )
    written = [_writer_batches(seed, source) for seed, (_, source) in enumerate(specs)]
    # Before writing: a store puts the merged provenance on the frames it writes.
    expected = _expected([(source, batches_) for (_, source), batches_ in zip(specs, written, strict=True)])
    stores = [open_store(db, run, source) for run, source in specs]
    barrier = threading.Barrier(len(stores))
    news: list[list[int]] = [[] for _ in stores]
    failures: list[BaseException] = []

    def work(index: int) -> None:
        try:
            for batch in written[index]:
                barrier.wait(timeout=60)
                news[index].append(stores[index].write_batch(batch))
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    for store in stores:
        store.close("finished")
    assert failures == []
    got = {
        u: tuple(r)
        for u, *r in rows(
            db, "SELECT url, sources, first_seen, last_seen, captures, statuses, mimes FROM urls"
        )
    }
    assert got == expected
    # Every URL counted new exactly once, by whichever writer inserted it.
    assert sum(map(sum, news)) == len(URLS)
    # Row locks taken in URL order: the writers waited for each other, never deadlocked.
    (deadlocks,) = rows(db, "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")[0]
    assert deadlocks == 0


# --------------------------------------------------------------------------------------
# Search: the same answers as the SQLite store and the oracle (tests/helpers/search_oracle.py)
# --------------------------------------------------------------------------------------


def test_every_search_field_maps() -> None:
    assert sorted(SQL_FIELDS) == sorted(FIELDS)


@pytest.fixture(scope="module")
def searchable(pg: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    uri = pg.create_database("search")
    sqlite_db = tmp_path_factory.mktemp("pg-search") / "trawl.db"
    stats = SimpleNamespace(values={}, get_stats=lambda: {}, inc_value=lambda *a, **k: None)
    for n, batch in enumerate(batches()):
        for klass, store_uri in ((PostgresStore, uri), (SqliteStore, f"sqlite:///{sqlite_db}")):
            crawler = SimpleNamespace(settings=Settings({}), stats=stats)
            inputs = {"target": SimpleNamespace(domain="example.com")}
            context = RunContext(
                crawler=crawler,
                spider=SimpleNamespace(name=batch.source),
                run_id=f"run-{n}",
                plugins=None,
                inputs=inputs,
            )  # type: ignore[arg-type]
            store = klass(store_uri, context)
            store.open()
            store.write_batch(copy_batch(batch))
            store.close("finished")
    return SimpleNamespace(uri=uri, sqlite=str(sqlite_db), oracle=merged())


@pytest.mark.parametrize(("query", "predicate"), Q, ids=[q for q, _ in Q])
def test_same_answers_as_the_oracle(
    searchable: SimpleNamespace, query: str, predicate: Callable[[Merged], bool]
) -> None:
    expected = sorted(m.url for m in searchable.oracle.values() if predicate(m))
    node = parse(query)
    with PostgresStore.searcher(searchable.uri) as searcher:
        assert [r.url for r in searcher.records(node)] == expected
        assert searcher.count(node) == len(expected)


@pytest.mark.parametrize(
    "facet", ["host", "source", "status", "mime", "ext", "scheme", "port", "tld", "registered_domain"]
)
@pytest.mark.parametrize("query", ["*", "domain:example.com NOT ext:js", "first_seen:[2010 TO 2020]"])
def test_same_facets_as_sqlite(searchable: SimpleNamespace, facet: str, query: str) -> None:
    node = parse(query)
    with PostgresStore.searcher(searchable.uri) as pg_searcher, SqliteSearcher(searchable.sqlite) as sqlite:
        assert pg_searcher.facet(node, facet, 5) == sqlite.facet(node, facet, 5)


def test_records_match_sqlite_and_limit(searchable: SimpleNamespace) -> None:
    with PostgresStore.searcher(searchable.uri) as pg_searcher, SqliteSearcher(searchable.sqlite) as sqlite:
        assert list(pg_searcher.records(parse("*"))) == list(sqlite.records(parse("*")))
        assert [r.url for r in pg_searcher.records(parse("*"), limit=3)] == sorted(searchable.oracle)[:3]


def test_an_empty_database_is_no_store(db: str) -> None:
    with pytest.raises(StoreError, match="no trawl store in"):
        PostgresStore.searcher(db)
    assert list(PostgresStore.read_domain(db, DOMAIN)) == []
    assert PostgresStore.list_runs(db, DOMAIN).height == 0


def test_check_uri_refuses_other_schemes() -> None:
    with pytest.raises(TrawlUsageError, match="use postgresql://"):
        PostgresStore.check_uri("mysql://x@h/db")
