"""``scrapy search``: one query language, the same answers from SQLite and Elasticsearch.

One data set (several sources, runs, hosts, extensions, statuses, dates) is
written through both stores' ``write_batch``; every query of the parametrized
list must give, on both, exactly the URLs an independent Python predicate
picks, in the same order. The parser's errors, the SQLite search indexes and
the command's output formats are checked too.

Elasticsearch is noida-db's server, or a real cluster when ELASTICSEARCH_URL is set.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from scrapy.settings import Settings

from trawl.pipeline.context import RunContext
from trawl.records.ecs import url_fields
from trawl.search import ALIASES, FIELDS, QueryError, field_named, parse
from trawl.stores.elasticsearch import ElasticsearchSearcher, ElasticsearchStore
from trawl.stores.elasticsearch.query import ES_FIELDS, to_es
from trawl.stores.sqlite import SqliteStore
from trawl.stores.sqlite.query import SQL_FIELDS, to_sql
from trawl.stores.sqlite.search import SqliteSearcher

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import run_scrapy
    from tests.helpers.search_oracle import Merged, Q, batches, copy_batch, ext, merged
    from tests.servers.noida import elasticsearch_url, es_settings
except ImportError:
    from conftest import run_scrapy  # type: ignore[no-redef]
    from helpers.search_oracle import Merged, Q, batches, copy_batch, ext, merged  # type: ignore[no-redef]
    from servers.noida import elasticsearch_url, es_settings  # type: ignore[no-redef]


# --------------------------------------------------------------------------------------
# The data set (tests/helpers/search_oracle.py), written through both stores
# --------------------------------------------------------------------------------------


def _ctx(source: str, run_id: str, settings: dict[str, Any]) -> RunContext:
    stats = SimpleNamespace(values={}, get_stats=lambda: {}, inc_value=lambda *a, **k: None)
    crawler = SimpleNamespace(settings=Settings(settings), stats=stats)
    spider = SimpleNamespace(name=source)
    inputs = {"target": SimpleNamespace(domain="example.com")}
    return RunContext(crawler=crawler, spider=spider, run_id=run_id, plugins=None, inputs=inputs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    base = tmp_path_factory.mktemp("search")
    db = base / "trawl.db"
    prefix = f"trawlsearch-{uuid.uuid4().hex[:8]}"
    with elasticsearch_url(base / "noida") as url:
        es_uri = url.replace("http://", "elasticsearch://", 1).replace(
            "https://", "elasticsearch+https://", 1
        )
        es_config = es_settings(ELASTICSEARCH_INDEX_PREFIX=prefix)  # trawl's defaults: no fallbacks
        for n, batch in enumerate(batches()):
            run_id = f"run-{n}"
            sqlite = SqliteStore(f"sqlite:///{db}", _ctx(batch.source, run_id, {}))
            sqlite.open()
            sqlite.write_batch(copy_batch(batch))
            sqlite.close("finished")
            es = ElasticsearchStore(es_uri, _ctx(batch.source, run_id, es_config))
            es.open()
            es.write_batch(copy_batch(batch))
            es.close("finished")
        yield SimpleNamespace(
            db=db,
            es_uri=es_uri,
            es_settings=es_config,
            sqlite=lambda: SqliteSearcher(str(db)),
            es=lambda: ElasticsearchSearcher(es_uri, es_config),
            workdir=base,
        )


# --------------------------------------------------------------------------------------
# Queries: both backends against an oracle
# --------------------------------------------------------------------------------------


#: Queries noida-db answers differently from Elasticsearch's documented behaviour.
NOIDA_GAPS = {
    "url:*\\?*": "a backslash in a wildcard pattern does not escape the next character"
    " (Elasticsearch: '\\' escapes * and ?); the pattern matches nothing",
}
REAL_ELASTICSEARCH = bool(os.environ.get("ELASTICSEARCH_URL", "").strip())


@pytest.fixture(scope="module")
def oracle() -> dict[str, Merged]:
    return merged()


def test_the_oracle_matches_what_both_stores_hold(stores: SimpleNamespace, oracle: dict[str, Merged]) -> None:
    """Precondition of the query tests: both stores hold the merged data set."""
    expected = {
        m.url: (
            m.host,
            sorted(m.sources),
            m.first,
            m.last,
            m.captures,
            sorted(m.statuses),
            sorted(m.mimes),
        )
        for m in oracle.values()
    }
    for open_searcher in (stores.sqlite, stores.es):
        with open_searcher() as searcher:
            got = {
                r.url: (r.host, r.sources, r.first_seen, r.last_seen, r.captures, r.statuses, r.mimes)
                for r in searcher.records(parse("*"))
            }
        assert got == expected


@pytest.mark.parametrize(("query", "predicate"), Q, ids=[q for q, _ in Q])
def test_same_answers_on_sqlite_and_elasticsearch(
    stores: SimpleNamespace, oracle: dict[str, Merged], query: str, predicate: Callable[[Merged], bool]
) -> None:
    expected = sorted(m.url for m in oracle.values() if predicate(m))
    node = parse(query)
    with stores.sqlite() as sqlite:
        on_sqlite = [r.url for r in sqlite.records(node)]
        sqlite_count = sqlite.count(node)
    with stores.es() as es:
        on_es = [r.url for r in es.records(node)]
        es_count = es.count(node)
    assert on_sqlite == expected
    assert sqlite_count == len(expected)
    if query in NOIDA_GAPS and not REAL_ELASTICSEARCH:
        # Still wrong on noida-db (when it is fixed this fails: drop the entry).
        assert on_es != expected
        pytest.xfail(f"noida-db gap: {NOIDA_GAPS[query]}")
    assert on_es == expected
    assert es_count == len(expected)


def test_queries_are_not_trivial(oracle: dict[str, Merged]) -> None:
    """Most queries pick some URLs and leave others: a backend that ignored them would fail."""
    sizes = [sum(1 for m in oracle.values() if p(m)) for _, p in Q]
    assert sum(1 for n in sizes if 0 < n < len(oracle)) >= len(Q) - 6


@pytest.mark.parametrize("facet", ["host", "source", "status", "mime", "ext", "scheme", "port", "tld"])
@pytest.mark.parametrize("query", ["*", "domain:example.com NOT ext:js", "first_seen:[2010 TO 2020]"])
def test_same_facets(stores: SimpleNamespace, oracle: dict[str, Merged], facet: str, query: str) -> None:
    node = parse(query)
    with stores.sqlite() as sqlite:
        on_sqlite = sqlite.facet(node, facet, 5)
    with stores.es() as es:
        on_es = es.facet(node, facet, 5)
    assert on_sqlite == on_es
    assert on_sqlite, "a facet with no values tests nothing"
    counts = [n for _, n in on_sqlite]
    assert counts == sorted(counts, reverse=True)


def test_facet_counts_are_right(stores: SimpleNamespace, oracle: dict[str, Merged]) -> None:
    with stores.sqlite() as sqlite:
        sources = sqlite.facet(parse("*"), "source", 10)
    expected: dict[str, int] = {}
    for m in oracle.values():
        for s in m.sources:
            expected[s] = expected.get(s, 0) + 1
    assert sources == sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))


def test_limit(stores: SimpleNamespace, oracle: dict[str, Merged]) -> None:
    with stores.sqlite() as sqlite, stores.es() as es:
        assert [r.url for r in sqlite.records(parse("*"), limit=3)] == sorted(oracle)[:3]
        assert [r.url for r in es.records(parse("*"), limit=3)] == sorted(oracle)[:3]


# --------------------------------------------------------------------------------------
# The parser
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "the query is empty"),
        ("host:", "host: needs a value"),
        ("(host:a", "unclosed '('"),
        ("host:a)", "unmatched ')'"),
        ("colour:red", "unknown field 'colour'"),
        ("first_seen:2020-13", "not a date"),
        ("first_seen:2021-02-30", "not a date"),
        ("first_seen:20*", "takes a date or a range"),
        ("status:abc", "status takes a number"),
        ("captures:>", "> needs a value"),
        ('"abc', "unclosed quote"),
        ("AND x", "AND needs a term before it"),
        ("[1 TO 2]", "needs a field"),
        ("captures:[1 2]", "a range is [low TO high]"),
        ("captures:[1 TO 2", "unclosed range"),
        ("source:[a TO b]", "does not take a range"),
        ("x\\", "escapes nothing"),
        ("host:a OR", "expected a search term"),
    ],
)
def test_bad_queries_get_one_clear_line(query: str, message: str) -> None:
    with pytest.raises(QueryError) as info:
        parse(query)
    text = str(info.value)
    assert message in text
    assert "\n" not in text
    assert text.startswith("bad query:")


def test_escapes_and_quotes() -> None:
    # An escaped or quoted * is a literal star, not a pattern.
    assert to_es(parse("url:a\\*b")) == {"term": {"url.full": {"value": "a*b"}}}
    assert to_es(parse('url:"a*b"')) == {"term": {"url.full": {"value": "a*b"}}}
    assert to_es(parse("path:/x\\*y*")) == {
        "wildcard": {"url.path": {"value": "/x\\*y*", "case_insensitive": True}}
    }
    sql = to_sql(parse("path:/x\\*y*"))
    assert sql.params == ["/x*y%"]


def test_precedence_and_implicit_and() -> None:
    assert to_es(parse("a OR b c")) == to_es(parse("a OR (b AND c)"))
    assert to_es(parse("NOT a b")) == to_es(parse("(NOT a) AND b"))
    assert to_es(parse("-a")) == to_es(parse("NOT a")) == to_es(parse("!a"))
    assert to_es(parse("a && b || c")) == to_es(parse("(a AND b) OR c"))


def test_dates_become_whole_periods() -> None:
    assert to_es(parse("first_seen:[2020 TO 2022]"))["range"]["trawl.first_seen"] == {
        "gte": "20200101000000",
        "lte": "20221231235959",
        "format": "yyyyMMddHHmmss",
    }
    assert to_es(parse("last_seen:2024-02"))["range"]["trawl.last_seen"]["lte"] == "20240229235959"
    assert to_es(parse("last_seen:>2020"))["range"]["trawl.last_seen"] == {
        "gt": "20201231235959",
        "format": "yyyyMMddHHmmss",
    }


@pytest.mark.parametrize("store, mapping", [("sqlite", SQL_FIELDS), ("elasticsearch", ES_FIELDS)])
def test_every_field_has_a_mapping_in_each_store(store: str, mapping: dict[str, str]) -> None:
    """Each store maps the language's fields in its own query module: a field added to
    :mod:`trawl.search.fields` without a translation fails here, not in a user's search."""
    assert sorted(mapping) == sorted(FIELDS), store


def test_document_names_are_aliases_of_the_fields_stored_there() -> None:
    """``url.domain:`` (the names Kibana shows) means the field Elasticsearch keeps under that name."""
    for name, document_field in ES_FIELDS.items():
        assert ES_FIELDS[field_named(document_field).name] == document_field, name
    for alias, name in ALIASES.items():
        if "." in alias:
            assert ES_FIELDS[name] == alias


# --------------------------------------------------------------------------------------
# SQLite: indexes made by the search, not by the store
# --------------------------------------------------------------------------------------


def _indexes(db: Path) -> set[str]:
    with sqlite3.connect(db) as con:
        return {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}


def test_search_creates_the_indexes_it_uses(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    store = SqliteStore(f"sqlite:///{db}", _ctx("wayback", "r1", {}))
    store.open()
    store.write_batch(copy_batch(batches()[0]))
    store.close("finished")
    assert not any(name.startswith("urls_search") for name in _indexes(db))  # the store makes none
    with SqliteSearcher(str(db)) as searcher:
        list(searcher.records(parse("host:api.example.com first_seen:[2020 TO 2022]")))
        where = to_sql(parse("host:api.example.com"))
        plan = " ".join(
            str(row[-1])
            for row in searcher.con.execute(
                f"EXPLAIN QUERY PLAN SELECT url FROM urls WHERE {where.where}", where.params
            )
        )
    assert {"urls_search_host", "urls_search_first_seen"} <= _indexes(db)
    assert "urls_search_host" in plan


# --------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------


def search(stores: SimpleNamespace, *args: str, es: bool = False) -> Any:
    if es:
        store = [
            "-s",
            f"STORE_URI={stores.es_uri}",
            "-s",
            f"ELASTICSEARCH_INDEX_PREFIX={stores.es_settings['ELASTICSEARCH_INDEX_PREFIX']}",
        ]
    else:
        store = ["-s", f"STORE_URI=sqlite:///{stores.db}"]
    return run_scrapy(stores.workdir / "cmd", "search", *args, *store)


@pytest.mark.parametrize("es", [False, True], ids=["sqlite", "elasticsearch"])
def test_command_formats(stores: SimpleNamespace, oracle: dict[str, Merged], es: bool) -> None:
    js = sorted(m.url for m in oracle.values() if ext(m) == "js")
    txt = search(stores, "ext:js", es=es)
    assert txt.returncode == 0, txt.stderr
    assert txt.stdout.splitlines() == js  # not a terminal: one URL per line
    jsonl = search(stores, "ext:js", "--format", "jsonl", es=es)
    rows = [orjson.loads(line) for line in jsonl.stdout.splitlines()]
    assert [r["url"] for r in rows] == js
    assert rows[0].keys() == {
        "url",
        "host",
        "sources",
        "first_seen",
        "last_seen",
        "captures",
        "statuses",
        "mimes",
    }
    assert rows[0]["sources"] == sorted(oracle[js[0]].sources)
    csv = search(stores, "ext:js", "--format", "csv", es=es).stdout.splitlines()
    assert csv[0] == "url,host,sources,first_seen,last_seen,captures,statuses,mimes"
    assert [line.split(",")[0] for line in csv[1:]] == js
    table = search(stores, "ext:js", "--format", "table", es=es).stdout.splitlines()
    assert table[0].split() == ["URL", "CAPTURES", "FIRST", "LAST", "STATUS", "SOURCES"]
    assert table[-1] == f"{len(js)} URLs"
    count = search(stores, "url:*admin*", "--count", es=es)
    assert count.stdout == f"{sum(1 for m in oracle.values() if 'admin' in m.url.lower())}\n"
    facet = search(stores, "*", "--facet", "host", "--size", "2", es=es).stdout.splitlines()
    hosts: dict[str, int] = {}
    for m in oracle.values():
        hosts[m.host] = hosts.get(m.host, 0) + 1
    top = sorted(hosts.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
    assert [line.split() for line in facet] == [[host, str(n)] for host, n in top]


def test_command_query_words_are_joined(stores: SimpleNamespace) -> None:
    joined = search(stores, "host:api.example.com", "AND", "param:id")
    assert joined.stdout.splitlines() == ["https://api.example.com/api/v1/users?id=1&sort=asc"]


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (("host:(",), 2, "trawl: error: bad query: unclosed '('"),
        (("*", "--facet", "colour"), 2, "trawl: error: --facet takes one of"),
        (("*", "--store", "sqlite:///nope.db"), 1, "trawl: error: no SQLite store at 'nope.db'"),
        (("*", "--store", "redis://x"), 2, "trawl: error: no store for STORE_URI scheme 'redis'"),
        (("*", "--store", "elasticsearch://127.0.0.1:1"), 1, "trawl: error: cannot reach Elasticsearch at"),
    ],
)
def test_command_errors_are_one_line(
    stores: SimpleNamespace, args: tuple[str, ...], status: int, message: str
) -> None:
    result = run_scrapy(stores.workdir / "cmd", "search", *args)
    assert result.returncode == status, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(message)


# --------------------------------------------------------------------------------------
# ECS url.* fields (what ext:, port:, tld: ... mean on both backends)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://shop.example.co.uk/a/b/file.tar.gz?x=1&y=",
            {
                "scheme": "https",
                "domain": "shop.example.co.uk",
                "registered_domain": "example.co.uk",
                "subdomain": "shop",
                "top_level_domain": "co.uk",
                "port": 443,
                "path": "/a/b/file.tar.gz",
                "query": "x=1&y=",
                "extension": "gz",
            },
        ),
        ("http://example.com:8080/Main.JS", {"port": 8080, "extension": "js", "path": "/Main.JS"}),
        ("http://example.com/", {"port": 80, "path": "/", "query": None, "extension": None}),
        ("https://example.com/.htaccess", {"extension": None}),
        ("https://example.com/index.php;jsessionid=AB", {"extension": "php"}),
        ("https://example.com/v1.2/items", {"extension": None}),
        ("https://example.com/x.verylongextension", {"extension": None}),
        (
            "http://192.0.2.7/a.txt",
            {"domain": "192.0.2.7", "registered_domain": None, "top_level_domain": None},
        ),
        ("https://a.b.example.com/", {"subdomain": "a.b", "registered_domain": "example.com"}),
    ],
)
def test_ecs_url_fields(url: str, expected: dict[str, Any]) -> None:
    fields = url_fields(url)
    assert fields["full"] == fields["original"] == url
    for key, value in expected.items():
        assert fields.get(key) == value, key
