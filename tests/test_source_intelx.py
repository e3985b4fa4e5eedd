"""``scrapy crawl intelx`` end to end against local Intelligence X phonebook stand-ins.

Two fake bases run side by side: the paid one (``INTELX_BASE_URL``) and the
free one (``INTELX_FALLBACK_BASE_URL``) the spider falls back to on 401/403.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.servers.intelx import FakeIntelX, html_200, malformed, rate_limited, search_status, server_error

KEY = "ix-test-key-0123456789"
NO_KEY_ENV = {"INTELX_API_KEY": "", "INTELX_API_KEYS": ""}
SEARCH, RESULT, INFO = "/phonebook/search", "/phonebook/search/result", "/authenticate/info"

VALUES = [
    "https://example.com/",
    "http://www.example.com/login?next=/home",
    "api.example.com/v1/users",  # no scheme: read as http://
    "https://example.com/",  # again, in the next chunk
    "https://dev.example.com/app.js",
    "https://notexample.com/x",  # another domain: scope drops it
    "https://ex███le.com/secret",  # masked by the Academia plan: not a URL
    "https://example.com/assets/site.css",  # FILTER_URL drops it
    "sub.example.com",  # a bare host name
]
EXPECTED = {
    "https://example.com/",
    "http://www.example.com/login?next=/home",
    "http://api.example.com/v1/users",
    "https://dev.example.com/app.js",
    "http://sub.example.com/",
}


@pytest.fixture
def bases() -> Iterator[tuple[FakeIntelX, FakeIntelX]]:
    """(paid, free): by default the paid base accepts the key."""
    with FakeIntelX(keys={KEY}, selectors={"example.com": VALUES}) as paid:
        with FakeIntelX(keys={KEY}, selectors={"example.com": VALUES}) as free:
            yield paid, free


def crawl(
    workdir: Path,
    bases: tuple[FakeIntelX, FakeIntelX],
    *extra: str,
    key: str | None = KEY,
    settings: dict | None = None,
) -> CrawlResult:
    paid, free = bases
    merged: dict[str, object] = {
        "INTELX_BASE_URL": paid.base_url,
        "INTELX_FALLBACK_BASE_URL": free.base_url,
        "INTELX_PAGE_SIZE": 3,
        "INTELX_POLL_INTERVAL": 0,
        "RETRY_TIMES": 1,
        "RETRY_BACKOFF_BASE": 0.01,
    }
    merged.update(settings or {})
    env = dict(NO_KEY_ENV)
    if key is not None:
        env["INTELX_API_KEY"] = key
    return run_scrapy(workdir, *crawl_args("intelx", "example.com", merged, *extra), env=env)


# --- the main path ---------------------------------------------------------------------------


def test_exact_urls_pages_and_wire_format(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX]) -> None:
    paid, free = bases
    result = crawl(workdir, bases, "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    lines = result.lines("urls.txt")
    assert set(lines) == EXPECTED and len(lines) == len(EXPECTED)

    [search] = paid.requests_to(SEARCH)
    assert search.method == "POST"
    assert search.headers["x-key"] == KEY
    assert search.headers["content-type"] == "application/json"
    body = search.body or {}
    assert (body["term"], body["target"], body["media"]) == ("example.com", 3, 0)
    assert (body["maxresults"], body["timeout"]) == (10000, 5)
    results = paid.requests_to(RESULT)
    # 9 values in chunks of 3 (status 0 each), then status 1 with nothing
    assert len(results) == 4
    assert all(r.params["limit"] == "3" and r.params["offset"] == "-1" for r in results)
    assert all(r.headers["x-key"] == KEY and r.method == "GET" for r in results)
    assert len({r.params["id"] for r in results}) == 1
    assert free.requests == []

    assert result.stat("trawl/pages") == "4"
    assert result.stat("trawl/intelx/masked") == "1"
    assert "1 value(s) masked" in result.stderr
    assert result.stat("trawl/filtered/out_of_scope") == "1"
    row = result.stored()["https://example.com/"]
    assert (row["sources"], row["captures"], row["first_seen"]) == ("intelx", 2, None)


def test_last_chunk_with_status_1(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX]) -> None:
    paid, _ = bases
    paid.end_with_results = True
    result = crawl(workdir, bases, "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(result.lines("urls.txt")) == EXPECTED
    assert len(paid.requests_to(RESULT)) == 3


def test_not_ready_then_results_then_done(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX]) -> None:
    """status 3, then 0 with every value, then 1: the poll waits, without blocking."""
    paid, _ = bases
    paid.not_ready = 1
    started = time.monotonic()
    settings = {"INTELX_PAGE_SIZE": 100, "INTELX_POLL_INTERVAL": 0.6, "PROGRESS_INTERVAL": 0.1}
    result = crawl(workdir, bases, "-o", "urls.txt", settings=settings)
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(result.lines("urls.txt")) == EXPECTED
    results = paid.requests_to(RESULT)
    assert len(results) == 3  # 3, 0, 1
    assert result.stat("trawl/intelx/polls") == "1"
    assert result.stat("trawl/pages") == "2"
    assert time.monotonic() - started >= 0.6
    # the reactor kept running while the poll waited: progress lines went on
    progress = [line for line in result.stderr.splitlines() if "captures/s |" in line]
    assert len(progress) >= 3, result.stderr[-3000:]


def test_never_ready_is_one_error(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX]) -> None:
    paid, _ = bases
    paid.not_ready = 10
    result = crawl(workdir, bases, settings={"INTELX_MAX_POLLS": 2})
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1 and "no results ready after 2 polls" in result.errors[0]
    assert len(paid.requests_to(RESULT)) == 3


def test_search_id_not_found(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX]) -> None:
    bases[0].forget_searches = True
    result = crawl(workdir, bases)
    assert result.returncode == 1
    assert len(result.errors) == 1 and "status 2: search id not found" in result.errors[0]


def test_empty_result(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX]) -> None:
    bases[0].selectors = {}
    result = crawl(workdir, bases, "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.errors == []
    assert result.stat("trawl/outcome") == "complete"
    assert len(bases[0].requests_to(RESULT)) == 1
    assert not (workdir / "urls.txt").exists() or result.lines("urls.txt") == []


def test_limit_requests(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX]) -> None:
    result = crawl(workdir, bases, "-a", "limit_requests=2", "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(bases[0].requests_to(RESULT)) == 2
    assert "limit_requests=2" in result.stderr
    assert set(result.lines("urls.txt")) == {
        "https://example.com/",
        "http://www.example.com/login?next=/home",
        "http://api.example.com/v1/users",
        "https://dev.example.com/app.js",
    }


# --- keys and the fallback base ---------------------------------------------------------------


def test_free_key_falls_back_to_the_free_base(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX]) -> None:
    paid, free = bases
    paid.keys = set()
    result = crawl(workdir, bases, "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(result.lines("urls.txt")) == EXPECTED
    assert [r.path for r in paid.requests] == [SEARCH]
    assert len(free.requests_to(SEARCH)) == 1 and len(free.requests_to(RESULT)) == 4
    assert f"refused key #1 (HTTP 401); trying {free.base_url}" in result.stderr
    assert result.errors == []


@pytest.mark.parametrize("status", [401, 403])
def test_key_refused_by_both_bases(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX], status: int) -> None:
    for base in bases:
        base.keys, base.refuse_status = set(), status
    result = crawl(workdir, bases)
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1
    assert f"IntelX refused key #1 (HTTP {status}" in result.errors[0]
    assert len(bases[0].requests) == 1 and len(bases[1].requests) == 1  # once each
    assert KEY not in result.stderr


def test_out_of_credits(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX]) -> None:
    bases[0].credits = 0
    result = crawl(workdir, bases)
    assert result.returncode == 1
    assert (
        len(result.errors) == 1 and "key #1 is out of phonebook search credits (HTTP 402)" in result.errors[0]
    )


def test_missing_key_skips_the_source(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX]) -> None:
    result = crawl(workdir, bases, key=None)
    assert result.returncode == 1
    assert_no_traceback(result)
    warnings = [line for line in result.stderr.splitlines() if "] WARNING:" in line]
    assert len(warnings) == 1 and "intelx: skipped: no API key (set INTELX_API_KEY" in warnings[0]
    assert result.errors == []
    assert result.stat("trawl/outcome") == "skipped-no-key"
    assert bases[0].requests == [] and bases[1].requests == []


def test_key_never_in_debug_log_or_store(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX]) -> None:
    bases[0].keys = set()  # through the fallback, with a retried 5xx on the way
    bases[1].faults = {"result": [server_error(503)]}
    by_env = crawl(workdir, bases, "-o", "urls.txt", settings={"LOG_LEVEL": "DEBUG"})
    assert by_env.returncode == 0, by_env.stderr[-3000:]
    assert "Retrying <GET" in by_env.stderr
    by_setting = crawl(
        workdir, bases, "-O", "again.txt", key=None, settings={"LOG_LEVEL": "DEBUG", "INTELX_API_KEY": KEY}
    )
    assert by_setting.returncode == 0, by_setting.stderr[-3000:]
    for result in (by_env, by_setting):
        assert KEY not in result.stderr and KEY not in result.stdout
    for path in workdir.iterdir():
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path.name


# --- error shapes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "faults", "message", "kind"),
    [
        ("search", [search_status(1)], "status 1: invalid term", "api"),
        ("search", [search_status(2)], "status 2: too many concurrent searches", "api"),
        (
            "search",
            [rate_limited(), rate_limited()],
            "rate limited (HTTP 429) after 1 retries",
            "rate_limited",
        ),
        (
            "result",
            [rate_limited(), rate_limited()],
            "rate limited (HTTP 429) after 1 retries",
            "rate_limited",
        ),
        ("result", [server_error(502), server_error(502)], "HTTP 502 from http://127.0.0.1:", "http"),
        ("result", [html_200()], "result page 1: IntelX sent an HTML page instead of JSON", "html"),
        # retried like a 5xx (RETRY_TIMES=1), then given up
        ("result", [malformed(), malformed()], "result page 1: unreadable answer", "malformed"),
    ],
)
def test_error_shapes(
    workdir: Path, bases: tuple[FakeIntelX, FakeIntelX], endpoint: str, faults: list, message: str, kind: str
) -> None:
    bases[0].faults = {endpoint: list(faults)}
    result = crawl(workdir, bases)
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1, result.errors
    assert message in result.errors[0]
    assert result.stat(f"trawl/errors/{kind}") == "1"


def test_5xx_is_retried(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX]) -> None:
    bases[0].faults = {"search": [server_error(500)], "result": [server_error(503)]}
    result = crawl(workdir, bases, "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(result.lines("urls.txt")) == EXPECTED


# --- check_only ----------------------------------------------------------------------------------


def test_check_only_reads_credits_only(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX]) -> None:
    paid, free = bases
    paid.keys = set()  # a free key: the info request falls back too
    free.credits = 7
    result = crawl(
        workdir,
        bases,
        "-a",
        "check_only=true",
        settings={"INTELX_MAX_RESULTS": 1000, "INTELX_PAGE_SIZE": 100},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert [r.path for r in paid.requests] == [INFO]
    assert [r.path for r in free.requests] == [INFO]
    assert "key #1 at fallback: 7 of 50 phonebook search credit(s) left" in result.stderr
    assert result.stat("trawl/estimate/requests") == "12"  # search + 10 pages + the final answer
    assert free.credits == 7


def test_bad_settings(workdir: Path, bases: tuple[FakeIntelX, FakeIntelX]) -> None:
    result = crawl(workdir, bases, settings={"INTELX_FALLBACK_BASE_URL": "ftp://x"})
    assert result.returncode == 2
    assert "trawl: error: INTELX_FALLBACK_BASE_URL must be an http(s) URL" in result.stderr
    result = crawl(workdir, bases, settings={"INTELX_PAGE_SIZE": 0})
    assert result.returncode == 2 and "INTELX_PAGE_SIZE must be a whole number (at least 1)" in result.stderr
    assert bases[0].requests == []
