"""The store contract: one merge rule, declared capabilities, one-line refusals.

One suite, run against every store:

* **The merge rule.** :meth:`Provenance.merge` (``trawl/records/provenance.py``)
  is the rule; the SQLite and PostgreSQL stores write it in SQL, the
  Elasticsearch store (noida-db here, or ``$ELASTICSEARCH_URL``) applies it to
  the documents it reads back. Random batches from several sources and runs
  (two runs at once, as ``crawl all`` writes; a URL on several pages of one
  run; a run resumed under its number) must leave in each store the records
  the model gives: provenance, per-source counts and first/last run, as stored
  and as the store's reading API (``read_domain``) gives them back; and each
  batch must carry back the merged rows, ``new``, ``repeat`` and the count of
  new URLs that the model says.
* **Declared capabilities.** Each built-in store implements every Protocol of
  ``trawl/stores/contract.py`` but those it is documented to lack.
* **A third-party store** that implements only the writing Protocol (the
  package in ``tests/plugins/trawl-text-store``, pip-installed as a user would)
  works for plain crawls and is refused, in one line naming what it lacks, for
  runs that need resume, reading back or search.

The PostgreSQL server (:mod:`tests.servers.postgres_server`) and noida-db
(:mod:`tests.servers.noida`) are started once for the module, and only when a
test of their store runs; each test gets a fresh database or index prefix. Their
parameters are marked ``slow``: ``make check`` leaves out what starts a server.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
from elasticsearch import Elasticsearch
from scrapy.settings import Settings

from tests.conftest import assert_no_traceback, crawl_args, run_scrapy
from tests.helpers import processes
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.noida import elasticsearch_url, es_settings
from tests.servers.postgres_server import PostgresServer
from trawl.pipeline.context import RunContext
from trawl.records.batches import UrlBatch
from trawl.records.provenance import Provenance
from trawl.stores.contract import (
    CAPABILITIES,
    KEYED_KINDS,
    AsyncWritingStore,
    KindReadingStore,
    missing_capabilities,
)
from trawl.stores.elasticsearch import ElasticsearchStore
from trawl.stores.postgresql import PostgresStore
from trawl.stores.sqlite import SqliteStore

DOMAIN = "example.com"
ALL = ["write", "resume", "read", "search", "report"]


class _Stats:
    """The calls of Scrapy's stats collector a store makes."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] = self.values.get(key, start) + count

    def set_value(self, key: str, value: Any) -> None:
        self.values[key] = value

    def get_stats(self) -> dict[str, Any]:
        return self.values


def _context(settings: Settings, run_id: str, source: str) -> RunContext:
    crawler = SimpleNamespace(settings=settings, stats=_Stats())
    return RunContext(
        crawler, SimpleNamespace(name=source), run_id, None, inputs={"target": SimpleNamespace(domain=DOMAIN)}
    )  # type: ignore[arg-type]


# --- the stores under test: one fresh database (index prefix) per test ------------------------

#: What a store holds about a URL, in :class:`Provenance`'s terms: host, sources, first and last
#: seen, captures, statuses, mimes, per-source counts ``{source: [run, in_run, best]}``, first
#: and last run (the store's run key: SQLite's and PostgreSQL's run number, Elasticsearch's run id).
Facts = tuple[str, list[str], str | None, str | None, int, list[str], list[str], dict[str, list], Any, Any]


def facts(p: Provenance) -> Facts:
    return (p.host, p.sources, p.first_seen, p.last_seen, p.captures, p.statuses, p.mimes, p.counts,
            p.first_run, p.last_run)  # fmt: skip


class Backend:
    """One store: open a run's store on a fresh database, write a batch, read what it holds."""

    store_class: type

    def __init__(self, uri: str, settings: Settings) -> None:
        self.uri = uri
        self.settings = settings

    def open(self, run_id: str, source: str) -> Any:
        store = self.store_class(self.uri, _context(self.settings, run_id, source))
        store.open()
        return store

    def write(self, store: Any, batch: UrlBatch, number: int) -> int:
        return store.write_batch(batch)

    def stored(self) -> dict[str, Facts]:
        """Every URL as the store keeps it."""
        raise NotImplementedError

    def read_back(self) -> list[tuple]:
        """Every URL of the domain as the store's reading API (``ReadableStore.read_domain``) gives it."""
        return [
            (r.url, r.host, r.sources, r.first_seen, r.last_seen, r.captures, r.statuses, r.mimes)
            for batch in self.store_class.read_domain(self.uri, DOMAIN, self.settings)
            for r in batch.records()
        ]


class SqliteBackend(Backend):
    store_class = SqliteStore

    def __init__(self, db: Path) -> None:
        super().__init__(f"sqlite:///{db}", Settings({"SQLITE_SYNCHRONOUS": "NORMAL", "SQLITE_CACHE_MB": 4}))
        self.db = db

    def stored(self) -> dict[str, Facts]:
        def split(text: str) -> list[str]:
            return [value for value in text.split(",") if value]

        con = sqlite3.connect(self.db)
        try:
            assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            rows = con.execute(
                "SELECT url, host, sources, first_seen, last_seen, captures, statuses, mimes,"
                " source_counts, first_run, last_run FROM urls"
            ).fetchall()
        finally:
            con.close()
        return {
            url: (host, split(sources), first, last, captures, split(statuses), split(mimes),
                  json.loads(counts), first_run, last_run)
            for url, host, sources, first, last, captures, statuses, mimes, counts, first_run, last_run
            in rows
        }  # fmt: skip


class PostgresBackend(Backend):
    store_class = PostgresStore

    def stored(self) -> dict[str, Facts]:
        with psycopg.connect(self.uri) as con:
            rows = con.execute(
                "SELECT url, host, sources, first_seen, last_seen, captures, statuses, mimes,"
                " source_counts, first_run, last_run FROM urls"
            ).fetchall()
        return {url: tuple(rest) for url, *rest in rows}  # type: ignore[misc]


class ElasticsearchBackend(Backend):
    """Written as a crawl writes (``write_batch_async``, every other batch) and as ``es-replay`` does
    (``write_batch``): both drive the same :class:`~trawl.stores.elasticsearch.writer.BatchWrite`."""

    store_class = ElasticsearchStore

    def __init__(self, url: str, prefix: str) -> None:
        uri = url.replace("http://", "elasticsearch://", 1).replace("https://", "elasticsearch+https://", 1)
        super().__init__(uri, es_settings(ELASTICSEARCH_INDEX_PREFIX=prefix))
        self.url = url
        self.prefix = prefix

    def write(self, store: Any, batch: UrlBatch, number: int) -> int:
        if number % 2 == 0:
            return store.write_batch(batch)

        async def write() -> int:  # as tests/test_elasticsearch_store.py drives it
            try:
                return await store.write_batch_async(batch)
            finally:
                await store.async_client.close()
                store.async_client = None

        return asyncio.run(write())

    def stored(self) -> dict[str, Facts]:
        with Elasticsearch(self.url) as es:
            es.indices.refresh(index=f"{self.prefix}-urls-*")
            found = es.search(index=f"{self.prefix}-urls-*", size=1000, query={"match_all": {}})
        hits = found["hits"]["hits"]
        out: dict[str, Facts] = {}
        for hit in hits:
            url, trawl = hit["_source"]["url"], hit["_source"]["trawl"]
            out[url["full"]] = (
                url["domain"], trawl["sources"], trawl.get("first_seen"), trawl.get("last_seen"),
                trawl["captures"], [str(s) for s in trawl["status_codes"]], trawl["mime_types"],
                trawl["source_counts"], trawl["first_run"], trawl["last_run"],
            )  # fmt: skip
        return out


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


@pytest.fixture(scope="module")
def es_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with elasticsearch_url(tmp_path_factory.mktemp("noida")) as url:
        yield url


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgresql", marks=pytest.mark.slow),
        pytest.param("elasticsearch", marks=pytest.mark.slow),
    ]
)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A store of each kind, empty; its server started (once for the module) only when needed."""
    if request.param == "sqlite":
        return SqliteBackend(tmp_path / "merge.db")
    fresh = uuid.uuid4().hex[:12]
    if request.param == "postgresql":
        server: PostgresServer = request.getfixturevalue("pg")
        return PostgresBackend(server.create_database(f"t_{fresh}"), Settings({}))
    return ElasticsearchBackend(request.getfixturevalue("es_url"), f"trawltest-{fresh}")


# --- the merge rule -------------------------------------------------------------------------


def _random_rows(rng: random.Random, urls: list[str]) -> list[tuple]:
    rows = []
    for url in rng.sample(urls, rng.randint(1, len(urls))):
        first = str(rng.randint(2000, 2020))
        last = str(max(int(first), rng.randint(2000, 2024)))
        stamps = [None, first][rng.random() < 0.8]
        statuses = sorted(set(rng.sample(["200", "301", "404", ""], rng.randint(0, 2))) - {""})
        mimes = sorted(set(rng.sample(["text/html", "application/json", "image/png"], rng.randint(0, 2))))
        rows.append((url, stamps, last if stamps else None, rng.randint(1, 5), statuses, mimes))
    return rows


#: Runs (run id, source) open at once, one group after the other: a source alone; two sources at
#: once (``crawl all``), one of them a second run of wayback; a third source; the otx run resumed.
SCHEDULE = [
    [("r1", "wayback")],
    [("r2", "otx"), ("r3", "wayback")],
    [("r4", "urlscan")],
    [("r2", "otx")],
]


def _write_page(
    backend: Backend, store: Any, rows: list[tuple], number: int, model: dict[str, Provenance]
) -> None:
    """One page of a run into the store and into the model; what the batch carries back checked."""
    source, run = store.context.source, store.run
    batch = UrlBatch.from_columns(
        source, [r[0] for r in rows], [DOMAIN] * len(rows), [r[1] for r in rows],
        [r[2] for r in rows], [r[3] for r in rows], [r[4] for r in rows], [r[5] for r in rows],
    )  # fmt: skip
    # New: the store did not know the URL; repeat: this run wrote it before (its source's count names it).
    marks = {
        url: (known is None, known is not None and known.counts.get(source, [None])[0] == run)
        for url, known in ((r[0], model.get(r[0])) for r in rows)
    }
    new = backend.write(store, batch, number)
    for url, first, last, captures, statuses, mimes in rows:
        contribution = Provenance.contribution(
            url, DOMAIN, [source], first, last, captures, statuses, mimes, source, run
        )
        model[url] = model[url].merge(contribution, source, run) if url in model else contribution
    assert new == sum(is_new for is_new, _ in marks.values())
    # What the batch carries back (for exports) is the merged record.
    assert sorted(batch.urls) == sorted(marks)
    for row in batch.frame.iter_rows(named=True):
        expected = model[row["url"]]
        assert (row["sources"], row["first_seen"], row["last_seen"], row["captures"], row["statuses"],
                row["mimes"], row["new"], row["repeat"]) == (
            expected.sources, expected.first_seen, expected.last_seen, expected.captures,
            expected.statuses, expected.mimes, *marks[row["url"]])  # fmt: skip


def test_merge_is_the_provenance_rule(backend: Backend) -> None:
    rng = random.Random(8)
    urls = [f"https://{DOMAIN}/p/{i}" for i in range(30)]
    model: dict[str, Provenance] = {}
    written = 0
    for group in SCHEDULE:
        stores = [backend.open(run_id, source) for run_id, source in group]
        try:
            # Pages of the runs, interleaved: a URL may recur on several pages of one run.
            pages = [store for store in stores for _ in range(rng.randint(1, 4))]
            rng.shuffle(pages)
            for store in pages:
                _write_page(backend, store, _random_rows(rng, urls), written, model)
                written += 1
        finally:
            for store in stores:
                store.close("finished")
    assert backend.stored() == {url: facts(p) for url, p in model.items()}
    assert backend.read_back() == [
        (url, p.host, p.sources, p.first_seen, p.last_seen, p.captures, p.statuses, p.mimes)
        for url, p in sorted(model.items())
    ]


# --- declared capabilities --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("store_class", "lacks"),
    [
        (SqliteStore, []),
        # The responses index (ResponseIndexStore) is the SQLite store's only (docs/responses.md);
        # these two keep `response` records as any declared kind, and cannot read them back yet.
        (PostgresStore, ["responses"]),
        (ElasticsearchStore, ["responses"]),
    ],
    ids=["sqlite", "postgresql", "elasticsearch"],
)
def test_built_in_stores_implement_every_protocol(store_class: type, lacks: list[str]) -> None:
    assert missing_capabilities(store_class, list(CAPABILITIES)) == lacks
    # The Protocols a run does not ask for by name: writes awaited on the reactor, a kind read mid-crawl.
    assert isinstance(store_class, AsyncWritingStore)
    assert isinstance(store_class, KindReadingStore)
    assert store_class.kinds == frozenset({"url", KEYED_KINDS})


# --- a third-party store with the writing Protocol only ----------------------------------------

STORE_SOURCE = Path(__file__).parent / "plugins" / "trawl-text-store"
URLS = ["http://example.com/", "http://example.com/a", "http://example.com/b"]


@pytest.fixture(scope="module")
def store_plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("src") / STORE_SOURCE.name
    shutil.copytree(STORE_SOURCE, source)
    processes.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(source)],
        check=True,
    )  # fmt: skip
    return target


@pytest.fixture(scope="module")
def server():
    with FakeCdxServer([make_capture(u, "20200101000000") for u in URLS], lines_per_page=10) as srv:
        yield srv


def test_writing_only_store_lacks_the_rest(store_plugin: Path) -> None:
    sys.path.insert(0, str(store_plugin))
    try:
        from trawl_text_store import TextStore  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(store_plugin))
    assert missing_capabilities(TextStore, ALL) == ["resume", "read", "search", "report"]


def test_writing_only_store_works_for_a_plain_crawl(workdir: Path, server: FakeCdxServer, store_plugin: Path):
    out = workdir / "stored.txt"
    settings = {"WAYBACK_BASE_URL": server.base_url, "STORE_URI": f"text://{out}"}
    result = run_scrapy(
        workdir, *crawl_args("wayback", DOMAIN, settings), env={"PYTHONPATH": str(store_plugin)}
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert sorted(out.read_text().split()) == URLS


@pytest.mark.parametrize(
    ("args", "lacks"),
    [
        (["-s", "JOBDIR=job"], "ResumableStore (resuming a crawl (JOBDIR))"),
        (["-o", "urls.txt"], "ReadableStore (exports from the store (crawl all -o))"),
    ],
)
def test_writing_only_store_is_refused_where_it_cannot_serve(
    workdir: Path, server: FakeCdxServer, store_plugin: Path, args: list[str], lacks: str
) -> None:
    settings = {"WAYBACK_BASE_URL": server.base_url, "STORE_URI": f"text://{workdir / 'x.txt'}"}
    before = len(server.requests)
    source = "all" if "-o" in args else "wayback"
    result = run_scrapy(
        workdir, *crawl_args(source, DOMAIN, settings, *args), env={"PYTHONPATH": str(store_plugin)}
    )
    assert result.returncode == 2
    assert_no_traceback(result)
    errors = [line for line in result.stderr.splitlines() if line.startswith("trawl: error:")]
    assert errors == [f"trawl: error: the 'text' store (TextStore) does not implement {lacks}"]
    assert len(server.requests) == before  # refused before anything was sent


def test_writing_only_store_cannot_be_searched(workdir: Path, store_plugin: Path) -> None:
    result = run_scrapy(workdir, "search", "*", "--store", f"text://{workdir / 'x.txt'}",
                        env={"PYTHONPATH": str(store_plugin)})  # fmt: skip
    assert result.returncode == 2
    assert_no_traceback(result)
    assert "trawl: error: the 'text' store (TextStore) does not implement SearchableStore (trawl search)" in (
        result.stderr
    )


def test_writing_only_store_cannot_report(workdir: Path, store_plugin: Path) -> None:
    store = f"text://{workdir / 'x.txt'}"
    result = run_scrapy(
        workdir, "report", "new", "--domain", DOMAIN, "--store", store, env={"PYTHONPATH": str(store_plugin)}
    )
    assert result.returncode == 2
    assert_no_traceback(result)
    assert result.stderr == (
        "trawl: error: the 'text' store (TextStore) does not implement ReportingStore (trawl report new)\n"
    )
