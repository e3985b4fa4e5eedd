"""The Elasticsearch store: templates, documents, merges, 429s, retries, dead letters, replay.

Runs against noida-db's Elasticsearch-compatible server (started here on a free
loopback port), or against a real cluster when ``ELASTICSEARCH_URL`` is set.
Every test writes under its own index prefix, so they share one server.

What a user sees is driven through real ``scrapy crawl wayback`` runs against
the local CDX server (the data set of tests/helpers/sqlite_store.py: the stores
must agree); merge rules, concurrency and retried requests are checked on the store directly.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import polars as pl
import pytest
from elasticsearch import Elasticsearch

from trawl.errors import StoreError, TrawlUsageError
from trawl.pipeline.context import RunContext
from trawl.records.batches import Batch, UrlBatch
from trawl.stores.contract import KEYED_KINDS, AsyncWritingStore, missing_capabilities
from trawl.stores.elasticsearch import ElasticsearchStore
from trawl.stores.elasticsearch.connection import make_client, parse_uri
from trawl.stores.elasticsearch.deadletters import replay_dead_letters
from trawl.stores.elasticsearch.documents import url_id

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
    from tests.helpers.sqlite_store import EXPECTED, LINES_PER_PAGE, merge_captures
    from tests.servers.ia_cdx import FakeCdxServer
    from tests.servers.noida import RejectingProxy, elasticsearch_url, es_settings, free_port
except ImportError:
    from conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy  # type: ignore[no-redef]
    from helpers.sqlite_store import EXPECTED, LINES_PER_PAGE, merge_captures  # type: ignore[no-redef]
    from servers.ia_cdx import FakeCdxServer  # type: ignore[no-redef]
    from servers.noida import RejectingProxy, elasticsearch_url, es_settings, free_port  # type: ignore[no-redef]

DOMAIN = "example.com"


@pytest.fixture(scope="module")
def es_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with elasticsearch_url(tmp_path_factory.mktemp("noida")) as url:
        yield url


@pytest.fixture(scope="module")
def es(es_url: str) -> Iterator[Elasticsearch]:
    client = Elasticsearch(es_url)
    yield client
    client.close()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeCdxServer]:
    with FakeCdxServer(merge_captures(), lines_per_page=LINES_PER_PAGE) as srv:
        yield srv


@pytest.fixture
def prefix() -> str:
    return f"trawltest-{uuid.uuid4().hex[:10]}"


def store_uri(url: str) -> str:
    return url.replace("http://", "elasticsearch://", 1).replace("https://", "elasticsearch+https://", 1)


def crawl(
    workdir: Path, server: FakeCdxServer, url: str, prefix: str, *extra: str, **settings: Any
) -> CrawlResult:
    values: dict[str, object] = {
        "WAYBACK_BASE_URL": server.base_url,
        "PROGRESS_INTERVAL": 0,
        "STORE_URI": store_uri(url),
        "ELASTICSEARCH_INDEX_PREFIX": prefix,
        **settings,
    }
    return run_scrapy(workdir, *crawl_args("wayback", DOMAIN, values, "-a", "filters=false", *extra))


def stat(result: CrawlResult, name: str) -> str | None:
    value = result.stat(name)
    return None if value is None else value.rstrip("}").strip("'")


def assert_complete(result: CrawlResult) -> None:
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    assert result.errors == []
    assert stat(result, "trawl/outcome") == "complete"


def documents(es: Elasticsearch, prefix: str) -> dict[str, dict]:
    es.indices.refresh(index=f"{prefix}-urls-*")
    hits = es.search(index=f"{prefix}-urls-*", size=1000, query={"match_all": {}})["hits"]["hits"]
    return {hit["_source"]["url"]["full"]: {"_id": hit["_id"], **hit["_source"]} for hit in hits}


def summary(docs: dict[str, dict]) -> dict[str, tuple]:
    """What a document says about its URL, in the SQLite store's shape (tests/helpers/sqlite_store.py)."""
    return {
        url: (
            d["url"]["domain"],
            ",".join(d["trawl"]["sources"]),
            d["trawl"].get("first_seen"),
            d["trawl"].get("last_seen"),
            d["trawl"]["captures"],
            ",".join(str(s) for s in d["trawl"]["status_codes"]),
            ",".join(d["trawl"]["mime_types"]),
        )
        for url, d in docs.items()
    }


# --------------------------------------------------------------------------------------
# Crawls
# --------------------------------------------------------------------------------------


def test_crawl_stores_exactly_the_expected_documents(
    workdir: Path, server: FakeCdxServer, es_url: str, es: Elasticsearch, prefix: str
) -> None:
    first = crawl(workdir, server, es_url, prefix)
    assert_complete(first)
    assert stat(first, "trawl/urls_new") == "5"
    docs = documents(es, prefix)
    # The same records the SQLite store keeps for the same crawl.
    assert summary(docs) == EXPECTED
    for url, doc in docs.items():
        assert doc["_id"] == hashlib.sha256(url.encode()).hexdigest() == url_id(url)
    run_id = stat(first, "trawl/run_id")
    split = docs["https://example.com/split"]
    assert split["url"] == {
        "full": "https://example.com/split",
        "original": "https://example.com/split",
        "scheme": "https",
        "domain": "example.com",
        "registered_domain": "example.com",
        "top_level_domain": "com",
        "port": 443,
        "path": "/split",
    }
    assert split["trawl"]["run_ids"] == [run_id]
    assert split["trawl"]["first_run"] == split["trawl"]["last_run"] == run_id
    assert split["@timestamp"] == "2013-01-01T00:00:00Z"  # the first capture
    assert docs["https://blog.example.com/c"]["url"]["subdomain"] == "blog"

    # A second run: nothing new, no duplicate, capture counts not doubled.
    second = crawl(workdir, server, es_url, prefix)
    assert_complete(second)
    assert stat(second, "trawl/urls_new") == "0"
    again = documents(es, prefix)
    assert summary(again) == EXPECTED
    assert again["https://example.com/split"]["trawl"]["run_ids"] == [run_id, stat(second, "trawl/run_id")]
    assert again["https://example.com/split"]["trawl"]["first_run"] == run_id
    # Runs and pages are recorded next to the URLs.
    es.indices.refresh(index=f"{prefix}-runs")
    runs = es.search(index=f"{prefix}-runs", query={"match_all": {}})["hits"]["hits"]
    assert sorted(r["_source"]["finish_reason"] for r in runs) == ["finished", "finished"]


def test_templates_are_composable_and_strict(
    workdir: Path, server: FakeCdxServer, es_url: str, es: Elasticsearch, prefix: str
) -> None:
    assert_complete(crawl(workdir, server, es_url, prefix))
    template = es.indices.get_index_template(name=f"{prefix}-urls")["index_templates"][0]["index_template"]
    assert template["index_patterns"] == [f"{prefix}-urls-*"]
    assert template["composed_of"] == [f"{prefix}-urls-settings", f"{prefix}-urls-mappings"]
    components = es.cluster.get_component_template(name=f"{prefix}-urls-mappings")["component_templates"]
    mappings = components[0]["component_template"]["template"]["mappings"]
    assert mappings["dynamic"] == "strict"
    url_fields = set(mappings["properties"]["url"]["properties"])
    assert {"full", "original", "domain", "registered_domain", "subdomain", "top_level_domain", "scheme",
            "port", "path", "query", "extension"} <= url_fields  # fmt: skip
    # A new index of the pattern gets the mappings; strict refuses unknown fields.
    es.index(index=f"{prefix}-urls-extra", id="x", document={"url": {"full": "https://example.com/x"}})
    with pytest.raises(Exception, match="strict"):
        es.index(index=f"{prefix}-urls-extra", id="y", document={"surprise": 1})


def test_unreachable_cluster_is_one_clear_line(workdir: Path, server: FakeCdxServer, prefix: str) -> None:
    result = crawl(workdir, server, f"http://127.0.0.1:{free_port()}", prefix, ELASTICSEARCH_TIMEOUT=2)
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1, result.stderr[-3000:]
    assert "cannot reach Elasticsearch at http://127.0.0.1:" in result.errors[0]
    assert stat(result, "trawl/outcome") != "complete"


@pytest.mark.parametrize(
    "uri",
    [
        "elasticsearch://",
        "elasticsearch://host:9200/index",
        "elasticsearch://host:notaport",
        "elasticsearch://h?x=1",
    ],
)
def test_bad_uri_is_a_usage_error(workdir: Path, server: FakeCdxServer, uri: str) -> None:
    with pytest.raises(TrawlUsageError, match="STORE_URI"):
        parse_uri(uri)
    server.clear_requests()
    result = run_scrapy(
        workdir, *crawl_args("wayback", DOMAIN, {"STORE_URI": uri, "WAYBACK_BASE_URL": server.base_url})
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert_no_traceback(result)
    assert [line for line in result.stderr.splitlines() if "error" in line.lower()][0].startswith(
        "trawl: error: STORE_URI"
    )
    assert server.requests == []


def test_uri_forms() -> None:
    assert parse_uri("elasticsearch://127.0.0.1").url == "http://127.0.0.1:9200"
    assert parse_uri("elasticsearch+http://es:9201").url == "http://es:9201"
    target = parse_uri("elasticsearch+https://elastic:s%40cret@es.internal:9243")
    assert target.url == "https://es.internal:9243"
    assert target.basic_auth == ("elastic", "s@cret")


# --------------------------------------------------------------------------------------
# 429s and dead letters
# --------------------------------------------------------------------------------------


def test_transient_rejections_are_retried(
    workdir: Path, server: FakeCdxServer, es_url: str, es: Elasticsearch, prefix: str
) -> None:
    # Every document of the first two bulk requests is refused with 429, then the cluster recovers.
    with RejectingProxy(es_url, reject=lambda doc, n: n <= 2 and b'"url":{' in doc) as proxy:
        result = crawl(workdir, server, proxy.url, prefix, ELASTICSEARCH_BACKOFF=0.01)
    assert_complete(result)
    assert proxy.rejected > 0
    assert int(stat(result, "trawl/elasticsearch/rejected_429") or 0) == proxy.rejected
    assert stat(result, "trawl/elasticsearch/dead_letters") is None
    assert not (workdir / "trawl-es-dead-letters.ndjson").exists()
    assert summary(documents(es, prefix)) == EXPECTED


def test_forced_rejection_goes_to_dead_letters_and_replay_completes(
    workdir: Path, server: FakeCdxServer, es_url: str, es: Elasticsearch, prefix: str
) -> None:
    victim = b'"full":"https://example.com/b"'
    with RejectingProxy(es_url, reject=lambda doc, n: victim in doc) as proxy:
        result = crawl(
            workdir,
            server,
            proxy.url,
            prefix,
            ELASTICSEARCH_RETRIES=2,
            ELASTICSEARCH_BACKOFF=0.01,
            BATCH_COALESCE_ROWS=0,  # one batch per page: the URL below is on two pages
        )
    # Not silently lost: the run says so, and the document waits in the dead-letter file. The URL
    # is on two pages (two batches): each batch's part of it is kept, to be merged on replay.
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 2
    for line in result.errors:
        assert "1 of" in line and "HTTP 429" in line and "es-replay" in line
    assert proxy.rejected == 2 * 3  # two batches, each the first try and two more
    dead_file = workdir / "trawl-es-dead-letters.ndjson"
    lines = [orjson.loads(line) for line in dead_file.read_bytes().splitlines()]
    assert sorted((d["url"], d["status"], d["error"]["type"], d["first_seen"]) for d in lines) == [
        ("https://example.com/b", 429, "es_rejected_execution_exception", "20110101000000"),
        ("https://example.com/b", 429, "es_rejected_execution_exception", "20120101000000"),
    ]
    assert {d["run"] for d in lines} == {stat(result, "trawl/run_id")}
    docs = documents(es, prefix)
    assert "https://example.com/b" not in docs
    assert summary(docs) == {u: v for u, v in EXPECTED.items() if u != "https://example.com/b"}

    replay = run_scrapy(
        workdir,
        "es-replay",
        "-s",
        f"STORE_URI={store_uri(es_url)}",
        "-s",
        f"ELASTICSEARCH_INDEX_PREFIX={prefix}",
    )
    assert replay.returncode == 0, replay.stderr
    assert "replayed 2 URLs" in replay.stdout
    assert not dead_file.exists()
    assert summary(documents(es, prefix)) == EXPECTED

    # A rerun after the replay merges as usual: nothing new, nothing doubled.
    rerun = crawl(workdir, server, es_url, prefix)
    assert_complete(rerun)
    assert stat(rerun, "trawl/urls_new") == "0"
    assert summary(documents(es, prefix)) == EXPECTED


def test_replay_keeps_what_still_fails(
    workdir: Path, server: FakeCdxServer, es_url: str, prefix: str
) -> None:
    victim = b'"full":"https://example.com/b"'
    with RejectingProxy(es_url, reject=lambda doc, n: victim in doc) as proxy:
        # one batch per page: the URL is on two pages
        result = crawl(workdir, server, proxy.url, prefix, ELASTICSEARCH_RETRIES=0, BATCH_COALESCE_ROWS=0)
        assert result.returncode == 1
        replay = run_scrapy(
            workdir,
            "es-replay",
            "-s", f"STORE_URI={store_uri(proxy.url)}",
            "-s", f"ELASTICSEARCH_INDEX_PREFIX={prefix}",
            "-s", "ELASTICSEARCH_RETRIES=0",
        )  # fmt: skip
    assert replay.returncode == 1
    assert "2 still fail" in replay.stdout
    assert len((workdir / "trawl-es-dead-letters.ndjson").read_bytes().splitlines()) == 2


# --------------------------------------------------------------------------------------
# The store directly: the contract, merges, sources, workers, retried requests
# --------------------------------------------------------------------------------------


class _Stats:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get_stats(self) -> dict[str, Any]:
        return self.values

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] = self.values.get(key, start) + count


def open_store(
    url: str, prefix: str, run_id: str, source: str = "wayback", **settings: Any
) -> ElasticsearchStore:
    crawler = SimpleNamespace(
        settings=es_settings(settings, ELASTICSEARCH_INDEX_PREFIX=prefix), stats=_Stats()
    )
    spider = SimpleNamespace(name=source)
    inputs = {"target": SimpleNamespace(domain=DOMAIN)}
    context = RunContext(crawler=crawler, spider=spider, run_id=run_id, plugins=None, inputs=inputs)  # type: ignore[arg-type]
    store = ElasticsearchStore(store_uri(url), context)
    store.open()
    return store


def make_batch(
    rows: list[tuple[str, str, str, int, str, str]], source: str = "wayback", page: str = "",
    hosts: list[str] | None = None,
) -> UrlBatch:  # fmt: skip
    return UrlBatch.from_columns(
        source,
        urls=[r[0] for r in rows],
        hosts=hosts or [DOMAIN] * len(rows),
        first_seen=[r[1] for r in rows],
        last_seen=[r[2] for r in rows],
        captures=[r[3] for r in rows],
        statuses=[r[4] for r in rows],
        mimes=[r[5] for r in rows],
        page=page,
        page_rows=len(rows),
    )


def column(batch: UrlBatch, name: str) -> list[Any]:
    return batch.frame.get_column(name).to_list()


A = "https://example.com/a"
B = "https://example.com/b"
C = "https://example.com/c"


def facts(es: Elasticsearch, prefix: str) -> dict[str, tuple]:
    return {u: s[2:] for u, s in summary(documents(es, prefix)).items()}


def test_the_store_implements_every_capability() -> None:
    capabilities = ["write", "resume", "read", "search", "report", "read_kinds"]
    assert missing_capabilities(ElasticsearchStore, capabilities) == []
    assert isinstance(ElasticsearchStore, AsyncWritingStore)
    assert ElasticsearchStore.kinds == frozenset({"url", KEYED_KINDS})


def test_write_batch_inserts_then_merges_like_sqlite(es_url: str, es: Elasticsearch, prefix: str) -> None:
    """``test_sqlite_store.test_write_batch_inserts_then_merges``, on Elasticsearch."""
    store = open_store(es_url, prefix, "run-1")
    one = make_batch(
        [(A, "20100101000000", "20120101000000", 2, "200", "text/html"),
         (B, "20110101000000", "20110101000000", 1, "404", "text/html")]
    )  # fmt: skip
    assert store.write_batch(one) == 2
    assert column(one, "new") == [True, True]
    assert column(one, "repeat") == [False, False]
    two = make_batch(
        [(A, "20090101000000", "20110101000000", 3, "301", "text/plain"),
         (C, "20130101000000", "20130101000000", 1, "", "")]
    )  # fmt: skip
    assert store.write_batch(two) == 1
    assert column(two, "new") == [False, True]
    assert column(two, "repeat") == [True, False]  # this run wrote A before; C is new
    # The batch now carries the merged record (what exports write).
    assert two.frame.select("first_seen", "last_seen", "captures", "statuses", "mimes").row(0) == (
        "20090101000000",
        "20120101000000",
        5,
        ["200", "301"],
        ["text/html", "text/plain"],
    )
    assert store.write_batch(make_batch([])) == 0
    store.close("finished")
    expected = {
        A: ("20090101000000", "20120101000000", 5, "200,301", "text/html,text/plain"),
        B: ("20110101000000", "20110101000000", 1, "404", "text/html"),
        C: ("20130101000000", "20130101000000", 1, "", ""),
    }
    assert facts(es, prefix) == expected

    store = open_store(es_url, prefix, "run-2")
    first = make_batch([(A, "20100101000000", "20120101000000", 2, "200", "text/html")])
    assert store.write_batch(first) == 0
    assert column(first, "repeat") == [False]  # run-1 wrote it, not this run
    rerun = make_batch(
        [(A, "20090101000000", "20110101000000", 3, "301", "text/plain"),
         (C, "20130101000000", "20130101000000", 1, "", "")]
    )  # fmt: skip
    assert store.write_batch(rerun) == 0
    assert column(rerun, "new") == [False, False]
    assert column(rerun, "repeat") == [True, False]
    store.close("finished")
    assert facts(es, prefix) == expected  # 5 for A: the best run, not 5 + 2 + 3


def test_a_second_source_merges_its_provenance(es_url: str, es: Elasticsearch, prefix: str) -> None:
    store = open_store(es_url, prefix, "run-1", "wayback")
    store.write_batch(make_batch([(A, "20100101000000", "20120101000000", 2, "200", "text/html")]))
    store.close("finished")
    other = open_store(es_url, prefix, "run-2", "otx")
    batch = make_batch(
        [(A, "20080101000000", "20090101000000", 4, "404", "application/json"),
         (B, "20150101000000", "20150101000000", 1, "200", "text/html")],
        source="otx",
    )  # fmt: skip
    assert other.write_batch(batch) == 1
    assert column(batch, "sources") == [["otx", "wayback"], ["otx"]]
    other.close("finished")
    docs = documents(es, prefix)
    assert summary(docs)[A] == (
        DOMAIN, "otx,wayback", "20080101000000", "20120101000000", 6, "200,404", "application/json,text/html"
    )  # fmt: skip
    assert docs[A]["trawl"]["source_counts"] == {"wayback": ["run-1", 2, 2], "otx": ["run-2", 4, 4]}
    assert docs[A]["trawl"]["run_ids"] == ["run-1", "run-2"]
    assert len(docs) == 2


def test_concurrent_workers_do_not_duplicate(es_url: str, es: Elasticsearch, prefix: str) -> None:
    """Four workers (two sources, two runs each) write the same 300 URLs at once."""
    urls = [f"https://example.com/p{i}" for i in range(300)]
    stores = [
        open_store(es_url, prefix, f"run-{n}", source, ELASTICSEARCH_BULK_DOCS=50)
        for n, source in enumerate(["wayback", "wayback", "otx", "otx"])
    ]
    new_counts: list[int] = []
    barrier = threading.Barrier(len(stores))

    def work(store: ElasticsearchStore) -> None:
        batch = make_batch([(u, "20200101000000", "20200101000000", 1, "200", "text/html") for u in urls],
                           source=store.context.source)  # fmt: skip
        barrier.wait()
        new_counts.append(store.write_batch(batch))

    threads = [threading.Thread(target=work, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for s in stores:
        s.close("finished")
    assert sum(new_counts) == len(urls)  # each URL created by exactly one worker
    docs = documents(es, prefix)
    assert sorted(docs) == sorted(urls)
    for doc in docs.values():
        assert doc["trawl"]["sources"] == ["otx", "wayback"]
        assert doc["trawl"]["captures"] == 2  # per source the best run: 1 + 1
        assert sorted(doc["trawl"]["run_ids"]) == ["run-0", "run-1", "run-2", "run-3"]


def test_resumed_run_skips_pages_it_stored(es_url: str, es: Elasticsearch, prefix: str) -> None:
    store = open_store(es_url, prefix, "run-1")
    assert (
        store.write_batch(make_batch([(A, "20100101000000", "20100101000000", 2, "200", "")], page="page=0"))
        == 1
    )
    store.close("shutdown")
    resumed = open_store(es_url, prefix, "run-1")
    assert resumed.done_pages("wayback") == {"page=0": 1}
    again = make_batch([(A, "20100101000000", "20100101000000", 2, "200", "")], page="page=0")
    assert resumed.write_batch(again) == 0
    assert (column(again, "new"), column(again, "repeat")) == ([False], [True])
    assert resumed.context.stats.values["trawl/pages_already_stored"] == 1
    resumed.close("finished")
    assert facts(es, prefix)[A][2] == 2  # not counted twice


def test_read_runs_gives_what_the_runs_touched(es_url: str, es: Elasticsearch, prefix: str) -> None:
    store = open_store(es_url, prefix, "run-1")
    store.write_batch(make_batch([(A, "20100101000000", "20100101000000", 1, "200", ""),
                                  (B, "20100101000000", "20100101000000", 1, "200", "")]))  # fmt: skip
    store.close("finished")
    store = open_store(es_url, prefix, "run-2")
    store.write_batch(make_batch([(B, "20110101000000", "20110101000000", 1, "200", ""),
                                  (C, "20110101000000", "20110101000000", 1, "200", "")]))  # fmt: skip
    store.close("finished")
    settings = es_settings(ELASTICSEARCH_INDEX_PREFIX=prefix)
    batches = list(ElasticsearchStore.read_runs(store_uri(es_url), ["run-2"], settings, size=1))
    assert [len(b) for b in batches] == [1, 1]
    rows = [(r.url, r.new, r.last_seen, r.sources) for b in batches for r in b.records()]
    assert rows == [(B, False, "20110101000000", ["wayback"]), (C, True, "20110101000000", ["wayback"])]


def test_read_domain_gives_the_domain_and_its_subdomains(es_url: str, es: Elasticsearch, prefix: str) -> None:
    urls = {
        "https://example.com/z": "example.com",
        "https://blog.example.com/a": "blog.example.com",
        "https://a.b.example.com/": "a.b.example.com",
        "http://example.com/a": "example.com",
        "https://notexample.com/a": "notexample.com",  # shares the suffix, not the domain
        "https://example.org/a": "example.org",
    }
    store = open_store(es_url, prefix, "run-1")
    row = ("20100101000000", "20100101000000", 1, "200", "text/html")
    store.write_batch(make_batch([(u, *row) for u in urls], hosts=list(urls.values())))
    store.close("finished")
    settings = es_settings(ELASTICSEARCH_INDEX_PREFIX=prefix)
    batches = list(ElasticsearchStore.read_domain(store_uri(es_url), "Example.com", settings, size=2))
    assert [len(b) for b in batches] == [2, 2]
    got = [r.url for b in batches for r in b.records()]
    assert got == sorted(
        u for u, host in urls.items() if host == "example.com" or host.endswith(".example.com")
    )
    first = next(batches[0].records())
    assert (first.host, first.captures, first.statuses, first.mimes) == (
        "example.com", 1, ["200"], ["text/html"]
    )  # fmt: skip
    sub = list(ElasticsearchStore.read_domain(store_uri(es_url), "b.example.com", settings))
    assert [r.url for b in sub for r in b.records()] == ["https://a.b.example.com/"]


def test_async_write_path_gives_the_same_result(es_url: str, es: Elasticsearch, prefix: str) -> None:
    store = open_store(es_url, prefix, "run-1")
    store.write_batch(make_batch([(A, "20100101000000", "20120101000000", 2, "200", "text/html")]))
    batch = make_batch([(A, "20090101000000", "20110101000000", 3, "301", "text/plain"),
                        (C, "20130101000000", "20130101000000", 1, "", "")])  # fmt: skip

    async def write() -> int:
        new = await store.write_batch_async(batch)
        await store.async_client.close()
        store.async_client = None
        return new

    assert asyncio.run(write()) == 1
    assert (column(batch, "new"), column(batch, "repeat"), column(batch, "captures")) == (
        [False, True], [True, False], [5, 1]
    )  # fmt: skip
    store.close("finished")
    assert facts(es, prefix)[A] == ("20090101000000", "20120101000000", 5, "200,301", "text/html,text/plain")


def test_write_to_a_vanished_cluster_keeps_the_batch(tmp_path: Path, es_url: str, prefix: str) -> None:
    store = open_store(es_url, prefix, "run-1", ELASTICSEARCH_DEAD_LETTERS=str(tmp_path / "dead.ndjson"),
                       ELASTICSEARCH_TIMEOUT=2, ELASTICSEARCH_RETRIES=1,
                       ELASTICSEARCH_BACKOFF=0.01)  # fmt: skip
    # The cluster goes away after the store opened (its client now talks to a closed port).
    store.client.close()
    store.client = make_client(store_uri(f"http://127.0.0.1:{free_port()}"), store.settings)
    with pytest.raises(StoreError, match="dead.ndjson"):
        store.write_batch(make_batch([(A, "20100101000000", "20100101000000", 1, "200", "")]))
    lines = (tmp_path / "dead.ndjson").read_bytes().splitlines()
    assert [orjson.loads(line)["url"] for line in lines] == [A]


def test_dead_letters_replay_through_the_merge(
    tmp_path: Path, es_url: str, es: Elasticsearch, prefix: str
) -> None:
    """``replay_dead_letters`` directly (the crawl tests run ``scrapy es-replay``), old lines included."""
    dead = tmp_path / "dead.ndjson"
    with RejectingProxy(es_url, reject=lambda doc, n: b'"full":"https://example.com/b"' in doc) as proxy:
        store = open_store(
            proxy.url, prefix, "run-1", ELASTICSEARCH_RETRIES=0, ELASTICSEARCH_DEAD_LETTERS=str(dead)
        )
        batch = make_batch([(A, "20100101000000", "20100101000000", 1, "200", "text/html"),
                            (B, "20110101000000", "20120101000000", 3, "200", "text/html")])  # fmt: skip
        assert store.write_batch(batch) == 1
        assert column(batch, "new") == [True, False]
        store.close("finished")
    assert store.context.stats.values["trawl/elasticsearch/dead_letters"] == 1
    (line,) = [orjson.loads(raw) for raw in dead.read_bytes().splitlines()]
    assert (line["url"], line["status"], line["sources"], line["statuses"]) == (B, 429, ["wayback"], ["200"])
    # A line as the store wrote them before sets were lists (comma-joined text) still replays.
    old = {**line, "url": C, "sources": "otx,wayback", "statuses": "200,404", "mimes": "text/html"}
    with open(dead, "ab") as file:
        file.write(orjson.dumps(old) + b"\n")
    settings = es_settings(ELASTICSEARCH_INDEX_PREFIX=prefix, ELASTICSEARCH_DEAD_LETTERS=str(dead))
    result = replay_dead_letters(store_uri(es_url), settings)
    assert (result.replayed, result.left) == (2, 0)
    assert not dead.exists()
    got = facts(es, prefix)
    assert got[B] == ("20110101000000", "20120101000000", 3, "200", "text/html")
    assert summary(documents(es, prefix))[C][1] == "otx,wayback"
    assert documents(es, prefix)[B]["trawl"]["source_counts"] == {"wayback": ["run-1", 3, 3]}


def _write(store: ElasticsearchStore, batch: UrlBatch, use_async: bool) -> int:
    if not use_async:
        return store.write_batch(batch)

    async def write() -> int:
        try:
            return await store.write_batch_async(batch)
        finally:
            await store.async_client.close()
            store.async_client = None

    return asyncio.run(write())


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_bulk_request_that_timed_out_is_retried_and_lands_once(
    es_url: str, es: Elasticsearch, prefix: str, use_async: bool
) -> None:
    """The request was written but the client timed out: sent again, it is not merged into itself.

    Bulk requests: 1 creates A and B (times out), 2 is its retry (409s, read back:
    the documents the first one wrote); 3 creates A (409) and C, 4 writes A's
    merge (times out), 5 is its retry (409, read back: that merge).
    """
    # 2 s: far more than a request to the local server takes, even on a busy machine; the stall outlasts it.
    with RejectingProxy(es_url, fail=lambda n: "timeout" if n in (1, 4) else None, stall=4) as proxy:
        store = open_store(proxy.url, prefix, "run-1", ELASTICSEARCH_TIMEOUT=2, ELASTICSEARCH_BACKOFF=0.01)
        one = make_batch(
            [(A, "20100101000000", "20120101000000", 2, "200", "text/html"),
             (B, "20110101000000", "20110101000000", 1, "404", "text/html")]
        )  # fmt: skip
        assert _write(store, one, use_async) == 2
        assert (column(one, "new"), column(one, "repeat")) == ([True, True], [False, False])
        two = make_batch(
            [(A, "20090101000000", "20110101000000", 3, "301", "text/plain"),
             (C, "20130101000000", "20130101000000", 1, "", "")]
        )  # fmt: skip
        assert _write(store, two, use_async) == 1
        assert (column(two, "new"), column(two, "repeat"), column(two, "captures")) == (
            [False, True], [True, False], [5, 1]
        )  # fmt: skip
        store.close("finished")
    assert proxy.failed == {"timeout": 2}
    assert proxy.bulk_requests == 5
    assert store.context.stats.values["trawl/elasticsearch/retried_requests"] == 2
    assert "trawl/elasticsearch/dead_letters" not in store.context.stats.values
    assert facts(es, prefix) == {
        A: ("20090101000000", "20120101000000", 5, "200,301", "text/html,text/plain"),  # 2 + 3, not doubled
        B: ("20110101000000", "20110101000000", 1, "404", "text/html"),
        C: ("20130101000000", "20130101000000", 1, "", ""),
    }


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_503_is_retried_with_backoff_and_the_batch_lands(
    es_url: str, es: Elasticsearch, prefix: str, use_async: bool
) -> None:
    with RejectingProxy(es_url, fail=lambda n: "503" if n == 1 else None) as proxy:
        store = open_store(proxy.url, prefix, "run-1", ELASTICSEARCH_BACKOFF=0.2)
        batch = make_batch([(A, "20100101000000", "20100101000000", 1, "200", ""),
                            (B, "20100101000000", "20100101000000", 1, "200", "")],
                           page="page=0")  # fmt: skip
        started = time.monotonic()
        assert _write(store, batch, use_async) == 2
        waited = time.monotonic() - started
        assert store.done_pages("wayback") == {"page=0": 2}  # the ledger entry went with the retry
        store.close("finished")
    assert waited >= 0.2  # ELASTICSEARCH_BACKOFF before the second try
    assert (proxy.failed, proxy.bulk_requests) == ({"503": 1}, 2)
    assert store.context.stats.values["trawl/elasticsearch/retried_requests"] == 1
    assert sorted(facts(es, prefix)) == [A, B]


def test_retries_of_a_failing_request_are_bounded(tmp_path: Path, es_url: str, prefix: str) -> None:
    dead = tmp_path / "dead.ndjson"
    with RejectingProxy(es_url, fail=lambda n: "503") as proxy:
        store = open_store(proxy.url, prefix, "run-1", ELASTICSEARCH_RETRIES=2, ELASTICSEARCH_BACKOFF=0.01,
                           ELASTICSEARCH_DEAD_LETTERS=str(dead))  # fmt: skip
        with pytest.raises(StoreError, match=r"failed after 2 retries: HTTP 503.*dead\.ndjson"):
            store.write_batch(make_batch([(A, "20100101000000", "20100101000000", 1, "200", "")]))
        store.close("store_error")
    assert proxy.failed == {"503": 3}  # the first try and two more
    assert [orjson.loads(line)["url"] for line in dead.read_bytes().splitlines()] == [A]


def test_crawl_all_exports_from_the_index(
    workdir: Path, server: FakeCdxServer, es_url: str, es: Elasticsearch, prefix: str
) -> None:
    settings = {
        "WAYBACK_BASE_URL": server.base_url,
        "PROGRESS_INTERVAL": 0,
        "STORE_URI": store_uri(es_url),
        "ELASTICSEARCH_INDEX_PREFIX": prefix,
    }
    args = crawl_args(
        "all", DOMAIN, settings, "-a", "sources=wayback", "-a", "filters=false", "-O", "out.jsonl"
    )
    result = run_scrapy(workdir, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [orjson.loads(line) for line in result.lines("out.jsonl")]
    assert [r["url"] for r in rows] == sorted(EXPECTED)
    assert all(r["new"] for r in rows)
    split = next(r for r in rows if r["url"].endswith("/split"))
    assert (split["captures"], split["statuses"]) == (5, ["200", "301"])


def test_a_9x_client_talks_to_an_8x_cluster(
    workdir: Path, server: FakeCdxServer, es_url: str, es: Elasticsearch, prefix: str
) -> None:
    """Elasticsearch 8 refuses ``compatible-with=9``, which the 9.x client sends by default."""
    with RejectingProxy(es_url, es8_headers=True) as proxy:
        result = crawl(workdir, server, proxy.url, prefix)
        searched = run_scrapy(
            workdir, "search", "*", "--count",
            "-s", f"STORE_URI={store_uri(proxy.url)}", "-s", f"ELASTICSEARCH_INDEX_PREFIX={prefix}",
        )  # fmt: skip
    assert_complete(result)
    assert summary(documents(es, prefix)) == EXPECTED
    assert searched.stdout == f"{len(EXPECTED)}\n", searched.stderr
    assert proxy.compat_seen == {"8"}


# --------------------------------------------------------------------------------------
# trawl report new, and the run summary's new URLs
# --------------------------------------------------------------------------------------

FIRST = ["https://example.com/a", "https://example.com/b", "https://sub.example.com/c"]
LATER = ["https://example.com/d", "https://example.com/e"]


def report(workdir: Path, es_url: str, prefix: str, *args: str) -> CrawlResult:
    result = run_scrapy(
        workdir, "report", "new", "--domain", DOMAIN, *args,
        "-s", f"STORE_URI={store_uri(es_url)}", "-s", f"ELASTICSEARCH_INDEX_PREFIX={prefix}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    return result


def test_report_new_reads_the_index_like_the_sqlite_store(workdir: Path, es_url: str, prefix: str) -> None:
    from tests.servers.ia_cdx import make_capture
    from tests.servers.receiver import FakeReceiver

    with FakeCdxServer([make_capture(u, "20200101000000") for u in FIRST], lines_per_page=2) as cdx:
        assert_complete(crawl(workdir, cdx, es_url, prefix))
        first = report(workdir, es_url, prefix)
        assert first.stdout.splitlines() == sorted(FIRST)
        assert first.stderr.startswith("trawl: 3 new URLs for example.com in the last crawl (job ")
        cdx.set_captures([make_capture(u, "20210101000000") for u in FIRST + LATER])
        with FakeReceiver() as recv:
            assert_complete(crawl(workdir, cdx, es_url, prefix, NOTIFY_URLS=f"{recv.base_url}/hook"))
        [posted] = recv.bodies()
        assert (posted["new_count"], posted["new_urls"]) == (2, LATER)
        second = report(workdir, es_url, prefix, "-o", "new.jsonl")
        rows = [orjson.loads(line) for line in (workdir / "new.jsonl").read_text().splitlines()]
        assert [r["url"] for r in rows] == LATER
        assert {(r["source"], r["run_id"]) for r in rows} == {("wayback", posted["job_id"])}
        assert "written to new.jsonl" in second.stderr
        assert_complete(crawl(workdir, cdx, es_url, prefix))
    third = report(workdir, es_url, prefix)
    assert third.stdout == ""
    assert third.stderr.startswith("trawl: 0 new URLs for example.com in the last crawl (job ")
    everything = report(workdir, es_url, prefix, "--since", "2000-01-01")
    assert everything.stdout.splitlines() == sorted(FIRST + LATER)
    sub = report(workdir, es_url, prefix, "--since", "2000-01-01", "--domain", "sub.example.com")
    assert sub.stdout.splitlines() == ["https://sub.example.com/c"]


def test_a_runs_index_from_before_jobs_gets_the_field(
    workdir: Path, server: FakeCdxServer, es_url: str, es: Elasticsearch, prefix: str
) -> None:
    from trawl.stores.elasticsearch.templates import RUNS_MAPPINGS

    old = {"dynamic": "strict", "properties": dict(RUNS_MAPPINGS["properties"])}
    del old["properties"]["job"]
    es.indices.create(index=f"{prefix}-runs", mappings=old)
    result = crawl(workdir, server, es_url, prefix)
    assert_complete(result)
    es.indices.refresh(index=f"{prefix}-runs")
    [run] = es.search(index=f"{prefix}-runs", query={"match_all": {}})["hits"]["hits"]
    assert run["_source"]["job"] == stat(result, "trawl/run_id")


# A declared kind's batches wait out a busy cluster as URL batches do
# --------------------------------------------------------------------------------------


class _HostBatch(Batch):
    """A small declared kind: hosts with a summed count (a retry must not add it twice)."""

    __slots__ = ()
    kind = "hostcount"
    SCHEMA = {"host": pl.String, "seen": pl.Int64}
    KEY = ("host",)
    MERGE = {"seen": "sum"}


def _host_batch(hosts: list[str]) -> _HostBatch:
    return _HostBatch("wayback", pl.DataFrame({"host": hosts, "seen": [1] * len(hosts)}))


def _host_counts(es: Elasticsearch, prefix: str) -> dict[str, int]:
    index = f"{prefix}-records-hostcount"
    es.indices.refresh(index=index)
    hits = es.search(index=index, size=100, query={"match_all": {}})["hits"]["hits"]
    return {hit["_source"]["host"]: hit["_source"]["seen"] for hit in hits}


def test_a_kind_batch_refused_with_429_is_retried_and_summed_once(
    es_url: str, es: Elasticsearch, prefix: str
) -> None:
    # Item "b" of the first bulk request is refused with 429; a 503 fails the second request whole.
    with RejectingProxy(
        es_url,
        reject=lambda doc, n: n == 1 and b'"host":"b"' in doc,
        fail=lambda n: "503" if n == 2 else None,
    ) as proxy:
        store = open_store(proxy.url, prefix, "run-1", ELASTICSEARCH_BACKOFF=0.01)
        assert store.write_batch(_host_batch(["a", "b", "c"])) == 3
        store.close("finished")
    assert proxy.rejected == 1 and proxy.failed == {"503": 1}
    assert store.context.stats.values["trawl/elasticsearch/rejected_429"] == 1
    assert store.context.stats.values["trawl/elasticsearch/retried_requests"] == 1
    assert _host_counts(es, prefix) == {"a": 1, "b": 1, "c": 1}


def test_a_kind_batch_still_refused_stops_with_one_line(es_url: str, es: Elasticsearch, prefix: str) -> None:
    with RejectingProxy(es_url, reject=lambda doc, n: b'"host":"b"' in doc) as proxy:
        store = open_store(proxy.url, prefix, "run-1", ELASTICSEARCH_RETRIES=2, ELASTICSEARCH_BACKOFF=0.01)
        with pytest.raises(StoreError, match=r"still refused after 2 retries: 1 hostcount records refused"):
            store.write_batch(_host_batch(["a", "b"]))
        store.close("store_error")
    assert proxy.rejected == 3  # the first try and two more
