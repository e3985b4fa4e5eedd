"""``scrapy crawl commoncrawl`` end to end against a local Common Crawl index server.

The fake server (``tests/servers/commoncrawl.py``) serves the recorded
``collinfo.json`` and per-crawl CDX endpoints with pywb's ZipNum paging; the
last tests put real pywb instances behind ``collinfo.json`` and check that the
spider collects the same URLs, with the same requests, from both.
"""

from __future__ import annotations

import itertools
import json
import sysconfig
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import trawl.settings as trawl_settings

try:  # pywb installs a top-level ``tests`` package that can shadow ours (see test_wayback_pywb)
    from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
    from tests.samples import sample_body
    from tests.servers import commoncrawl as cc
    from tests.servers.pywb_server import PywbServer
except ImportError:
    from conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy  # type: ignore[no-redef]
    from samples import sample_body  # type: ignore[no-redef]
    from servers import commoncrawl as cc  # type: ignore[no-redef]
    from servers.pywb_server import PywbServer  # type: ignore[no-redef]

from trawl.sources.cdx.commoncrawl import (
    CollinfoError,
    CommonCrawlSpider,
    CrawlIndex,
    collinfo_cache_file,
    decode_collinfo,
    indexes_from_collinfo,
    inside_install_dirs,
    read_collinfo_cache,
    select_indexes,
    write_collinfo_cache,
)

A, B, C, D = "CC-MAIN-2025-33", "CC-MAIN-2025-30", "CC-MAIN-2025-26", "CC-MAIN-2025-21"
#: The four newest crawls of the recorded collinfo.json (Aug, Jul, Jun, May 2025), newest first.
SMALL_COLLINFO = cc.recorded_collinfo()[:4]

HTML, JSON, SVG, CSS = "text/html", "application/json", "image/svg+xml", "text/css"
# (url, timestamp, status, mime) per crawl
CAPTURES: dict[str, list[tuple[str, str, int, str]]] = {
    A: [
        ("http://example.com/", "20250803100000", 200, HTML),
        ("https://example.com/", "20250804100000", 200, HTML),
        ("http://example.com/about", "20250805100000", 200, HTML),
        ("http://www.example.com/login?next=%2F", "20250805110000", 200, HTML),
        ("https://shop.example.com/cart", "20250806100000", 200, HTML),
        ("https://shop.example.com/cart", "20250810100000", 500, HTML),  # same URL, later
        ("https://api.example.com/v1?id=1", "20250807100000", 200, JSON),
        ("http://example.com/gone", "20250808100000", 404, HTML),  # FILTER_CODE, server-side
        ("http://example.com/old", "20250808110000", 301, HTML),  # FILTER_CODE, server-side
        ("http://example.com/logo", "20250808120000", 200, SVG),  # FILTER_MIME, server-side
        ("http://example.com/site", "20250808130000", 200, CSS),  # FILTER_MIME, server-side
        ("http://example.com/theme.css", "20250808140000", 200, "text/plain"),  # FILTER_URL
    ],
    B: [
        ("http://example.com/", "20250710100000", 200, HTML),
        ("http://example.com/july", "20250712100000", 200, HTML),
        ("https://blog.example.com/post", "20250718100000", 200, HTML),
    ],
    C: [
        ("http://example.com/", "20250614100000", 200, HTML),
        ("http://example.com/june", "20250615100000", 200, HTML),
    ],
    D: [("http://example.com/may", "20250515100000", 200, HTML)],
}
URLS = {
    A: {
        "http://example.com/",
        "https://example.com/",
        "http://example.com/about",
        "http://www.example.com/login?next=%2F",
        "https://shop.example.com/cart",
        "https://api.example.com/v1?id=1",
    },
    B: {"http://example.com/", "http://example.com/july", "https://blog.example.com/post"},
    C: {"http://example.com/", "http://example.com/june"},
    D: {"http://example.com/may"},
}
A_UNFILTERED = URLS[A] | {
    "http://example.com/gone",
    "http://example.com/old",
    "http://example.com/logo",
    "http://example.com/site",
    "http://example.com/theme.css",
}
#: 12 lines of crawl A, one a block, 5 blocks a page: pages of 5, 5 and 2 lines.
PAGES_A = 3


def records(crawl: str) -> list[dict[str, str]]:
    return [cc.cc_record(u, ts, status=s, mime=m, crawl=crawl) for u, ts, s, m in CAPTURES[crawl]]


def fake(collinfo: list[dict[str, str]] | None = SMALL_COLLINFO, **kwargs: Any) -> cc.FakeCommonCrawl:
    ids = [e["id"] for e in (collinfo if collinfo is not None else cc.recorded_collinfo())]
    return cc.FakeCommonCrawl({k: records(k) for k in CAPTURES if k in ids}, collinfo=collinfo, **kwargs)


@pytest.fixture
def server() -> Iterator[cc.FakeCommonCrawl]:
    with fake() as srv:
        yield srv


def crawl(
    workdir: Path,
    base_url: str,
    *extra: str,
    settings: dict[str, object] | None = None,
    env: dict[str, str] | None = None,
    cache: Path | None = None,
) -> CrawlResult:
    merged: dict[str, object] = {
        "COMMONCRAWL_BASE_URL": base_url,
        "TRAWL_CACHE_DIR": cache or workdir.parent / "cache",
        "RETRY_TIMES": 1,
        "RETRY_BACKOFF_BASE": 0,
    }
    merged.update(settings or {})
    return run_scrapy(workdir, *crawl_args("commoncrawl", "example.com", merged, *extra), env=env)


def together(*jobs: Callable[[], CrawlResult]) -> list[CrawlResult]:
    """Crawls are subprocesses: independent ones (own server, own directory) run at once."""
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        return list(pool.map(lambda job: job(), jobs))


def ok(result: CrawlResult) -> CrawlResult:
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.errors == []
    return result


def failed(result: CrawlResult, message: str, outcome: str) -> None:
    """Exit status 1, no traceback, exactly one ERROR line, saying ``message``."""
    assert result.returncode == 1, result.stderr[-3000:]
    assert_no_traceback(result)
    assert len(result.errors) == 1 and message in result.errors[0], result.errors
    assert result.stat("trawl/outcome") == outcome


def url_lines(result: CrawlResult, name: str = "u.txt") -> set[str]:
    return set(result.lines(name)) if (result.workdir / name).exists() else set()


def params(record: cc.RequestRecord) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in record.params:
        out.setdefault(key, []).append(value)
    return out


def pages_requested(server: cc.FakeCommonCrawl, crawl_id: str) -> list[str]:
    """``count`` for the showNumPages request, else the page number; sorted."""
    return sorted(
        "count" if "showNumPages" in p else p.get("page", ["-"])[0]
        for p in map(params, server.index_requests(crawl_id))
    )


# --- the fake server against the recordings -----------------------------------------------------


def _get(url: str) -> tuple[int, str, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=10) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read()


def test_fake_server_reproduces_the_recordings() -> None:
    """The recorded requests, replayed on the fake holding the recorded rows: the recorded bytes."""
    recorded = sample_body("cc_index_ndjson_limit10.txt")
    rows = [json.loads(line) for line in recorded.splitlines()]
    with cc.FakeCommonCrawl({A: rows}, collinfo=None, lines_per_block=10) as server:
        index = f"{server.base_url}/{A}-index?"
        assert _get(server.base_url + "/collinfo.json") == (200, "application/json", cc.RECORDED_COLLINFO)
        page = "limit=10&url=commoncrawl.org/*&output=json&page=0&from=20240915202343"
        assert _get(index + page) == (200, "text/x-ndjson", recorded)
        count = "url=commoncrawl.org/*&showNumPages=true&limit=10&from=20240915203928"
        assert _get(index + count) == (200, "text/x-cdxj", sample_body("cc_index_showNumPages.txt").strip())
        missing = "limit=10&url=commoncrawl.org/thisurlneverdidexist&output=json&page="
        error = "application/json; charset=utf-8"
        assert _get(index + missing + "0") == (
            404,
            error,
            sample_body("cc_index_404_no_captures.txt").strip(),
        )
        assert _get(index + missing + "1") == (
            400,
            error,
            sample_body("cc_index_400_page_invalid.txt").strip(),
        )


def test_fake_server_pages_like_pywb(pywb_backends: dict[str, str]) -> None:
    """Page counts and page contents of the fake and of pywb's ZipNum source, query by query."""
    urls = ("*.example.com/*", "example.com/*", "shop.example.com/*", "example.org/*", "zzz.com/*")
    extras = ([], [("filter", "!~status:(404|301)$")], [("from", "20250806"), ("to", "2025080712")])
    with fake(collinfo=SMALL_COLLINFO[:2]) as server:
        for url, extra, size in itertools.product(urls, extras, ("", "2", "3", "4")):
            query = [("url", url), ("output", "json"), ("fl", "url,timestamp,status"), *extra]
            query += [("allowFuzzy", "false")] + ([("pageSize", size)] if size else [])
            for page in ("count", "0", "1", "2", "3", "4", "5"):
                paging = [("showNumPages", "true")] if page == "count" else [("page", page)]
                qs = urllib.parse.urlencode(query + paging)
                status, _, body = _get(f"{pywb_backends[A]}?{qs}")
                fake_status, _, fake_body = _get(f"{server.base_url}/{A}-index?{qs}")
                if fake_status == 404 and b"No Captures found" in fake_body:
                    fake_status, fake_body = 200, b""  # pywb 2.10's form of the same answer
                assert (status, body) == (fake_status, fake_body), (url, extra, size, page)


# --- which crawls are queried ------------------------------------------------------------------


def test_recorded_collinfo_newest_crawl_only(workdir: Path) -> None:
    """The real 115-crawl list: only the newest is queried, on the test server, every page once."""
    with fake(collinfo=None) as server:
        result = ok(crawl(workdir, server.base_url, "-o", "u.txt"))
    assert url_lines(result) == URLS[A]
    assert server.queried() == {A}  # not B, though it has captures
    assert server.collinfo_requests() == 1
    assert f"querying 1 of 115 crawl index(es): {A}" in result.stderr
    # count, the three counted pages, and one past the end (400 "Page 3 invalid"): not an error
    assert pages_requested(server, A) == ["0", "1", "2", "3", "count"]
    assert result.stat("trawl/pages_total") == result.stat("trawl/pages") == str(PAGES_A)

    # Status and mime filters travel in the pywb syntax the index server speaks.
    page = params(next(r for r in server.index_requests(A) if "page=0" in r.raw_query))
    assert page["url"] == ["*.example.com/*"]
    assert page["output"] == ["json"]
    assert page["fl"] == ["url,timestamp,status,mime,digest,length"]
    assert page["allowFuzzy"] == ["false"]
    assert "!~status:(404|301|302)$" in page["filter"]
    mime = next(f for f in page["filter"] if f.startswith("!~mime:("))
    assert mime.startswith(r"!~mime:(warc/revisit|text/css|") and r"image/svg\+xml" in mime
    assert any("%2B" in r.raw_query for r in server.index_requests(A))  # '+' travelled intact
    count = params(next(r for r in server.index_requests(A) if "showNumPages" in r.raw_query))
    assert "filter" not in count and "output" not in count


def test_cc_indexes_two_and_all_and_check_only(tmp_path: Path) -> None:
    with fake() as two, fake() as every, fake() as counted:
        pair, everything, check = together(
            lambda: crawl(tmp_path / "two", two.base_url, "-a", "cc_indexes=2", "-o", "u.txt"),
            lambda: crawl(tmp_path / "all", every.base_url, "-a", "cc_indexes=0", "-o", "u.txt"),
            lambda: crawl(tmp_path / "check", counted.base_url, "-a", "cc_indexes=2", "-a", "check_only=1"),
        )
    # check_only: collinfo.json and one showNumPages per crawl, nothing else; A: 3 pages, B: 1
    assert pages_requested(counted, A) == ["count"] and pages_requested(counted, B) == ["count"]
    assert ok(check).stat("trawl/estimate/requests") == str(PAGES_A + 1)
    assert not check.db_path().exists() or check.stored() == {}

    assert two.queried() == {A, B}
    assert url_lines(ok(pair)) == URLS[A] | URLS[B]
    assert pair.stat("trawl/commoncrawl/indexes") == "2"
    assert pages_requested(two, B) == ["0", "1", "count"]
    assert every.queried() == {A, B, C, D}
    assert url_lines(ok(everything)) == URLS[A] | URLS[B] | URLS[C] | URLS[D]
    assert "querying 4 of 4 crawl index(es)" in everything.stderr

    rows = pair.stored()
    cart = rows["https://shop.example.com/cart"]
    assert (cart["first_seen"], cart["last_seen"]) == ("20250806100000", "20250810100000")
    assert (cart["captures"], cart["statuses"], cart["sources"]) == (2, "200,500", "commoncrawl")
    root = rows["http://example.com/"]  # in both crawls: their captures add up
    assert (root["first_seen"], root["last_seen"]) == ("20250710100000", "20250803100000")
    assert root["captures"] == 2
    assert rows["https://api.example.com/v1?id=1"]["mimes"] == JSON
    assert rows["http://www.example.com/login?next=%2F"]["host"] == "www.example.com"


def test_dates_choose_crawls(tmp_path: Path) -> None:
    window = ("-a", "from_date=202506", "-a", "to_date=20250715")
    cases = [
        # June .. 15 July 2025 meets the June and July crawls: both, as cc_indexes is not
        # given; the July post of the 18th is past to_date (sent as to=, checked client-side).
        (window, {B, C}, {"http://example.com/", "http://example.com/july", "http://example.com/june"}),
        ((*window, "-a", "cc_indexes=1"), {B}, {"http://example.com/", "http://example.com/july"}),
        (("-a", "from_date=2030"), set(), set()),
    ]
    servers = [fake() for _ in cases]
    for server in servers:
        server.start()
    try:
        results = together(
            *(
                lambda s=server, c=case, n=n: crawl(tmp_path / str(n), s.base_url, *c[0], "-o", "u.txt")
                for n, (server, case) in enumerate(zip(servers, cases, strict=True))
            )
        )
    finally:
        for server in servers:
            server.stop()
    for server, result, (extra, queried, urls) in zip(servers, results, cases, strict=True):
        ok(result)
        assert server.queried() == queried, extra
        assert url_lines(result) == urls, extra
        for record in server.index_requests():
            assert params(record)["from"] == ["202506"] and params(record)["to"] == ["20250715"]
    nothing = results[2]
    assert "no crawl index has captures between 2030 and the last crawl" in nothing.stderr
    assert nothing.stat("trawl/outcome") == "complete"


# --- empty results and paging ------------------------------------------------------------------


def test_no_captures_and_emptied_pages_are_empty_results(tmp_path: Path) -> None:
    with cc.FakeCommonCrawl({}, collinfo=SMALL_COLLINFO) as empty, fake() as server:
        nothing, filtered = together(
            lambda: crawl(tmp_path / "empty", empty.base_url, "-o", "u.txt"),
            # Filtering 200 and 301 server-side leaves page 1 of crawl A (logo, old, site,
            # theme.css, api) empty: 404 "No Captures found" again, and page 2 is still read.
            lambda: crawl(tmp_path / "filtered", server.base_url, "-a", "filter_code=200,301", "-o", "u.txt"),
        )
    # showNumPages says {"pages": 0}; page 0 confirms it: 404 {"message": "No Captures found for: ..."}
    assert pages_requested(empty, A) == ["0", "count"]
    assert ok(nothing).stat("trawl/outcome") == "complete"
    assert url_lines(nothing) == set()
    assert url_lines(ok(filtered)) == {"http://example.com/gone", "https://shop.example.com/cart"}
    assert pages_requested(server, A) == ["0", "1", "2", "3", "count"]


# --- the collinfo.json cache -------------------------------------------------------------------


def test_collinfo_cached_under_home_per_base_url(tmp_path: Path, server: cc.FakeCommonCrawl) -> None:
    home = tmp_path / "home"
    home.mkdir()
    cache = home / ".cache" / "trawl"  # the default TRAWL_CACHE_DIR, ~/.cache/trawl
    env = {"HOME": str(home)}

    def run(name: str, base_url: str, **settings: object) -> CrawlResult:
        merged = {"COMMONCRAWL_BASE_URL": base_url, "RETRY_TIMES": 0, **settings}
        args = crawl_args("commoncrawl", "example.com", merged, "-o", "u.txt")
        return ok(run_scrapy(tmp_path / name, *args, env=env))

    first = run("1", server.base_url)
    assert server.collinfo_requests() == 1
    assert "fetching collinfo.json: no cached copy" in first.stderr
    assert [p.name for p in cache.iterdir()] == [collinfo_cache_file(cache, server.base_url).name]
    for directory in {sysconfig.get_paths()["purelib"], str(Path(cc.__file__).parents[2] / "trawl")}:
        assert not list(Path(directory).rglob("commoncrawl-collinfo-*")), directory

    # Again, and at the same time a mirror (another base URL, with a path): it has its own
    # cache file and its own list.
    with fake(collinfo=SMALL_COLLINFO[1:], prefix="/mirror/cc") as mirror:
        second, result = together(lambda: run("2", server.base_url), lambda: run("4", mirror.base_url))
    assert server.collinfo_requests() == 1  # read from the cache
    assert "collinfo.json from" in second.stderr and second.stat("trawl/commoncrawl/collinfo_cached")
    assert url_lines(second) == URLS[A]

    expired = run("3", server.base_url, COMMONCRAWL_COLLINFO_TTL=0)
    assert server.collinfo_requests() == 2
    assert "COMMONCRAWL_COLLINFO_TTL=0s" in expired.stderr

    assert mirror.collinfo_requests() == 1
    assert mirror.queried() == {B}  # its newest crawl, not A from the other server's list
    assert all(r.path.startswith("/mirror/cc/") for r in mirror.requests)
    assert url_lines(result) == URLS[B]
    assert len(list(cache.glob("commoncrawl-collinfo-*.json"))) == 2


def test_corrupt_cache_is_ignored_and_refetched(tmp_path: Path) -> None:
    base = "https://index.commoncrawl.org"
    path = collinfo_cache_file(tmp_path, base)
    path.write_text('{"version": 1, "base_url": "' + base + '", "collinfo": [')  # cut short
    assert read_collinfo_cache(path, base, 60, now=time.time()) == (
        None,
        "the cached copy is unreadable; ignoring it",
    )
    data = decode_collinfo(cc.RECORDED_COLLINFO)
    write_collinfo_cache(path, base, data, now=1000.0)  # what the spider does after refetching
    assert read_collinfo_cache(path, base, 60, now=1059.0)[0] == data
    assert read_collinfo_cache(path, base, 60, now=1060.0)[0] is None  # expired
    assert read_collinfo_cache(path, base, 60, now=900.0)[0] is None  # from the future
    assert read_collinfo_cache(path, base + "/other", 60, now=1001.0)[0] is None
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind
    assert path != collinfo_cache_file(tmp_path, "http://127.0.0.1:8080")
    assert path != collinfo_cache_file(tmp_path, base + "/mirror")
    for garbage in (b"\x00", b"[]", b'{"version": 1}', json.dumps({"version": 1, "base_url": base}).encode()):
        path.write_bytes(garbage)
        assert read_collinfo_cache(path, base, 60, now=1001.0)[0] is None


def test_cache_never_inside_site_packages() -> None:
    purelib = Path(sysconfig.get_paths()["purelib"])
    assert inside_install_dirs(purelib / "trawl-cache")
    assert inside_install_dirs(Path(trawl_settings.__file__).parent / "cache")
    assert not inside_install_dirs(Path.home() / ".cache" / "trawl")
    settings = {k: getattr(trawl_settings, k) for k in dir(trawl_settings) if k.isupper()}
    spider = CommonCrawlSpider.__new__(CommonCrawlSpider)
    spider.configure({**settings, "TRAWL_CACHE_DIR": str(purelib / "x")}, {"domain": "example.com"})
    assert spider.cache_file is None
    assert "inside Python's package directories" in (spider.cache_refused or "")
    spider.configure(settings, {"domain": "example.com"})  # the default, ~/.cache/trawl
    assert spider.cache_file is not None and spider.cache_file.parent == Path.home() / ".cache" / "trawl"
    spider.configure({**settings, "TRAWL_CACHE_DIR": ""}, {"domain": "example.com"})
    assert spider.cache_file is None and spider.cache_refused is None  # caching switched off


# --- collinfo.json itself ----------------------------------------------------------------------


def test_recorded_collinfo_parsed_and_selected() -> None:
    indexes = indexes_from_collinfo(decode_collinfo(cc.RECORDED_COLLINFO))
    assert len(indexes) == 115
    assert indexes[0] == CrawlIndex(A, "August 2025 Index", "20250802220907", "20250815234238")
    assert [i.id for i in select_indexes(indexes, 0, None, None)] == [i.id for i in indexes]
    assert [i.id for i in select_indexes(list(reversed(indexes)), 2, None, None)] == [A, B]
    assert len(select_indexes(indexes, 500, None, None)) == 115
    old = [i.id for i in select_indexes(indexes, 0, "2008", "2012")]
    assert old == ["CC-MAIN-2012", "CC-MAIN-2009-2010", "CC-MAIN-2008-2009"]
    assert [i.id for i in select_indexes(indexes, 0, "20250815", "20250815")] == [A]
    assert [i.id for i in select_indexes(indexes, 0, "20250816", None)] == []
    assert [i.id for i in select_indexes(indexes, 1, None, "20250601")] == [D]
    assert cc.collinfo_body(cc.recorded_collinfo()) == cc.RECORDED_COLLINFO  # the fake prints it alike
    for body, message in [
        (b'{"message": "moved"}', "it is not a JSON list of crawl indexes"),
        (b'[{"name": "no id"}, {"id": "../etc"}, 7]', "it lists no crawl index with an id"),
        (b"[\n  {\n", "it is not valid JSON"),
    ]:
        with pytest.raises(CollinfoError, match=message):
            decode_collinfo(body)


def test_collinfo_failures(tmp_path: Path) -> None:
    cases = [
        ([cc.service_unavailable()] * 2, "HTTP 503 for the list of crawl indexes"),
        ([cc.gateway_timeout()] * 2, "HTTP 504 for the list of crawl indexes"),
        ([cc.html_200()], "sent an HTML page instead of the list of crawl indexes"),
        # cut short in transfer: retried like a 5xx (RETRY_TIMES=1), then given up
        ([cc.malformed_collinfo()] * 2, "is not a usable list of crawl indexes: it is not valid JSON"),
    ]
    servers = [fake() for _ in cases]
    for server, (faults, _) in zip(servers, cases, strict=True):
        server.collinfo_faults = list(faults)
        server.start()
    try:
        jobs = [
            lambda s=server, n=n: crawl(tmp_path / str(n), s.base_url, cache=tmp_path / f"cache{n}")
            for n, server in enumerate(servers)
        ]
        jobs.append(lambda: crawl(tmp_path / "down", "http://127.0.0.1:9", settings={"RETRY_TIMES": 0}))
        *results, unreachable = together(*jobs)
    finally:
        for server in servers:
            server.stop()
    for n, (server, result, (_, message)) in enumerate(zip(servers, results, cases, strict=True)):
        failed(result, message, "failed")
        assert server.index_requests() == []
        assert not (tmp_path / f"cache{n}").exists()  # nothing bad cached
    failed(unreachable, "cannot reach http://127.0.0.1:9/collinfo.json", "failed")


# --- failures of a crawl's index ---------------------------------------------------------------


def test_index_failures(tmp_path: Path) -> None:
    cases: list[tuple[dict[tuple[str, int | str], list], str]] = [
        ({(A, 1): [cc.html_200()]}, "CDX page 1 (CC-MAIN-2025-33): the server sent an HTML page"),
        ({(A, 0): [cc.gateway_timeout()] * 2}, "HTTP 504 for CDX page 0 (CC-MAIN-2025-33)"),
        ({(A, 2): [cc.malformed_ndjson()] * 2}, "CDX page 2 (CC-MAIN-2025-33): unreadable answer"),
        # Retried, then answered: no error at all.
        ({(A, cc.COUNT): [cc.service_unavailable()], (A, 1): [cc.gateway_timeout()]}, ""),
    ]
    servers = [fake() for _ in cases]
    for server, (faults, _) in zip(servers, cases, strict=True):
        server.index_faults = {k: list(v) for k, v in faults.items()}
        server.start()
    try:
        results = together(
            *(
                lambda s=server, n=n: crawl(tmp_path / str(n), s.base_url, "-o", "u.txt")
                for n, server in enumerate(servers)
            )
        )
    finally:
        for server in servers:
            server.stop()
    *broken, retried = results
    for result, (_, message) in zip(broken, cases, strict=False):
        failed(result, message, "partial")
        assert url_lines(result) < URLS[A]  # the other pages were still read
    assert url_lines(ok(retried)) == URLS[A]


def test_bad_arguments(tmp_path: Path) -> None:
    cases = [
        (("-a", "cc_indexes=-1"), "-a cc_indexes= must be at least 0"),
        (("-a", "cc_indexes=newest"), "-a cc_indexes= expects a whole number"),
        (("-s", "COMMONCRAWL_COLLINFO_TTL=soon"), "COMMONCRAWL_COLLINFO_TTL must be a number"),
    ]
    results = together(
        *(
            lambda n=n, c=case: crawl(tmp_path / str(n), "http://127.0.0.1:9", *c[0])
            for n, case in enumerate(cases)
        )
    )
    for result, (_, message) in zip(results, cases, strict=True):
        assert result.returncode == 2, result.stderr[-2000:]
        assert_no_traceback(result)
        lines = [line for line in result.stderr.splitlines() if line.startswith("trawl: error:")]
        assert len(lines) == 1 and message in lines[0], lines


# --- against real pywb -------------------------------------------------------------------------


def _pywb_capture(url: str, ts: str, status: int, mime: str) -> dict[str, Any]:
    return {"url": url, "timestamp": ts, "status": status, "mime": mime, "body": f"<p>{url}</p>".encode()}


@pytest.fixture(scope="module")
def pywb_backends() -> Iterator[dict[str, str]]:
    """Crawls A and B as two real pywb ZipNum collections (one line a block, 5 blocks a page)."""
    servers = [
        PywbServer(
            [_pywb_capture(*c) for c in CAPTURES[k]],
            collection=f"{k}-index",
            zipnum=True,
            lines_per_block=1,
            pagesize_blocks=cc.MAX_BLOCKS,
        )
        for k in (A, B)
    ]
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(lambda srv: srv.start(), servers))
        yield {k: srv.cdx_url for k, srv in zip((A, B), servers, strict=True)}
    finally:
        for srv in servers:
            srv.stop()


def test_same_urls_and_requests_from_pywb(tmp_path: Path, pywb_backends: dict[str, str]) -> None:
    """pywb's own answers behind collinfo.json: the same URLs, provenance and requests as the fake."""
    variants = {"default-filters": (), "no-filters": ("-a", "filters=false")}
    fronts = {name: cc.CollinfoFront(SMALL_COLLINFO[:2], pywb_backends) for name in variants}
    fakes = {name: fake(collinfo=SMALL_COLLINFO[:2]) for name in variants}
    servers: list[Any] = [*fronts.values(), *fakes.values()]
    for server in servers:
        server.start()
    try:
        jobs = [
            lambda s=server, d=tmp_path / f"{kind}-{name}", e=extra: crawl(
                d, s.base_url, "-a", "cc_indexes=2", *e, "-o", "u.txt"
            )
            for name, extra in variants.items()
            for kind, server in (("pywb", fronts[name]), ("fake", fakes[name]))
        ]
        results = iter(together(*jobs))
    finally:
        for server in servers:
            server.stop()
    for name, extra in variants.items():
        from_pywb, from_fake = ok(next(results)), ok(next(results))
        want = (A_UNFILTERED if extra else URLS[A]) | URLS[B]
        assert url_lines(from_pywb) == want, name
        assert url_lines(from_fake) == want, name
        pywb_rows, fake_rows = from_pywb.stored(), from_fake.stored()
        assert pywb_rows.keys() == fake_rows.keys() == want
        for url in want:
            for column in ("first_seen", "last_seen", "captures", "statuses", "mimes"):
                assert pywb_rows[url][column] == fake_rows[url][column], (name, url, column)
        # The same requests, page for page: the fake pages as pywb's ZipNum source does.
        requests = [
            sorted((r.path, r.raw_query) for r in srv.requests) for srv in (fronts[name], fakes[name])
        ]
        assert requests[0] == requests[1], name
        assert from_pywb.stat("trawl/pages_total") == from_fake.stat("trawl/pages_total") == str(PAGES_A + 1)
