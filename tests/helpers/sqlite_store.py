"""The SQLite store's crawls and data set, shared by the tests of every store.

:func:`crawl` runs ``crawl wayback`` on ``example.com`` (filters off) into a
store; :func:`merge_captures` is the data set, captures chosen so that every
merge rule has something to do, served ``LINES_PER_PAGE`` lines a page, and
``EXPECTED`` the rows it must leave, in :func:`summary`'s shape. The other
helpers read a run's outcome (:func:`stat`, :func:`assert_complete`,
:func:`summary_line`) or drive :class:`SqliteStore` directly (:func:`open_store`
with :class:`FakeStats`, :func:`make_batch`).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from scrapy.settings import Settings

from trawl.pipeline.context import RunContext
from trawl.records.batches import UrlBatch
from trawl.stores.sqlite import SqliteStore

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
    from tests.servers.ia_cdx import Capture, FakeCdxServer, make_capture
except ImportError:
    from conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy  # type: ignore[no-redef]
    from servers.ia_cdx import Capture, FakeCdxServer, make_capture  # type: ignore[no-redef]

DOMAIN = "example.com"
LINES_PER_PAGE = 3


def crawl(
    workdir: Path,
    server: FakeCdxServer,
    *extra: str,
    store_uri: str | None = "sqlite:///trawl.db",
    env: dict | None = None,
) -> CrawlResult:
    settings: dict[str, object] = {"WAYBACK_BASE_URL": server.base_url, "PROGRESS_INTERVAL": 0}
    if store_uri is not None:
        settings["STORE_URI"] = store_uri
    # filters=false: every capture the server has is stored, so expectations are exact.
    args = crawl_args("wayback", DOMAIN, settings, "-a", "filters=false", *extra)
    return run_scrapy(workdir, *args, env=env)


def summary(rows: dict[str, dict]) -> dict[str, tuple]:
    """What a row says about its URL (the bookkeeping columns left out)."""
    return {
        url: (
            r["host"],
            r["sources"],
            r["first_seen"],
            r["last_seen"],
            r["captures"],
            r["statuses"],
            r["mimes"],
        )
        for url, r in rows.items()
    }


def stat(result: CrawlResult, name: str) -> str | None:
    """A value of the final stats dump (``CrawlResult.stat`` keeps the ``}`` of the last one)."""
    value = result.stat(name)
    return None if value is None else value.rstrip("}").strip("'")


def assert_complete(result: CrawlResult) -> None:
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    assert result.errors == []
    assert stat(result, "trawl/outcome") == "complete"


def summary_line(result: CrawlResult) -> str:
    lines = [line for line in result.stderr.splitlines() if "new this run" in line]
    assert len(lines) == 1, result.stderr[-3000:]
    return lines[0]


# --------------------------------------------------------------------------------------
# The data set: captures chosen so that every merge rule has something to do
# --------------------------------------------------------------------------------------


def merge_captures() -> list[Capture]:
    return [
        make_capture("https://example.com/a", "20100101000000"),
        make_capture("http://example.com/a", "20100202000000"),  # another scheme: another URL
        make_capture("https://example.com/b", "20110101000000"),
        make_capture("https://example.com/b", "20120101000000", statuscode="404"),
        # Five captures of one URL, which the pages of 3 lines cut in two.
        make_capture("https://example.com/split", "20130101000000"),
        make_capture("https://example.com/split", "20140101000000", statuscode="301"),
        make_capture("https://example.com/split", "20150101000000", "warc/revisit", "-"),
        make_capture("https://example.com/split", "20160101000000"),
        make_capture("https://example.com/split", "20170101000000"),
        make_capture("https://blog.example.com/c", "20180101000000", "application/json"),
    ]


def R(first: str, last: str, captures: int, statuses: str, mimes: str, host: str = DOMAIN) -> tuple:
    """A row as :func:`summary` gives it, for a URL only the wayback source saw."""
    return (host, "wayback", first, last, captures, statuses, mimes)


EXPECTED = {
    "https://example.com/a": R("20100101000000", "20100101000000", 1, "200", "text/html"),
    "http://example.com/a": R("20100202000000", "20100202000000", 1, "200", "text/html"),
    "https://example.com/b": R("20110101000000", "20120101000000", 2, "200,404", "text/html"),
    # Five captures over two pages; the revisit's "-" is no status.
    "https://example.com/split": R(
        "20130101000000", "20170101000000", 5, "200,301", "text/html,warc/revisit"
    ),
    "https://blog.example.com/c": R(
        "20180101000000", "20180101000000", 1, "200", "application/json", host="blog.example.com"
    ),
}


class FakeStats:
    """The calls of Scrapy's stats collector a store makes (``trawl/urls_new`` counted from 0)."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {"trawl/urls_new": 0}

    def get_stats(self) -> dict[str, object]:
        return self.values

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = int(self.values.get(key, 0)) + count  # type: ignore[call-overload]


def open_store(db: Path, run_id: str, source: str = "wayback") -> SqliteStore:
    crawler = SimpleNamespace(settings=Settings({"SQLITE_SYNCHRONOUS": "NORMAL"}), stats=FakeStats())
    spider = SimpleNamespace(name=source)
    inputs = {"target": SimpleNamespace(domain=DOMAIN)}
    context = RunContext(crawler=crawler, spider=spider, run_id=run_id, plugins=None, inputs=inputs)  # type: ignore[arg-type]
    store = SqliteStore(f"sqlite:///{db}", context)
    store.open()
    return store


def make_batch(rows: list[tuple[str, str, str, int, str, str]], source: str = "wayback") -> UrlBatch:
    """``rows``: (url, first_seen, last_seen, captures, statuses, mimes)."""
    return UrlBatch.from_columns(
        source=source,
        urls=[r[0] for r in rows],
        hosts=[DOMAIN] * len(rows),
        first_seen=[r[1] for r in rows],
        last_seen=[r[2] for r in rows],
        captures=[r[3] for r in rows],
        statuses=[r[4] for r in rows],
        mimes=[r[5] for r in rows],
    )
