"""``scrapy crawl otx`` end to end against a local AlienVault OTX ``url_list`` stand-in.

The stand-in answers with the real ``url_list`` object's shape (api-formats.md
section d); what a user sees is checked: URLs written, rows stored, lines
logged, requests the server received, the exit status.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.servers.otx import FakeOtxServer, OtxUrl, make_urls, otx_throttled, server_error

KEY = "KEY-OTX-SECRET-0001"
NO_KEY_ENV = {"OTX_API_KEY": "", "OTX_API_KEYS": ""}

SMALL = [
    OtxUrl("http://example.com/", "2019-02-06T02:40:30", 200),
    OtxUrl("http://example.com/", "2023-07-01T08:00:00", 200),  # seen again, later
    OtxUrl("https://example.com/login?next=/home", "2020-05-01T10:00:00", 200),
    OtxUrl("https://www.example.com/about", "2021-01-01T00:00:00", 0),  # 0: the worker got no answer
    OtxUrl("https://api.example.com/v1/users?id=1&b=2", "2022-03-03T03:03:03", 500),
    OtxUrl("https://sub.example.com/gone", "2022-01-01T00:00:00", 404),  # FILTER_CODE
    OtxUrl("https://sub.example.com/style.css", "2022-01-01T00:00:00", 200),  # FILTER_URL
    OtxUrl("https://sub.example.com/2008", "2008-12-31T23:59:59", 200),
]
SMALL_FILTERED = {
    "http://example.com/",
    "https://example.com/login?next=/home",
    "https://www.example.com/about",
    "https://api.example.com/v1/users?id=1&b=2",
    "https://sub.example.com/2008",
}
# 1,108 URLs in all: pages of 500, 500 and 108.
BIG = SMALL + list(make_urls("example.com", 700)) + list(make_urls("deep.sub.example.com", 400, start_day=5))
BIG_FILTERED = SMALL_FILTERED | {u.url for u in BIG[len(SMALL) :]}


def crawl(
    workdir: Path,
    server: FakeOtxServer | None,
    *extra: str,
    domain: str = "example.com",
    settings: dict | None = None,
    env: dict | None = None,
) -> CrawlResult:
    merged: dict[str, object] = {
        "OTX_BASE_URL": server.base_url if server else "http://127.0.0.1:9",
        "RETRY_TIMES": 1,
        "RETRY_BACKOFF_BASE": 0.01,
    }
    merged.update(settings or {})
    return run_scrapy(workdir, *crawl_args("otx", domain, merged, *extra), env={**NO_KEY_ENV, **(env or {})})


def pages(server: FakeOtxServer) -> list[int]:
    return server.pages_requested()


# --- the main path ----------------------------------------------------------------------


def test_exact_url_set_pages_at_once(workdir: Path) -> None:
    with FakeOtxServer(urls=BIG) as srv:
        result = crawl(workdir, srv, "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    lines = result.lines("urls.txt")
    assert set(lines) == BIG_FILTERED
    assert len(lines) == len(set(lines))
    assert set(result.stored()) == BIG_FILTERED
    # page 1 first, then every counted page (and nothing past them)
    requested = pages(srv)
    assert requested[0] == 1 and sorted(requested) == [1, 2, 3]
    assert {r.path for r in srv.requests} == {"/api/v1/indicators/domain/example.com/url_list"}
    assert {r.param("limit") for r in srv.requests} == {"500"}
    assert all(r.header("X-OTX-API-KEY") is None for r in srv.requests)  # no key: none sent
    assert result.stat("trawl/pages_total") == "3"
    assert result.stat("trawl/pages") == "3"
    assert "1108 URL(s) in 3 page(s) for domain example.com" in result.stderr


def test_provenance_is_stored(workdir: Path) -> None:
    with FakeOtxServer(urls=SMALL) as srv:
        result = crawl(workdir, srv)
    rows = result.stored()
    root = rows["http://example.com/"]
    assert (root["first_seen"], root["last_seen"], root["captures"]) == (
        "20190206024030",
        "20230701080000",
        2,
    )
    assert root["statuses"] == "200" and root["sources"] == "otx"
    assert rows["https://www.example.com/about"]["statuses"] == ""  # httpcode 0 is no status
    assert rows["https://api.example.com/v1/users?id=1&b=2"]["statuses"] == "500"
    assert rows["https://api.example.com/v1/users?id=1&b=2"]["first_seen"] == "20220303030303"
    assert all(row["mimes"] == "" for row in rows.values())  # OTX reports no mime


def test_subdomain_input_queries_the_hostname(workdir: Path) -> None:
    with FakeOtxServer(urls=BIG) as srv:
        result = crawl(workdir, srv, "-o", "u.txt", "-a", "filters=false", domain="sub.example.com")
    assert result.returncode == 0
    assert [r.path for r in srv.requests] == ["/api/v1/indicators/hostname/sub.example.com/url_list"]
    assert set(result.lines("u.txt")) == {
        "https://sub.example.com/gone",
        "https://sub.example.com/style.css",
        "https://sub.example.com/2008",
    }


def test_filters_false_and_dates(workdir: Path) -> None:
    with FakeOtxServer(urls=SMALL) as srv:
        everything = crawl(workdir, srv, "-a", "filters=false", "-O", "all.txt")
        dated = crawl(workdir, srv, "-a", "from_date=2020", "-a", "to_date=2021", "-O", "d.txt")
    assert set(everything.lines("all.txt")) == SMALL_FILTERED | {
        "https://sub.example.com/gone",
        "https://sub.example.com/style.css",
    }
    assert set(dated.lines("d.txt")) == {
        "https://example.com/login?next=/home",
        "https://www.example.com/about",
    }


# --- paging edge cases --------------------------------------------------------------------


def test_exactly_one_full_page(workdir: Path) -> None:
    urls = list(make_urls("example.com", 500))
    with FakeOtxServer(urls=urls) as srv:
        result = crawl(workdir, srv, "-o", "u.txt")
    assert result.returncode == 0
    assert pages(srv) == [1]
    assert len(set(result.lines("u.txt"))) == 500


def test_empty_result(workdir: Path) -> None:
    with FakeOtxServer(urls=[]) as srv:
        result = crawl(workdir, srv, "-o", "u.txt")
    assert result.returncode == 0, result.stderr[-2000:]
    assert pages(srv) == [1]
    assert result.stat("trawl/outcome") == "complete"
    assert not (workdir / "u.txt").exists() or result.lines("u.txt") == []


def test_has_next_past_the_counted_pages_is_followed(workdir: Path) -> None:
    # full_size says 500 (one page) but page 1 says has_next: walk on until it stops
    with FakeOtxServer(urls=BIG, full_size_override=500) as srv:
        result = crawl(workdir, srv, "-o", "u.txt")
    assert result.returncode == 0
    assert pages(srv) == [1, 2, 3]
    assert set(result.lines("u.txt")) == BIG_FILTERED


def test_full_size_larger_than_the_list(workdir: Path) -> None:
    with FakeOtxServer(urls=BIG, full_size_override=2000) as srv:
        result = crawl(workdir, srv, "-o", "u.txt")
    assert result.returncode == 0
    assert sorted(pages(srv)) == [1, 2, 3, 4]  # page 4 is empty, has_next false: the end
    assert set(result.lines("u.txt")) == BIG_FILTERED


def test_without_full_size_has_next_is_followed(workdir: Path) -> None:
    with FakeOtxServer(urls=BIG, omit_full_size=True) as srv:
        result = crawl(workdir, srv, "-o", "u.txt")
    assert result.returncode == 0
    assert pages(srv) == [1, 2, 3]
    assert set(result.lines("u.txt")) == BIG_FILTERED
    assert "no full_size" in result.stderr


def test_server_serving_fewer_than_asked(workdir: Path) -> None:
    # the answer's own limit counts, not the one asked for
    with FakeOtxServer(urls=SMALL, max_limit=3) as srv:
        result = crawl(workdir, srv, "-o", "u.txt")
    assert sorted(pages(srv)) == [1, 2, 3]
    assert set(result.lines("u.txt")) == SMALL_FILTERED


def test_limit_requests(workdir: Path) -> None:
    with FakeOtxServer(urls=BIG) as srv:
        result = crawl(workdir, srv, "-a", "limit_requests=2")
    assert result.returncode == 0
    assert sorted(pages(srv)) == [1, 2]
    assert "limit_requests=2" in result.stderr


# --- what OTX answers when things go wrong ------------------------------------------------


def test_error_body_is_nothing_found(workdir: Path) -> None:
    # [GUESS] the status that comes with it: not 200 here, so that it is not taken for an HTTP error
    with FakeOtxServer(urls=SMALL, error_answer=(404, "Invalid indicator")) as srv:
        result = crawl(workdir, srv, "-o", "u.txt")
    assert result.returncode == 0, result.stderr[-2000:]
    assert_no_traceback(result)
    assert result.errors == []
    assert "OTX has nothing for domain example.com" in result.stderr
    assert pages(srv) == [1]


def test_429_after_retries_is_one_error(workdir: Path) -> None:
    with FakeOtxServer(urls=SMALL, fail_pages={1: [otx_throttled(1)] * 2}) as srv:
        result = crawl(workdir, srv)
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1, result.errors
    assert "rate limited (HTTP 429)" in result.errors[0]
    assert "Expected available in 1 seconds" in result.errors[0]
    assert result.stat("trawl/outcome") == "failed"


def test_5xx_after_retries_is_one_error_other_pages_kept(workdir: Path) -> None:
    with FakeOtxServer(urls=BIG, fail_pages={2: [server_error(502)] * 2}) as srv:
        result = crawl(workdir, srv, "-o", "u.txt")
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1 and "HTTP 502 for page 2" in result.errors[0]
    assert result.stat("trawl/outcome") == "partial"
    assert SMALL_FILTERED <= set(result.lines("u.txt")) < BIG_FILTERED


def test_html_page_with_status_200(workdir: Path) -> None:
    with FakeOtxServer(urls=SMALL, html_200_pages={1}) as srv:
        result = crawl(workdir, srv)
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1 and "HTML page instead of JSON" in result.errors[0]


def test_malformed_json(workdir: Path) -> None:
    with FakeOtxServer(urls=BIG, malformed_pages={3}) as srv:
        result = crawl(workdir, srv)
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1 and "page 3: unreadable JSON" in result.errors[0]


def test_unreachable(workdir: Path) -> None:
    result = crawl(workdir, None, settings={"RETRY_TIMES": 0})
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1 and "cannot reach" in result.errors[0]
    assert result.stat("trawl/outcome") == "failed"


# --- keys -------------------------------------------------------------------------------


def test_key_is_sent_and_never_written_through_retries(workdir: Path) -> None:
    # a 429 and a 503 are retried (RETRY_TIMES=1) and the run completes
    faults = {1: [otx_throttled(1)], 2: [server_error(503)]}
    with FakeOtxServer(urls=BIG, valid_keys={KEY}, fail_pages=faults) as srv:
        result = crawl(workdir, srv, "-o", "u.txt", settings={"LOG_LEVEL": "DEBUG", "OTX_API_KEY": KEY})
    assert result.returncode == 0, result.stderr[-2000:]
    assert sorted(pages(srv)) == [1, 1, 2, 2, 3]
    assert {r.header("X-OTX-API-KEY") for r in srv.requests} == {KEY}
    assert all(KEY not in r.raw_query for r in srv.requests)  # a header, never the URL
    assert KEY not in result.stderr
    for path in workdir.glob("trawl.db*"):
        assert KEY.encode() not in path.read_bytes()
    assert set(result.lines("u.txt")) == BIG_FILTERED


def test_key_from_the_environment(workdir: Path) -> None:
    with FakeOtxServer(urls=SMALL) as srv:
        result = crawl(workdir, srv, settings={"LOG_LEVEL": "DEBUG"}, env={"OTX_API_KEY": KEY})
    assert result.returncode == 0
    assert [r.header("X-OTX-API-KEY") for r in srv.requests] == [KEY]
    assert KEY not in result.stderr


def test_refused_key_is_one_error_then_no_key(workdir: Path) -> None:
    bad = "KEY-OTX-BAD-SECRET-9"
    with FakeOtxServer(urls=BIG, valid_keys={KEY}) as srv:
        result = crawl(workdir, srv, "-o", "u.txt", settings={"OTX_API_KEY": bad, "LOG_LEVEL": "DEBUG"})
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1
    assert "key #1 was refused (HTTP 403" in result.errors[0]
    assert bad not in result.stderr
    keys = [r.header("X-OTX-API-KEY") for r in srv.requests]
    assert keys[0] == bad and bad not in keys[1:]
    assert set(result.lines("u.txt")) == BIG_FILTERED  # the data is public: asked again without it


# --- check only ---------------------------------------------------------------------------


def test_check_only_sends_one_counting_request(workdir: Path) -> None:
    with FakeOtxServer(urls=BIG) as srv:
        result = crawl(workdir, srv, "-a", "check_only=true", "-o", "u.txt")
    assert result.returncode == 0, result.stderr[-2000:]
    assert [(r.param("limit"), r.param("page")) for r in srv.requests] == [("1", "1")]
    assert result.stat("trawl/estimate/requests") == "3"
    assert "check only: 1108 URL(s) for domain example.com: 3 request(s) of 500" in result.stderr
    assert not (workdir / "u.txt").exists() or result.lines("u.txt") == []
