"""``scrapy crawl urlscan`` end to end against a local urlscan.io search stand-in.

Page 1 of most tests is the recorded 2023 answer (100 results, ``has_more:
false``); the results after it are built in the same shape. What a user sees
is checked: URLs written, rows stored, lines logged, requests the server
received (keys, ``search_after``, timing), the exit status.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from urllib.parse import urlencode
from urllib.request import urlopen

from tests.conftest import CrawlResult, assert_no_traceback
from tests.helpers.urlscan import EVERYTHING, EXTRA, FILTERED, RECORDED_FILTERED, crawl
from tests.servers.urlscan import (
    SAMPLE,
    FakeUrlscanServer,
    KeyQuota,
    make_result,
    server_error,
)
from trawl.sources.urlscan.paging import smaller_size

KEY_A = "KEY-AAAA-SECRET-1"
KEY_B = "KEY-BBBB-SECRET-2"
KEY_BAD = "KEY-CCCC-REFUSED-3"
LAST_RECORDED_SORT = "1675117496569,726a4563-1d15-4b19-8ca9-78aed27b60c5"


def keyed(*keys: str, **settings: object) -> dict[str, object]:
    return {"URLSCAN_API_KEYS": ",".join(keys), "LOG_LEVEL": "DEBUG", **settings}


def used_keys(server: FakeUrlscanServer) -> list[str | None]:
    return [r.header("API-Key") for r in server.requests]


def assert_keys_hidden(result: CrawlResult, server: FakeUrlscanServer, *keys: str) -> None:
    """Not in a DEBUG run's stderr, not in the store's bytes, never in a URL."""
    for key in keys:
        assert key not in result.stderr
        for path in result.workdir.glob("trawl.db*"):
            assert key.encode() not in path.read_bytes(), path
        assert all(key not in r.raw_query for r in server.requests)


def expected_search_after(server: FakeUrlscanServer, size: int, pages: int) -> list[str | None]:
    """``search_after`` of each page: the sort values of the previous page's last result."""
    ordered = server.results
    return [None] + [",".join(str(v) for v in ordered[size * n - 1]["sort"]) for n in range(1, pages)]


# --- the recorded answer ----------------------------------------------------------------------


def test_fake_replays_the_recording_byte_for_byte() -> None:
    with FakeUrlscanServer.from_sample(EXTRA, total_override=1511) as srv:
        query = urlencode({"q": "domain:example.com", "size": "100"})
        with urlopen(f"{srv.base_url}/api/v1/search/?{query}") as answer:
            body = answer.read()
            assert answer.headers["Content-Type"] == "application/json; charset=utf-8"
    assert body == SAMPLE.read_bytes()


def test_full_page_with_has_more_false_is_not_the_end(workdir: Path) -> None:
    with FakeUrlscanServer.from_sample(EXTRA) as srv:
        result = crawl(workdir, srv, "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    lines = result.lines("urls.txt")
    assert set(lines) == FILTERED
    assert len(lines) == len(set(lines))
    # page 1 (the recording: 100 results, has_more false), page 2 (30: short, the end)
    assert [r.param("search_after") for r in srv.requests] == [None, LAST_RECORDED_SORT]
    assert {(r.path, r.param("q"), r.param("size")) for r in srv.requests} == {
        ("/api/v1/search/", "domain:example.com", "100")
    }
    assert used_keys(srv) == [None, None]  # no key: the public quota
    assert result.stat("trawl/pages") == "2" and result.stat("trawl/pages_total") == "2"

    rows = result.stored()
    assert set(rows) == FILTERED
    root = rows["https://example.com/"]
    assert (root["first_seen"], root["last_seen"], root["captures"]) == (
        "20230130224404",
        "20230201234929",
        46,
    )
    assert (root["statuses"], root["mimes"], root["sources"]) == ("200", "text/html", "urlscan")
    # a submitted URL and a PTR host carry no status or mime of their own
    assert (
        rows["https://example.com/redirect?to=other"]["statuses"],
        rows["http://edge-1.example.com/"]["mimes"],
    ) == (
        "",
        "",
    )
    assert rows["http://edge-1.example.com/"]["first_seen"] == "20230116100000"


def test_filters_false(workdir: Path) -> None:
    with FakeUrlscanServer.from_sample(EXTRA) as srv:
        result = crawl(workdir, srv, "-a", "filters=false", "-o", "u.txt")
    assert set(result.lines("u.txt")) == EVERYTHING


def test_search_after_page_by_page_to_an_empty_page(workdir: Path) -> None:
    # 130 results, 10 a page: 13 full pages (has_more false on each), then an empty one
    with FakeUrlscanServer.from_sample(EXTRA) as srv:
        result = crawl(workdir, srv, "-o", "u.txt", settings={"URLSCAN_PAGE_SIZE": 10})
        expected = expected_search_after(srv, 10, 14)
    assert result.returncode == 0
    assert [r.param("search_after") for r in srv.requests] == expected
    assert {r.param("size") for r in srv.requests} == {"10"}
    assert set(result.lines("u.txt")) == FILTERED


def test_dates_go_into_the_query(workdir: Path) -> None:
    with FakeUrlscanServer.from_sample(EXTRA) as srv:
        result = crawl(workdir, srv, "-a", "from_date=2023", "-a", "to_date=20230131", "-o", "u.txt")
    assert result.returncode == 0
    # the day after to_date: Elasticsearch reads a bare date as midnight
    assert {r.param("q") for r in srv.requests} == {"domain:example.com AND date:[2023-01-01 TO 2023-02-01]"}
    assert set(result.lines("u.txt")) == FILTERED - {"https://example.com/2022"}
    root = result.stored()["https://example.com/"]
    assert (root["first_seen"], root["last_seen"]) == ("20230130224404", "20230131222506")


# --- keys ---------------------------------------------------------------------------------


def test_keys_are_used_in_turn_and_never_written(workdir: Path) -> None:
    with FakeUrlscanServer.from_sample(EXTRA, valid_keys={KEY_A, KEY_B}) as srv:
        result = crawl(workdir, srv, "-o", "u.txt", settings=keyed(KEY_A, KEY_B, URLSCAN_PAGE_SIZE=30))
    assert result.returncode == 0, result.stderr[-2000:]
    assert used_keys(srv) == [KEY_A, KEY_B, KEY_A, KEY_B, KEY_A]
    assert set(result.lines("u.txt")) == FILTERED
    assert_keys_hidden(result, srv, KEY_A, KEY_B)


def test_key_from_the_environment(workdir: Path) -> None:
    with FakeUrlscanServer.from_sample(EXTRA, valid_keys={KEY_A}) as srv:
        result = crawl(workdir, srv, settings={"LOG_LEVEL": "DEBUG"}, env={"URLSCAN_API_KEY": KEY_A})
    assert result.returncode == 0
    assert used_keys(srv) == [KEY_A, KEY_A]
    assert_keys_hidden(result, srv, KEY_A)


def test_rate_limited_key_rests_next_key_goes_on(workdir: Path) -> None:
    quota_a = KeyQuota(serves=0, block=1.0)
    with FakeUrlscanServer.from_sample(EXTRA, valid_keys={KEY_A, KEY_B}, quotas={KEY_A: quota_a}) as srv:
        result = crawl(workdir, srv, "-o", "u.txt", settings=keyed(KEY_A, KEY_B, URLSCAN_PAGE_SIZE=20))
    assert result.returncode == 0, result.stderr[-2000:]
    assert_no_traceback(result)
    keys = used_keys(srv)
    assert keys[:2] == [KEY_A, KEY_B]  # 429 for A: the same page again, with B
    assert [r.param("search_after") for r in srv.requests[:2]] == [None, None]
    assert len(quota_a.refused_at) == 1  # A was not asked again while resting
    reset = quota_a.refused_at[0] + 1.0
    assert all(r.time >= reset for r in srv.requests[1:] if r.header("API-Key") == KEY_A)
    assert set(result.lines("u.txt")) == FILTERED
    assert "key #1 hit its rate limit (minute window); resting 1 s" in result.stderr
    assert result.errors == []
    assert_keys_hidden(result, srv, KEY_A, KEY_B)


def test_all_keys_resting_waits_without_blocking(workdir: Path) -> None:
    quotas = {KEY_A: KeyQuota(serves=0, block=1.0), KEY_B: KeyQuota(serves=1, block=30.0)}
    with FakeUrlscanServer.from_sample(EXTRA, valid_keys={KEY_A, KEY_B}, quotas=quotas) as srv:
        result = crawl(
            workdir,
            srv,
            "-o",
            "u.txt",
            settings=keyed(KEY_A, KEY_B, URLSCAN_PAGE_SIZE=50, PROGRESS_INTERVAL=0.2),
        )
    assert result.returncode == 0, result.stderr[-2000:]
    # A: 429; B: page 1; B: 429 on page 2; nobody left: wait for A's reset; A goes on
    assert used_keys(srv) == [KEY_A, KEY_B, KEY_B, KEY_A, KEY_A]
    assert srv.requests[3].time >= quotas[KEY_A].refused_at[0] + 1.0
    assert srv.requests[3].param("search_after") == srv.requests[2].param("search_after")
    assert set(result.lines("u.txt")) == FILTERED
    # the reactor kept running while the spider waited: progress lines went on
    log = result.stderr.split("urlscan: every API key is rate limited; waiting", 1)[1]
    assert log.count("urlscan: pages ") >= 3, result.stderr[-3000:]
    assert_keys_hidden(result, srv, KEY_A, KEY_B)


def test_keyless_quota_waits_for_its_reset(workdir: Path) -> None:
    quota = KeyQuota(serves=1, block=1.0)
    with FakeUrlscanServer.from_sample(EXTRA, quotas={None: quota}) as srv:
        result = crawl(workdir, srv, "-o", "u.txt")
    assert result.returncode == 0, result.stderr[-2000:]
    assert [r.param("search_after") for r in srv.requests] == [None, LAST_RECORDED_SORT, LAST_RECORDED_SORT]
    assert srv.requests[2].time >= quota.refused_at[0] + 1.0
    assert "urlscan: the public (keyless) quota is rate limited; waiting" in result.stderr
    assert set(result.lines("u.txt")) == FILTERED


def test_wait_longer_than_max_wait_stops(workdir: Path) -> None:
    quotas = {KEY_A: KeyQuota(serves=1, block=120.0)}
    with FakeUrlscanServer.from_sample(EXTRA, quotas=quotas) as srv:
        result = crawl(workdir, srv, "-o", "u.txt", settings=keyed(KEY_A, URLSCAN_MAX_WAIT=10))
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(srv.requests) == 2
    assert len(result.errors) == 1 and "longer than URLSCAN_MAX_WAIT=10 s" in result.errors[0]
    assert result.stat("trawl/outcome") == "partial"
    assert set(result.lines("u.txt")) == RECORDED_FILTERED
    assert_keys_hidden(result, srv, KEY_A)


def test_refused_key_is_dropped_with_one_warning(workdir: Path) -> None:
    with FakeUrlscanServer.from_sample(EXTRA, valid_keys={KEY_B}) as srv:
        result = crawl(workdir, srv, "-o", "u.txt", settings=keyed(KEY_BAD, KEY_B, URLSCAN_PAGE_SIZE=30))
    assert result.returncode == 0, result.stderr[-2000:]
    assert used_keys(srv) == [KEY_BAD] + [KEY_B] * 5
    warnings = [line for line in result.stderr.splitlines() if "key #1" in line]
    assert len(warnings) == 1 and "WARNING" in warnings[0]
    assert "key #1 was refused (HTTP 401: Unauthorized" in warnings[0]
    assert result.errors == []
    assert set(result.lines("u.txt")) == FILTERED
    assert_keys_hidden(result, srv, KEY_BAD, KEY_B)


def test_every_key_refused_goes_on_without_a_key(workdir: Path) -> None:
    with FakeUrlscanServer.from_sample(EXTRA, valid_keys={KEY_B}) as srv:
        result = crawl(workdir, srv, "-o", "u.txt", settings=keyed(KEY_BAD))
    assert result.returncode == 1
    assert_no_traceback(result)
    assert used_keys(srv) == [KEY_BAD, None, None]
    assert len(result.errors) == 1 and "every API key was refused" in result.errors[0]
    assert set(result.lines("u.txt")) == FILTERED
    assert_keys_hidden(result, srv, KEY_BAD)


# --- what urlscan answers when things go wrong ------------------------------------------------


def test_5xx_is_retried_then_one_error(workdir: Path) -> None:
    faults = {1: [server_error(503)], 2: [server_error(502), server_error(502)]}
    with FakeUrlscanServer.from_sample(EXTRA, fail_pages=faults) as srv:
        result = crawl(workdir, srv, "-o", "u.txt")
    assert result.returncode == 1
    assert_no_traceback(result)
    assert [r.param("search_after") for r in srv.requests] == [
        None,
        None,
        LAST_RECORDED_SORT,
        LAST_RECORDED_SORT,
    ]
    assert len(result.errors) == 1 and "HTTP 502 for search page 2 (after retries)" in result.errors[0]
    assert result.stat("trawl/outcome") == "partial"
    assert set(result.lines("u.txt")) == RECORDED_FILTERED


def test_html_page_with_status_200(workdir: Path) -> None:
    with FakeUrlscanServer.from_sample(EXTRA, html_200_pages={1}) as srv:
        result = crawl(workdir, srv)
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1 and "HTML page instead of JSON" in result.errors[0]
    assert result.stat("trawl/outcome") == "failed"


def test_malformed_json(workdir: Path) -> None:
    with FakeUrlscanServer.from_sample(EXTRA, malformed_pages={2}) as srv:
        result = crawl(workdir, srv, "-o", "u.txt")
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1 and "search page 2: unreadable JSON" in result.errors[0]
    assert set(result.lines("u.txt")) == RECORDED_FILTERED


def test_bad_query_at_the_default_size_is_one_error_after_the_smaller_sizes(workdir: Path) -> None:
    # a 400 is read as the plan refusing the size until 100; refused at 100 too, it is the query
    body = json.dumps({"message": "Search query invalid", "status": 400}).encode()
    fault = (400, body, {"Content-Type": "application/json"})
    with FakeUrlscanServer.from_sample(EXTRA, faults=[fault] * 3) as srv:
        result = crawl(workdir, srv, page_size=None)
    assert result.returncode == 1
    assert_no_traceback(result)
    assert [(r.param("size"), r.param("search_after")) for r in srv.requests] == [
        ("10000", None),
        ("1000", None),
        ("100", None),
    ]
    assert len(result.errors) == 1 and "HTTP 400 for search page 1: Search query invalid" in result.errors[0]
    assert "the plan refused" not in result.stderr


def test_bad_query_answer(workdir: Path) -> None:
    body = json.dumps({"message": "Search query invalid", "status": 400}).encode()
    with FakeUrlscanServer.from_sample(
        EXTRA, faults=[(400, body, {"Content-Type": "application/json"})]
    ) as srv:
        result = crawl(workdir, srv)
    assert result.returncode == 1
    assert len(result.errors) == 1 and "HTTP 400 for search page 1: Search query invalid" in result.errors[0]


def test_empty_result(workdir: Path) -> None:
    with FakeUrlscanServer(results=[]) as srv:
        result = crawl(workdir, srv, "-o", "u.txt")
    assert result.returncode == 0
    assert len(srv.requests) == 1
    assert result.stat("trawl/outcome") == "complete"


# --- paging robustness ------------------------------------------------------------------------


def test_plan_serving_fewer_than_size(workdir: Path) -> None:
    # size=10000 served 40 a page: short pages, yet fewer results read than total: not the end
    with FakeUrlscanServer.from_sample(EXTRA, max_size=40) as srv:
        result = crawl(workdir, srv, "-o", "u.txt", page_size=None)
    assert result.returncode == 0
    assert [r.param("size") for r in srv.requests] == ["10000"] * 4  # 40 + 40 + 40 + 10 = 130
    assert set(result.lines("u.txt")) == FILTERED
    # the progress counts pages at what the plan serves, not at what was asked
    assert result.stat("trawl/pages") == "4" and result.stat("trawl/pages_total") == "4"
    assert "the plan refused" not in result.stderr


def test_server_ignoring_search_after_is_not_walked_forever(workdir: Path) -> None:
    with FakeUrlscanServer.from_sample(EXTRA, ignore_search_after=True) as srv:
        result = crawl(workdir, srv, settings={"URLSCAN_PAGE_SIZE": 50})
    assert len(srv.requests) == 2
    assert "ignores search_after" in result.stderr
    assert_no_traceback(result)


def test_limit_requests(workdir: Path) -> None:
    with FakeUrlscanServer.from_sample(EXTRA) as srv:
        result = crawl(workdir, srv, "-a", "limit_requests=2", settings={"URLSCAN_PAGE_SIZE": 10})
    assert result.returncode == 0
    assert len(srv.requests) == 2
    assert "limit_requests=2" in result.stderr


def test_bad_page_size_setting(workdir: Path) -> None:
    result = crawl(workdir, None, settings={"URLSCAN_PAGE_SIZE": 20000})
    assert result.returncode == 2
    assert_no_traceback(result)
    errors = [line for line in result.stderr.splitlines() if line.startswith("trawl: error:")]
    assert errors == ["trawl: error: URLSCAN_PAGE_SIZE must be a whole number from 1 to 10000, got '20000'"]
    assert "Spider opened" not in result.stderr


# --- page size: 10000 a page, smaller when the plan refuses it --------------------------------------


def scans(count: int) -> list[dict]:
    """``count`` scans of ``https://example.com/p/<i>``, one a minute (one URL each)."""
    start = dt.datetime(2023, 1, 1, tzinfo=dt.timezone.utc)
    return [
        make_result(
            f"https://example.com/p/{i}",
            (start + dt.timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        )
        for i in range(count)
    ]


def size_log(result: CrawlResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if "the plan refused size=" in line]


def test_smaller_sizes_step_down_to_urlscans_default() -> None:
    refused = (10_000, 5_000, 1_000, 500, 100, 10)
    assert [smaller_size(n) for n in refused] == [1000, 1000, 100, 100, None, None]


def test_default_asks_10000_a_page_and_sends_far_fewer_requests(tmp_path: Path) -> None:
    data = scans(2500)
    expected = {r["page"]["url"] for r in data}
    (big := tmp_path / "default").mkdir()
    (small := tmp_path / "small").mkdir()
    with FakeUrlscanServer(results=data) as srv:
        default = crawl(big, srv, "-o", "u.txt", page_size=None)
        default_requests = list(srv.requests)
    with FakeUrlscanServer(results=data) as srv:
        paged = crawl(small, srv, "-o", "u.txt", settings={"URLSCAN_PAGE_SIZE": 100}, page_size=None)
        small_requests = list(srv.requests)
    assert default.returncode == 0 and paged.returncode == 0, default.stderr[-2000:] + paged.stderr[-2000:]
    assert [(r.param("size"), r.param("search_after")) for r in default_requests] == [("10000", None)]
    # the user's explicit size is sent as is: 25 full pages, then the empty one
    assert {r.param("size") for r in small_requests} == {"100"} and len(small_requests) == 26
    assert set(default.stored()) == set(paged.stored()) == expected
    assert sorted(default.lines("u.txt")) == sorted(expected)
    assert size_log(default) == [] and size_log(paged) == []


def test_plan_capped_at_1000_steps_down_once_and_stores_the_same(workdir: Path) -> None:
    # total capped at 1000 and has_more true as well: the paging rule is exercised at the new size
    with FakeUrlscanServer(results=scans(2500), refuse_above=1000, total_cap=1000) as srv:
        result = crawl(workdir, srv, "-o", "u.txt", page_size=None)
        ordered = srv.results
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    assert result.errors == []
    after = [",".join(str(v) for v in ordered[n - 1]["sort"]) for n in (1000, 2000, 2500)]
    # refused at 10000; the same (first) page again at 1000; then on at 1000 to the empty page
    assert [(r.param("size"), r.param("search_after")) for r in srv.requests] == [
        ("10000", None),
        ("1000", None),
        ("1000", after[0]),
        ("1000", after[1]),
        ("1000", after[2]),
    ]
    assert srv.refused_sizes == [10000]
    lines = result.lines("u.txt")
    assert len(lines) == len(set(lines)) == 2500
    assert set(result.stored()) == set(lines) == {r["page"]["url"] for r in ordered}
    [line] = size_log(result)
    assert "size=10000 (HTTP 400: Search size too large" in line
    assert "1000 results a page for the rest of the run" in line


def test_plan_capped_at_100_steps_down_twice_logged_once(workdir: Path) -> None:
    with FakeUrlscanServer(results=scans(250), refuse_above=100) as srv:
        result = crawl(workdir, srv, "-o", "u.txt", page_size=None)
        expected = expected_search_after(srv, 100, 3)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [r.param("size") for r in srv.requests] == ["10000", "1000", "100", "100", "100"]
    assert [r.param("search_after") for r in srv.requests] == [None, None, *expected]
    assert srv.refused_sizes == [10000, 1000]
    assert len(result.lines("u.txt")) == len(set(result.lines("u.txt"))) == 250
    [line] = size_log(result)
    assert "size=10000 and 1000" in line and "100 results a page" in line


def test_explicit_page_size_is_honoured_as_is(workdir: Path) -> None:
    with FakeUrlscanServer(results=scans(250), refuse_above=1000) as srv:
        result = crawl(workdir, srv, "-o", "u.txt", settings={"URLSCAN_PAGE_SIZE": 500}, page_size=None)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [r.param("size") for r in srv.requests] == ["500"]
    assert srv.refused_sizes == []
    assert size_log(result) == []
    assert len(result.lines("u.txt")) == 250


# --- check only ---------------------------------------------------------------------------------


def test_check_only_one_counting_request(workdir: Path) -> None:
    with FakeUrlscanServer.from_sample(EXTRA) as srv:
        result = crawl(workdir, srv, "-a", "check_only=true", "-o", "u.txt")
    assert result.returncode == 0, result.stderr[-2000:]
    assert [(r.param("size"), r.param("search_after")) for r in srv.requests] == [("1", None)]
    assert result.stat("trawl/estimate/requests") == "2"
    assert result.stat("trawl/estimate/at_least") is None
    assert "check only: 130 scan(s) for example.com: 2 request(s) of 100" in result.stderr
    assert not (workdir / "u.txt").exists() or result.lines("u.txt") == []


def test_check_only_capped_total_is_a_lower_bound(workdir: Path) -> None:
    with FakeUrlscanServer.from_sample(EXTRA, total_cap=100) as srv:
        result = crawl(workdir, srv, "-a", "check_only=true", settings={"URLSCAN_PAGE_SIZE": 10})
    assert len(srv.requests) == 1
    assert result.stat("trawl/estimate/requests") == "10"
    assert result.stat("trawl/estimate/at_least") == "True"
    assert "at least 10 request(s)" in result.stderr
