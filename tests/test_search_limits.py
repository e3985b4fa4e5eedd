"""Query errors and the query language's limits.

Every query ``trawl search`` cannot run is one ``trawl: error: bad query:`` line
and exit status 2, decided by the parser before any store sees it: before the
fix ``'+'`` was an ``IndexError``, 250 parentheses or 1,000 ``-`` a 3,000-line
``RecursionError``, and 50 ``-``, 5,000 ``OR`` terms, a 60 KB value or a 20-digit
number SQLite's or Python's own words with exit status 1. The queries the limits
let through (the deepest, the widest, the longest value) run on SQLite and stay
within Elasticsearch's bool limits.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy.settings import Settings

from tests.helpers import processes
from trawl.pipeline.context import RunContext
from trawl.records.batches import UrlBatch
from trawl.records.ecs import url_fields
from trawl.search import parse
from trawl.search.limits import MAX_DEPTH, MAX_TERMS, MAX_VALUE_LENGTH, MAX_WILDCARDS
from trawl.stores.elasticsearch.query import to_es
from trawl.stores.sqlite import SqliteStore
from trawl.stores.sqlite.search import SqliteSearcher

TRAWL = Path(sys.executable).parent / "trawl"
URLS = [
    "https://example.com/",
    "https://example.com/app.js",
    "https://api.example.com/v1/users?id=1",
    "http://www.example.com/admin/login.php",
    "https://example.com/static/site.js",
]
#: What the store said before the parser checked the limits: none may reach the user again.
STORE_WORDS = (
    "Traceback",
    "parser stack overflow",
    "Expression tree is too large",
    "LIKE or GLOB pattern too complex",
    "OverflowError",
    "RecursionError",
    "IndexError",
    "the search failed",
)


def _ctx(run_id: str) -> RunContext:
    stats = SimpleNamespace(values={}, get_stats=lambda: {}, inc_value=lambda *a, **k: None)
    crawler = SimpleNamespace(settings=Settings({}), stats=stats)
    inputs = {"target": SimpleNamespace(domain="example.com")}
    spider = SimpleNamespace(name="wayback")
    return RunContext(crawler=crawler, spider=spider, run_id=run_id, plugins=None, inputs=inputs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("limits") / "trawl.db"
    batch = UrlBatch.from_columns(
        "wayback",
        urls=URLS,
        hosts=[url_fields(url)["domain"] for url in URLS],  # type: ignore[misc]
        first_seen=["20210101000000"] * len(URLS),
        last_seen=["20220101000000"] * len(URLS),
        captures=[1, 2, 3, 4, 5],
        statuses=["200"] * len(URLS),
        mimes=["text/html"] * len(URLS),
    )
    store = SqliteStore(f"sqlite:///{path}", _ctx("r1"))
    store.open()
    store.write_batch(batch)
    store.close("finished")
    return path


def trawl_search(cwd: Path, query: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The ``trawl`` console script, as a user runs it (this checkout's code through PYTHONPATH)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT")}
    return processes.run(
        [str(TRAWL), "search", query, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def _nested_or_and(levels: int) -> str:
    """``a OR b (a OR b (...))``: each parenthesis adds an OR and an AND, two levels."""
    return "a OR b (" * levels + "js" + ")" * levels


BAD = [
    pytest.param("+", "a '+' needs a term after it", id="plus"),
    pytest.param("api +", "a '+' needs a term after it", id="term-plus"),
    pytest.param("NOT +", "a '+' needs a term after it", id="not-plus"),
    pytest.param("(" * 250 + "a" + ")" * 250, f"nests deeper than {MAX_DEPTH} levels", id="250-parentheses"),
    pytest.param("-" * 1000 + "a", f"nests deeper than {MAX_DEPTH} levels", id="1000-minus"),
    pytest.param("-" * 50 + "a", f"nests deeper than {MAX_DEPTH} levels", id="50-minus"),
    pytest.param(
        "NOT " * (MAX_DEPTH + 1) + "a", f"nests deeper than {MAX_DEPTH} levels", id="not-past-the-limit"
    ),
    pytest.param(_nested_or_and(9), f"nests deeper than {MAX_DEPTH} levels", id="and-or-past-the-limit"),
    pytest.param(" OR ".join(f"a{i}" for i in range(5000)), f"more than {MAX_TERMS} terms", id="5000-or"),
    pytest.param(
        " ".join(f"ext:e{i}" for i in range(MAX_TERMS + 1)), f"more than {MAX_TERMS} terms", id="terms-past"
    ),
    pytest.param("url:*" + "a" * 60_000 + "*", f"longer than {MAX_VALUE_LENGTH} chara", id="60kb-pattern"),
    pytest.param('"' + "a" * 60_000 + '"', f"longer than {MAX_VALUE_LENGTH} chara", id="60kb-quoted"),
    pytest.param(
        "path:" + "*a" * (MAX_WILDCARDS + 1), f"more than {MAX_WILDCARDS} wildcards", id="wildcards-past"
    ),
    pytest.param(
        "captures:[1 TO 99999999999999999999]",
        "captures takes a number from 0 to 9223372036854775807, not 99999999999999999999",
        id="20-digit-range",
    ),
    pytest.param("captures:99999999999999999999", "captures takes a number from 0", id="20-digit-term"),
    pytest.param("status:40000", "status takes a number from 0 to 999", id="status-past-short"),
    pytest.param("port:>65536", "port takes a number from 0 to 65535", id="port-past"),
    pytest.param("captures:１", "captures takes a number, not '１'", id="full-width-digit"),
    pytest.param("status:[٢00 TO 299]", "status takes a number, not '٢00'", id="arabic-indic-digit"),
    pytest.param("first_seen:202²", "'202²' is not a date", id="superscript-in-date"),
    pytest.param("first_seen:２０２１", "'２０２１' is not a date", id="full-width-date"),
]


@pytest.mark.parametrize(("query", "message"), BAD)
def test_a_bad_query_is_one_line_and_exit_2(db: Path, query: str, message: str) -> None:
    result = trawl_search(db.parent, query, "--store", f"sqlite:///{db}")
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith("trawl: error: bad query: "), lines[0][:300]
    assert message in lines[0], lines[0][:300]
    assert len(lines[0]) < 400  # a 60 KB query is quoted around the place, not whole
    assert not any(word in lines[0] for word in STORE_WORDS)


@pytest.mark.parametrize("query", ["-" * 50 + "a", " OR ".join(f"a{i}" for i in range(5000)), "captures:１"])
def test_elasticsearch_never_sees_a_bad_query(db: Path, query: str) -> None:
    # Nothing listens on port 1: the query is refused before any store is opened.
    result = trawl_search(db.parent, query, "--store", "elasticsearch://127.0.0.1:1")
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("trawl: error: bad query: "), result.stderr[-2000:]


# --------------------------------------------------------------------------------------
# What the limits let through runs on both stores
# --------------------------------------------------------------------------------------


LEAVES = ["admin", "ext:js", "param:id", "url:*é*", "status:[200 TO 299]", "first_seen:2021", "port:>80"]
SHAPES = {
    "not": lambda leaf: "NOT " * MAX_DEPTH + leaf,
    "minus": lambda leaf: "-" * MAX_DEPTH + leaf,
    "or-and": lambda leaf: f"{leaf} OR {leaf} (" * (MAX_DEPTH // 2) + leaf + ")" * (MAX_DEPTH // 2),
    "not-or": lambda leaf: f"NOT ({leaf} OR " * (MAX_DEPTH // 2) + leaf + ")" * (MAX_DEPTH // 2),
    "and-not": lambda leaf: f"-({leaf} " * (MAX_DEPTH // 2) + leaf + ")" * (MAX_DEPTH // 2),
    "or": lambda leaf: " OR ".join([leaf] * MAX_TERMS),
    "and": lambda leaf: " AND ".join([leaf] * MAX_TERMS),
    # the widest and the deepest at once: 31 terms an OR, 30 an AND, 8 times over
    "wide-and-deep": lambda leaf: (
        (" OR ".join([leaf] * 31) + " OR (" + " ".join([leaf] * 30) + " (") * 8 + leaf + "))" * 8
    ),
}


def _bool_depth(query: Any) -> int:
    if isinstance(query, dict):
        return ("bool" in query) + max([_bool_depth(v) for v in query.values()] or [0])
    if isinstance(query, list):
        return max([_bool_depth(v) for v in query] or [0])
    return 0


def _widest_bool(query: Any) -> int:
    if isinstance(query, dict):
        own = sum(len(v) for k, v in query.get("bool", {}).items() if isinstance(v, list))
        return max([own, *(_widest_bool(v) for v in query.values())])
    if isinstance(query, list):
        return max([_widest_bool(v) for v in query] or [0])
    return 0


@pytest.mark.parametrize("leaf", LEAVES)
@pytest.mark.parametrize("shape", SHAPES)
def test_the_deepest_and_widest_queries_allowed_run(db: Path, shape: str, leaf: str) -> None:
    node = parse(SHAPES[shape](leaf))
    with SqliteSearcher(str(db)) as searcher:
        assert searcher.count(node) >= 0  # SQLite ran it: no parser stack or expression depth error
    es = to_es(node)
    assert _bool_depth(es) <= 20  # indices.query.bool.max_nested_depth (Elasticsearch 7.x)
    assert _widest_bool(es) <= 1024  # indices.query.bool.max_clause_count (Elasticsearch 7.x)


def test_limits_keep_the_answers(db: Path) -> None:
    result = trawl_search(db.parent, "-" * MAX_DEPTH + "ext:js", "--store", f"sqlite:///{db}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["https://example.com/app.js", "https://example.com/static/site.js"]
    longest = "https://example.com/" + "x" * (MAX_VALUE_LENGTH - len("https://example.com/"))
    with SqliteSearcher(str(db)) as searcher:
        assert searcher.count(parse(f'url:"{longest}"')) == 0
        assert searcher.count(parse("url:" + "*" * MAX_WILDCARDS)) == len(URLS)
        assert searcher.count(parse("captures:[0 TO 9223372036854775807]")) == len(URLS)
        assert searcher.count(parse("captures:+3")) == 1  # a sign is still allowed
        assert searcher.count(parse(" OR ".join(["host:api.example.com"] * MAX_TERMS))) == 1
