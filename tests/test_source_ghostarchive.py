"""``scrapy crawl ghostarchive`` end to end against a local GhostArchive search stand-in.

The fake's HTML layout is a guess (no page was recorded); what the tests pin
down is how the spider walks the pages: where it starts, how it follows "Next
Page", and the three ways a walk ends (no link, "No archives", the site
starting over at page 1).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.servers.ghostarchive import FakeGhostArchive, maintenance, server_error

TERM = ".example.com"
ARCHIVES = [
    "https://www.example.com/",
    "https://blog.example.com/post/1",
    "web.archive.org/web/20200101000000/https://shop.example.com/cart",  # an archived Wayback page
    "https://www.example.com/",  # a second archive of the same URL
    "https://web.archive.org/web/2015id_/http://old.example.com/",
    "https://notexample.com.evil.net/.example.com",  # the substring search's neighbour
    "www.example.com/about",
]
EXPECTED = {
    "https://www.example.com/",
    "https://blog.example.com/post/1",
    "https://shop.example.com/cart",
    "http://old.example.com/",
    "http://www.example.com/about",
}


@pytest.fixture
def server() -> Iterator[FakeGhostArchive]:
    with FakeGhostArchive(archives={TERM: ARCHIVES}, per_page=3) as srv:
        yield srv


def crawl(
    workdir: Path,
    server: FakeGhostArchive,
    *extra: str,
    domain: str = "example.com",
    settings: dict | None = None,
) -> CrawlResult:
    merged: dict[str, object] = {
        "GHOSTARCHIVE_BASE_URL": server.base_url,
        "RETRY_TIMES": 1,
        "RETRY_BACKOFF_BASE": 0.01,
    }
    merged.update(settings or {})
    return run_scrapy(workdir, *crawl_args("ghostarchive", domain, merged, *extra))


def test_exact_urls_pages_and_cookie(workdir: Path, server: FakeGhostArchive) -> None:
    result = crawl(workdir, server, "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    lines = result.lines("urls.txt")
    assert set(lines) == EXPECTED and len(lines) == len(EXPECTED)
    assert server.pages_asked() == [0, 1, 2]
    assert all(r.params["term"] == TERM for r in server.requests)
    assert all(r.cookie == "theme=original" for r in server.requests)
    assert result.stat("trawl/pages_total") == "3" and result.stat("trawl/pages") == "3"
    assert result.stat("trawl/filtered/out_of_scope") == "1"
    row = result.stored()["https://www.example.com/"]
    assert (row["sources"], row["captures"], row["first_seen"]) == ("ghostarchive", 2, None)


def test_one_based_numbering_follows_the_next_link(workdir: Path, server: FakeGhostArchive) -> None:
    server.one_based = True
    server.counter = "page"
    result = crawl(workdir, server, "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(result.lines("urls.txt")) == EXPECTED
    assert server.pages_asked() == [0, 2, 3]  # page 0 is page 1 there; its link says 2
    assert result.stat("trawl/pages_total") == "3"


def test_exactly_one_page(workdir: Path, server: FakeGhostArchive) -> None:
    server.per_page = 50
    result = crawl(workdir, server, "-o", "urls.txt")
    assert result.returncode == 0
    assert set(result.lines("urls.txt")) == EXPECTED
    assert server.pages_asked() == [0]
    assert result.stat("trawl/pages_total") == "1"


def test_empty_first_page(workdir: Path, server: FakeGhostArchive) -> None:
    result = crawl(workdir, server, "-o", "urls.txt", domain="example.org")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.errors == []
    assert "no archives for '.example.org'" in result.stderr
    assert server.pages_asked() == [0]
    assert result.stat("trawl/outcome") == "complete"
    assert not (workdir / "urls.txt").exists() or result.lines("urls.txt") == []


def test_reset_to_page_one_past_the_end_stops(workdir: Path, server: FakeGhostArchive) -> None:
    server.next_on_last = True  # only the repeated archives can stop the walk
    result = crawl(workdir, server, "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(result.lines("urls.txt")) == EXPECTED
    assert server.pages_asked() == [0, 1, 2, 3]
    assert "page 3 repeats archives already read" in result.stderr
    assert result.stat("trawl/pages") == "3"


def test_term_for_a_longer_name_and_scope(workdir: Path, server: FakeGhostArchive) -> None:
    server.archives = {"sub.example.com": ["https://sub.example.com/x", "https://notsub.example.com/y"]}
    result = crawl(workdir, server, "-o", "urls.txt", domain="sub.example.com")
    assert result.returncode == 0
    assert server.requests[0].params["term"] == "sub.example.com"
    assert set(result.lines("urls.txt")) == {"https://sub.example.com/x"}


def test_subs_false(workdir: Path, server: FakeGhostArchive) -> None:
    result = crawl(workdir, server, "-a", "subs=false", "-o", "urls.txt")
    assert set(result.lines("urls.txt")) == {"https://www.example.com/", "http://www.example.com/about"}


@pytest.mark.parametrize("status", [200, 503])
def test_maintenance_is_an_error(workdir: Path, server: FakeGhostArchive, status: int) -> None:
    server.faults = [maintenance(status), maintenance(status)]
    result = crawl(workdir, server)
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1 and "GhostArchive is under maintenance (page 0)" in result.errors[0]
    assert result.stat("trawl/outcome") == "failed"


def test_maintenance_on_a_later_page(workdir: Path, server: FakeGhostArchive) -> None:
    server.page_faults = {1: maintenance(200)}
    result = crawl(workdir, server, "-o", "urls.txt")
    assert result.returncode == 1
    assert len(result.errors) == 1 and "under maintenance (page 1)" in result.errors[0]
    assert result.stat("trawl/outcome") == "partial"
    assert set(result.lines("urls.txt")) == {
        "https://www.example.com/",
        "https://blog.example.com/post/1",
        "https://shop.example.com/cart",
    }


def test_http_error_after_retries(workdir: Path, server: FakeGhostArchive) -> None:
    server.faults = [server_error(502), server_error(502)]
    result = crawl(workdir, server)
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1 and "HTTP 502 for search page 0" in result.errors[0]


def test_5xx_is_retried(workdir: Path, server: FakeGhostArchive) -> None:
    server.faults = [server_error(502)]
    result = crawl(workdir, server, "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(result.lines("urls.txt")) == EXPECTED


def test_unknown_layout_is_not_an_empty_result(workdir: Path, server: FakeGhostArchive) -> None:
    page = b"<!DOCTYPE html><html><body><div class='cards'>Please enable JavaScript</div></body></html>"
    server.faults = [(200, page, {"Content-Type": "text/html"})]
    result = crawl(workdir, server)
    assert result.returncode == 1
    assert len(result.errors) == 1 and "no /archive/ links" in result.errors[0]


def test_limit_requests(workdir: Path, server: FakeGhostArchive) -> None:
    result = crawl(workdir, server, "-a", "limit_requests=2", "-o", "urls.txt")
    assert result.returncode == 0
    assert server.pages_asked() == [0, 1]
    assert "limit_requests=2" in result.stderr
    assert set(result.lines("urls.txt")) == EXPECTED - {"http://www.example.com/about"}


def test_check_only_reads_the_first_page_only(workdir: Path, server: FakeGhostArchive) -> None:
    result = crawl(workdir, server, "-a", "check_only=true", "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert server.pages_asked() == [0]
    assert result.stat("trawl/estimate/requests") == "3"
    assert not (workdir / "urls.txt").exists() or result.lines("urls.txt") == []
