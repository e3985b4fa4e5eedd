"""A body that does not parse is a transient fault, retried like a 5xx.

Before, ``otx: page 12: unreadable JSON (121301 bytes)`` was an ERROR and the page
was never asked for again (recall 0.9988 under injected faults); a CDX page with
lines that did not split got one immediate refetch and then lost its rows. Each
test injects one-shot spoilt bodies at a local server and reads what a user sees:
URLs stored, the requests the server logged, the lines printed, the exit status.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.servers.ia_cdx import FakeCdxServer, corrupted_body, make_capture, truncated_body
from tests.servers.otx import FakeOtxServer, corrupted_json, make_urls, truncated_json
from tests.servers.urlscan import FakeUrlscanServer, make_result

FAST_RETRIES = {"RETRY_BACKOFF_BASE": 0.01, "RETRY_BACKOFF_MAX": 0.05}
NO_KEYS = {"OTX_API_KEY": "", "OTX_API_KEYS": "", "URLSCAN_API_KEY": "", "URLSCAN_API_KEYS": ""}
OTX_URLS = list(make_urls("example.com", 1200))  # pages of 500, 500 and 200


def crawl(workdir: Path, source: str, settings: dict[str, object]) -> CrawlResult:
    args = crawl_args(source, "example.com", {**FAST_RETRIES, **settings}, "-a", "filters=false")
    return run_scrapy(workdir, *args, env=NO_KEYS)


def warnings(result: CrawlResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if "] WARNING:" in line]


def test_a_corrupt_otx_page_is_asked_for_again(workdir: Path) -> None:
    with FakeOtxServer(urls=OTX_URLS, fail_pages={2: [corrupted_json()], 3: [truncated_json()]}) as srv:
        result = crawl(workdir, "otx", {"OTX_BASE_URL": srv.base_url, "RETRY_TIMES": 2})
        asked = srv.pages_requested()
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.errors == []
    assert set(result.stored()) == {u.url for u in OTX_URLS}  # recall 1.000
    assert sorted(asked) == [1, 2, 2, 3, 3]
    said = warnings(result)
    assert any("otx: page 2: unreadable JSON" in line and "retry 1 of 2" in line for line in said)
    assert any("otx: page 3: unreadable JSON" in line and "retry 1 of 2" in line for line in said)
    assert result.stat("retry/reason_count/bad body") == "2"
    # The retry carries its count on purpose, not as a key copied by mistake.
    assert "internal meta keys" not in result.stderr


def test_a_body_that_stays_corrupt_is_given_up_after_the_budget(workdir: Path) -> None:
    with FakeOtxServer(urls=OTX_URLS, fail_pages={2: [corrupted_json()] * 3}) as srv:
        result = crawl(workdir, "otx", {"OTX_BASE_URL": srv.base_url, "RETRY_TIMES": 2})
        asked = srv.pages_requested()
    assert_no_traceback(result)
    assert result.returncode == 1
    assert sorted(asked) == [1, 2, 2, 2, 3]  # the first try and RETRY_TIMES=2 retries
    assert len(result.errors) == 1
    assert "otx: page 2: unreadable JSON" in result.errors[0]
    assert "gave up after 2 retries" in result.errors[0]
    assert result.stat("trawl/outcome") == "partial"
    assert result.stat("trawl/gave_up") == "1"
    assert len(result.stored()) == 700  # pages 1 and 3


def test_cdx_lines_that_do_not_split_are_retried_with_backoff(workdir: Path) -> None:
    captures = [
        make_capture(f"http://example.com/p{p}/u{r}", "20200101000000") for p in range(6) for r in range(5)
    ]
    with FakeCdxServer(captures, lines_per_page=5) as srv:
        srv.fail_pages = {1: [corrupted_body()], 2: [truncated_body(), truncated_body()]}
        result = crawl(workdir, "wayback", {"WAYBACK_BASE_URL": srv.base_url, "RETRY_TIMES": 3})
        asked = srv.pages_requested()
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(result.stored()) == {c.original for c in captures}  # no row lost
    assert asked.count(1) == 2 and asked.count(2) == 3
    assert result.stat("retry/reason_count/bad body") == "3"
    assert any("CDX page 2: 1 unreadable line(s) of 5; retry 2 of 3" in line for line in warnings(result))


def test_a_corrupt_urlscan_page_is_asked_for_again(workdir: Path) -> None:
    results = [
        make_result(f"https://example.com/scan/{i}", f"2023-01-{1 + i % 28:02d}T10:00:{i % 60:02d}.000Z")
        for i in range(30)
    ]
    with FakeUrlscanServer(results=results, fail_pages={2: [corrupted_json()]}) as srv:
        result = crawl(
            workdir, "urlscan", {"URLSCAN_BASE_URL": srv.base_url, "URLSCAN_PAGE_SIZE": 10, "RETRY_TIMES": 1}
        )
        searches = len(srv.search_requests())
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(result.stored()) == {f"https://example.com/scan/{i}" for i in range(30)}
    assert searches == 5  # pages 1, 2 (twice), 3, and the empty page that ends it
    assert any("urlscan: search page 2: unreadable JSON" in line for line in warnings(result))
