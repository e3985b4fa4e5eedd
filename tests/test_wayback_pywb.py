"""The wayback spider against a real pywb CDX server, and against the IA dialect.

pywb is what private web archives and Common Crawl's index server run; its
dialect differs from the Internet Archive's in almost every detail (NDJSON,
``url``/``mime``/``status`` names, ``re.match`` filters, fuzzy fallback, no
paging on a plain index, block-based paging on ZipNum; see
``servers/PYWB_DIALECT.md``). These tests crawl one set of captures, written
into a WARC and indexed by pywb itself, end to end (``scrapy crawl`` in a
subprocess, SQLite store, ``-o urls.txt``) and check:

* the exact URL set from a plain CDXJ index, with and without the default
  waymore filters;
* the same set from a ZipNum index paged 2 lines a page, over several pages;
* the same set (and the same provenance) from the IA-dialect server holding
  the same captures;
* that a mime filter with a ``+`` (``image/svg+xml``) is applied by pywb
  itself, not only by trawl's client-side check;
* ``subs=false`` scope;
* first_seen / last_seen / captures of a URL captured several times, also when
  its captures are spread over several ZipNum pages.

Every expected set is spelt out literally; one test checks that trawl's own
canonicalisation, scope and filter code agree with those literals, so a
mistake in either shows up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import trawl.settings as trawl_settings
from trawl.pipeline.filters import build_filter_config
from trawl.records.canonical import canonicalize_with_host
from trawl.sources.target import parse_target

try:  # pywb installs a top-level ``tests`` package into site-packages that can shadow
    from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy  # ours;
    from tests.servers.ia_cdx import FakeCdxServer, make_capture  # fall back to pytest's
    from tests.servers.pywb_server import PywbServer  # "prepend" import.
except ImportError:
    from conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy  # type: ignore[no-redef]
    from servers.ia_cdx import FakeCdxServer, make_capture  # type: ignore[no-redef]
    from servers.pywb_server import PywbServer  # type: ignore[no-redef]

DOMAIN = "example.com"
HTML = "text/html"
JS = "application/javascript"
SVG = "image/svg+xml"
CSS = "text/css"


def _cap(url: str, ts: str, status: int = 200, mime: str = HTML) -> dict[str, Any]:
    return {"url": url, "timestamp": ts, "status": status, "mime": mime, "body": f"<p>{url}</p>".encode()}


#: 27 captures. ``/page`` is captured four times (once through an explicit :80,
#: once as a 404); ``/secure`` twice (once through an explicit :443).
CAPTURES: list[dict[str, Any]] = [
    # example.com
    _cap("http://example.com/", "20200101000000"),
    _cap("https://example.com/", "20200201000000"),
    _cap("http://example.com/page", "20190101000000"),
    _cap("http://example.com:80/page", "20200505123000"),
    _cap("http://example.com/page", "20221231235959"),
    _cap("http://example.com/page", "20230101000000", 404),
    _cap("https://example.com:443/secure", "20210101000000"),
    _cap("https://example.com/secure", "20210202000000"),
    _cap("http://example.com/app.js", "20200105000000", mime=JS),
    _cap("http://example.com/logo.svg", "20200104000000", mime=SVG),
    _cap("http://example.com/style.css", "20200107000000", mime=CSS),
    _cap("http://example.com/old", "20200106000000", 301),
    _cap("http://example.com/missing", "20200108000000", 404),
    # www.example.com
    _cap("http://www.example.com/", "20210101000000"),
    _cap("https://www.example.com/about", "20210102000000"),
    _cap("http://www.example.com/gone", "20210103000000", 404),
    _cap("http://www.example.com/icon", "20210104000000", mime=SVG),  # svg without .svg
    # sub.example.com
    _cap("http://sub.example.com/", "20220101000000"),
    _cap("http://sub.example.com/x.js", "20220102000000", mime=JS),
    _cap("https://sub.example.com:443/login", "20220103000000"),
    _cap("http://sub.example.com/r", "20220105000000", 301),
    # deep.sub.example.com
    _cap("http://deep.sub.example.com/deep", "20220201000000"),
    _cap("https://deep.sub.example.com/deep.css", "20220202000000", mime=CSS),
    # out of scope: a longer name, and the domain as a label of another one
    _cap("http://notexample.com/", "20230101000000"),
    _cap("http://notexample.com/n.js", "20230102000000", mime=JS),
    _cap("http://example.com.evil.net/", "20230103000000"),
    _cap("http://example.com.evil.net/phish", "20230104000000"),
]

#: Every in-scope URL, canonical (default ports gone; http and https distinct).
ALL_URLS = {
    "http://example.com/",
    "https://example.com/",
    "http://example.com/page",
    "https://example.com/secure",
    "http://example.com/app.js",
    "http://example.com/logo.svg",
    "http://example.com/style.css",
    "http://example.com/old",
    "http://example.com/missing",
    "http://www.example.com/",
    "https://www.example.com/about",
    "http://www.example.com/gone",
    "http://www.example.com/icon",
    "http://sub.example.com/",
    "http://sub.example.com/x.js",
    "https://sub.example.com/login",
    "http://sub.example.com/r",
    "http://deep.sub.example.com/deep",
    "https://deep.sub.example.com/deep.css",
}
#: After the default filters: no 404/301, no svg/css mime, no .css/.svg URL.
#: (``/page`` stays: three of its captures are 200s.)
FILTERED_URLS = {
    "http://example.com/",
    "https://example.com/",
    "http://example.com/page",
    "https://example.com/secure",
    "http://example.com/app.js",
    "https://www.example.com/about",
    "http://www.example.com/",
    "http://sub.example.com/",
    "http://sub.example.com/x.js",
    "https://sub.example.com/login",
    "http://deep.sub.example.com/deep",
}
APEX_HOSTS = ("example.com", "www.example.com")


def _host(url: str) -> str:
    result = canonicalize_with_host(url)
    assert result is not None
    return result[1]


# --- expected sets from trawl's own rules --------------------------------------------------


def _settings() -> dict[str, Any]:
    return {k: getattr(trawl_settings, k) for k in dir(trawl_settings) if k.isupper()}


def expected_urls(subs: bool = True, **args: str) -> set[str]:
    """What a crawl should keep: trawl.records.canonical, trawl.sources.target, trawl.pipeline.filters."""
    target = parse_target(DOMAIN, include_subdomains=subs)
    config = build_filter_config(_settings(), args)
    out = set()
    for cap in CAPTURES:
        result = canonicalize_with_host(cap["url"])
        assert result is not None
        url, host = result
        if not target.in_scope(host):
            continue
        if not (config.code_allowed(str(cap["status"])) and config.mime_allowed(cap["mime"])):
            continue
        if config.url_allowed(url):
            out.add(url)
    return out


def test_literal_expectations_match_trawl_rules() -> None:
    assert expected_urls(filters="false") == ALL_URLS
    assert expected_urls() == FILTERED_URLS
    assert expected_urls(subs=False) == {u for u in FILTERED_URLS if _host(u) in APEX_HOSTS}


# --- servers and crawls ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def pywb_plain() -> Iterator[PywbServer]:
    with PywbServer(CAPTURES) as srv:
        yield srv


@pytest.fixture(scope="module")
def pywb_zipnum() -> Iterator[PywbServer]:
    # 2 lines a block, 1 block a page: the 23 example.com-family lines make 12 pages.
    with PywbServer(CAPTURES, zipnum=True, lines_per_block=2, pagesize_blocks=1) as srv:
        yield srv


@pytest.fixture(scope="module")
def ia_server() -> Iterator[FakeCdxServer]:
    captures = [
        make_capture(c["url"], c["timestamp"], mimetype=c["mime"], statuscode=str(c["status"]))
        for c in CAPTURES
    ]
    with FakeCdxServer(captures) as srv:
        yield srv


Crawl = Callable[..., CrawlResult]


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Crawl:
    """Run (once per distinct command line: results are reused) a checked wayback crawl."""
    done: dict[tuple[str, ...], CrawlResult] = {}

    def run(server: PywbServer | FakeCdxServer, *extra: str) -> CrawlResult:
        settings: dict[str, object] = {"WAYBACK_BASE_URL": server.base_url}
        if isinstance(server, PywbServer):
            settings["WAYBACK_CDX_PATH"] = "/cdx"
        args = tuple(crawl_args("wayback", DOMAIN, settings, "-o", "urls.txt", *extra))
        if args not in done:
            workdir = tmp_path_factory.mktemp("crawl") / "project"
            result = run_scrapy(workdir, *args)
            assert_no_traceback(result)
            assert result.returncode == 0, result.stderr[-3000:]
            assert result.errors == [], result.errors
            done[args] = result
        return done[args]

    return run


def url_set(result: CrawlResult) -> set[str]:
    lines = result.lines("urls.txt")
    assert len(lines) == len(set(lines)), "urls.txt repeats a URL"
    assert set(lines) == set(result.stored()), "urls.txt and the store disagree"
    return set(lines)


def _int_stat(result: CrawlResult, name: str) -> int | None:
    value = result.stat(name)
    return None if value is None else int(value)


# --- (1) plain CDXJ index -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "want"),
    [((), FILTERED_URLS), (("-a", "filters=false"), ALL_URLS)],
    ids=["default-filters", "no-filters"],
)
def test_plain_index_exact_url_set(
    pywb_plain: PywbServer, crawl: Crawl, extra: tuple[str, ...], want: set[str]
) -> None:
    result = crawl(pywb_plain, *extra)
    assert url_set(result) == want
    # A plain index cannot page: the spider notices and asks once for everything.
    assert "does not page this index" in result.log
    assert _int_stat(result, "trawl/pages") == 1


# --- (2) ZipNum index, several pages ------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "want"),
    [((), FILTERED_URLS), (("-a", "filters=false"), ALL_URLS)],
    ids=["default-filters", "no-filters"],
)
def test_zipnum_index_pages_to_same_url_set(
    pywb_zipnum: PywbServer, crawl: Crawl, extra: tuple[str, ...], want: set[str]
) -> None:
    result = crawl(pywb_zipnum, *extra)
    assert url_set(result) == want
    pages_total = _int_stat(result, "trawl/pages_total")
    assert pages_total is not None and pages_total > 1, result.log[-3000:]
    assert f"{pages_total} CDX page(s) for {DOMAIN} (pywb server)" in result.log
    # Every counted page was fetched and read (filters may leave one empty; page
    # pages_total itself, asked for to find the end, is pywb's 400 and not counted).
    assert _int_stat(result, "trawl/pages") == pages_total
    assert "does not page this index" not in result.log


# --- (3) the IA dialect, same captures ----------------------------------------------------


@pytest.mark.parametrize("extra", [(), ("-a", "filters=false")], ids=["default-filters", "no-filters"])
def test_ia_dialect_gives_same_urls_and_provenance(
    pywb_plain: PywbServer,
    pywb_zipnum: PywbServer,
    ia_server: FakeCdxServer,
    crawl: Crawl,
    extra: tuple[str, ...],
) -> None:
    ia = crawl(ia_server, *extra)
    assert "(ia server)" in ia.log
    from_ia = url_set(ia)
    assert from_ia == (ALL_URLS if extra else FILTERED_URLS)
    for server in (pywb_plain, pywb_zipnum):
        pywb = crawl(server, *extra)
        assert url_set(pywb) == from_ia
        columns = ("host", "first_seen", "last_seen", "captures", "statuses", "mimes")
        ia_rows = {u: {c: r[c] for c in columns} for u, r in ia.stored().items()}
        pywb_rows = {u: {c: r[c] for c in columns} for u, r in pywb.stored().items()}
        assert pywb_rows == ia_rows


# --- (4) a mime with '+' filtered by pywb itself ------------------------------------------


@pytest.mark.parametrize("index", ["plain", "zipnum"])
def test_svg_mime_filtered_server_side(
    pywb_plain: PywbServer, pywb_zipnum: PywbServer, crawl: Crawl, index: str
) -> None:
    server = pywb_plain if index == "plain" else pywb_zipnum
    result = crawl(server, "-a", f"filter_mime={SVG}", "-a", "filters=true")
    got = url_set(result)
    assert got == expected_urls(filter_mime=SVG)
    assert "http://www.example.com/icon" not in got  # svg mime, nothing in the URL says so
    # text/css is no longer a mime filter: the .css URLs go for their URL alone.
    assert _int_stat(result, "trawl/filtered/url") == 2
    # pywb dropped the svg (and 404/301) captures: the client-side check had none left
    # to drop. A '+' sent raw (a space to the server) would leave them to it.
    assert result.stat("trawl/filtered/mime") is None
    assert result.stat("trawl/filtered/status") is None


# --- (5) subs=false -----------------------------------------------------------------------


@pytest.mark.parametrize("index", ["plain", "zipnum"])
def test_subs_false_keeps_apex_and_www(
    pywb_plain: PywbServer, pywb_zipnum: PywbServer, crawl: Crawl, index: str
) -> None:
    server = pywb_plain if index == "plain" else pywb_zipnum
    result = crawl(server, "-a", "subs=false", "-a", "filters=false")
    got = url_set(result)
    assert got == {u for u in ALL_URLS if _host(u) in APEX_HOSTS}
    assert {_host(u) for u in got} == set(APEX_HOSTS)
    # The prefix query itself leaves the subdomains out: scope had nothing to drop.
    assert result.stat("trawl/filtered/out_of_scope") is None


# --- (6) provenance -----------------------------------------------------------------------


@pytest.mark.parametrize("index", ["plain", "zipnum"])
@pytest.mark.parametrize(
    ("extra", "page"),
    [
        ((), {"first_seen": "20190101000000", "last_seen": "20221231235959", "captures": 3,
              "statuses": "200"}),
        (("-a", "filters=false"), {"first_seen": "20190101000000", "last_seen": "20230101000000",
                                   "captures": 4, "statuses": "200,404"}),
    ],
    ids=["default-filters", "no-filters"],
)  # fmt: skip
def test_provenance_of_repeated_captures(
    pywb_plain: PywbServer,
    pywb_zipnum: PywbServer,
    crawl: Crawl,
    index: str,
    extra: tuple[str, ...],
    page: dict[str, object],
) -> None:
    server = pywb_plain if index == "plain" else pywb_zipnum
    stored = crawl(server, *extra).stored()
    row = stored["http://example.com/page"]  # with the :80 capture folded in
    assert {k: row[k] for k in page} == page
    assert row["sources"] == "wayback"
    assert row["mimes"] == HTML
    secure = stored["https://example.com/secure"]  # with the :443 capture folded in
    assert (secure["first_seen"], secure["last_seen"], secure["captures"]) == (
        "20210101000000",
        "20210202000000",
        2,
    )
    single = stored["http://sub.example.com/"]
    assert (single["first_seen"], single["last_seen"], single["captures"]) == (
        "20220101000000",
        "20220101000000",
        1,
    )
