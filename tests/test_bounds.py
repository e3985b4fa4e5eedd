"""Issue 15, item 6: a hostile upstream costs a bounded amount of memory and time, and is said so.

Before: an answer was bounded only by Scrapy's 1 GiB ``DOWNLOAD_MAXSIZE`` (an
endless chunked CDX page took a crawl to 1.17 GB of RSS, a gzip bomb the same);
a page cut off at the limit was two lines naming the whole request URL, the
second one ``cannot reach ...: DownloadCancelledError``; a page still dribbling
at the timeout was ``no answer within 120 s``, four times. Each test runs the
real ``trawl crawl`` against a hostile local server (tests/servers/hostile.py)
that answers page 0 of a CDX query properly and page 1 with the hostile body.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TEST_DEFAULTS, CrawlResult, assert_no_traceback
from tests.helpers import processes
from tests.servers.hostile import HostileServer, Mode

QUICK = {"RETRY_BACKOFF_BASE": 0.01, "RETRY_BACKOFF_MAX": 0.05}
#: Page 0 of the CDX answer: three captures in the plain-text form trawl asks for.
PAGE_0 = b"".join(
    b"http://example.com/p%d 20200101000000 200 text/html DIGEST%d 100\n" % (n, n) for n in range(3)
)


def cdx(path: str) -> bytes | None:
    """What the hostile server answers properly: the page count (2) and page 0."""
    if "showNumPages=true" in path:
        return b"2\n"
    if path.endswith("&page=0"):
        return PAGE_0
    return None


def trawl_crawl(workdir: Path, *args: str, settings: dict[str, object]) -> CrawlResult:
    """``trawl crawl ARGS -s NAME=VALUE...`` as a user runs it, with the tests' defaults."""
    given = {**TEST_DEFAULTS, **QUICK, **settings}
    command = [sys.executable, "-m", "trawl.cli", "crawl", *args, "-a", "domain=example.com"]
    command += [arg for name, value in given.items() for arg in ("-s", f"{name}={value}")]
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
    proc = processes.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    return CrawlResult(proc.returncode, proc.stdout, proc.stderr, workdir)


def hostile_wayback(workdir: Path, mode: Mode, settings: dict[str, object], **server: object) -> tuple:
    with HostileServer(mode, normal=cdx, **server) as srv:  # type: ignore[arg-type]
        result = trawl_crawl(workdir, "wayback", settings={"WAYBACK_BASE_URL": srv.base_url, **settings})
        pages = [line for line in srv.requests if "&page=" in line]
        return result, srv, pages


def warnings(result: CrawlResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if "] WARNING:" in line]


def assert_one_failed_page(result: CrawlResult) -> None:
    """Exit 1, page 0 stored, one error: the run says partial, in its finish line too."""
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr[-3000:]
    assert set(result.stored()) == {f"http://example.com/p{n}" for n in range(3)}
    assert result.stat("trawl/outcome") == "partial"
    assert re.search(r"wayback: partial \(finished\) in .*: \d+ requests, 1 page, .* 1 error,", result.stderr)


@pytest.mark.parametrize(
    ("setting", "limit"),
    [
        ({"SOURCE_DOWNLOAD_MAXSIZE": '{"wayback": 1048576}'}, "1 MiB"),
        ({"DOWNLOAD_MAXSIZE": 2000000}, "2,000,000 bytes"),
    ],
)
def test_an_endless_page_is_cut_off_at_the_limit_and_said_once(
    workdir: Path, setting: dict[str, object], limit: str
) -> None:
    result, srv, pages = hostile_wayback(workdir, "endless", setting)
    assert_one_failed_page(result)
    host = srv.base_url.split("//")[1]
    assert result.errors == [result.errors[0]]
    assert (
        f"] ERROR: wayback: page 1 from {host}: answer over the size limit of {limit} (DOWNLOAD_MAXSIZE): "
        "cut off after "
    ) in result.errors[0]
    assert "the page is not read" in result.errors[0]
    assert not any("download max size" in line for line in result.stderr.splitlines())  # Scrapy's, once ours
    assert pages.count(pages[-1]) == 1 and len(pages) == 2  # not retried: it would be as large again
    assert result.stat("trawl/errors/too_large") == "1"
    assert srv.sent < 64 << 20  # the client hung up near the limit


def test_a_gzip_bomb_stops_at_each_sources_own_limit(workdir: Path) -> None:
    """1 GiB of zeros in 1 MB of gzip, against wayback (64 MiB) and otx (8 MiB) in one ``crawl all``."""

    def otx(path: str) -> bytes | None:
        return None  # every OTX page is the bomb

    with HostileServer("bomb", normal=cdx) as wayback, HostileServer("bomb", normal=otx) as otx_server:
        settings = {
            "WAYBACK_BASE_URL": wayback.base_url,
            "OTX_BASE_URL": otx_server.base_url,
            "RETRY_TIMES": 1,
        }
        result = trawl_crawl(workdir, "all", "-a", "sources=wayback,otx", settings=settings)
    assert_no_traceback(result)
    assert result.returncode == 1
    said = result.errors
    over = (
        r"page 1 from [\d.:]+: answer over the size limit of {} \(DOWNLOAD_MAXSIZE\): "
        r"[\d.]+ MiB once decompressed"
    )
    assert any(re.search("wayback: " + over.format("64 MiB"), e) for e in said), said
    assert any(re.search("otx: " + over.format("8 MiB"), e) for e in said), said
    assert len(said) == 2
    assert not any(
        "Ignored response" in line or "during decompression" in line for line in result.stderr.splitlines()
    )
    rows = {row[0]: row[1:] for row in (line.split() for line in result.stdout.splitlines()[2:]) if row}
    # source, requests, pages, URLs, new URLs, errors, duration, state: the failed page is an error.
    assert (
        rows["wayback"][1:3] == ["1", "3"] and rows["wayback"][4] == "1" and rows["wayback"][-1] == "partial"
    )
    assert rows["otx"][1] == "0" and rows["otx"][4] == "1" and rows["otx"][-1] == "failed"


def test_a_page_still_dribbling_at_the_timeout_is_named_and_tried_twice_not_four_times(workdir: Path) -> None:
    settings = {"SOURCE_DOWNLOAD_TIMEOUT": '{"wayback": 1}', "RETRY_TIMES": 3}
    result, srv, pages = hostile_wayback(workdir, "dribble", settings)
    assert_one_failed_page(result)
    host = srv.base_url.split("//")[1]
    still = re.compile(
        rf"page 1 from {re.escape(host)}: answer still arriving after 1 s \(\d[\d,]* bytes received\)"
    )
    said = warnings(result)
    assert any(still.search(line) and line.endswith("; retry 1 of 1") for line in said), said
    assert any(still.search(line) and line.endswith("; giving up") for line in said), said
    assert not any("no answer" in line for line in said)
    assert len(result.errors) == 1
    assert still.search(result.errors[0]) and result.errors[0].endswith("; gave up after 1 retry")
    assert len(pages) == 3  # page 0, page 1 and its one retry


def test_a_bad_size_setting_is_one_line(workdir: Path) -> None:
    result = trawl_crawl(workdir, "wayback", settings={"SOURCE_DOWNLOAD_MAXSIZE": '{"wayback": "big"}'})
    assert result.returncode == 2
    assert_no_traceback(result)
    assert "SOURCE_DOWNLOAD_MAXSIZE['wayback'] must be a whole number" in result.stderr


def test_each_source_declares_a_size_limit_that_bounds_a_hostile_crawl() -> None:
    """Every built-in's limit fits its API and, all in flight at once, stays well under 1 GB."""
    from trawl.sources.builtin import BUILTIN_SOURCES

    limits = {source.name: source.default_download_maxsize for source in BUILTIN_SOURCES}
    assert all(limit and limit <= 64 << 20 for limit in limits.values()), limits
    assert limits["otx"] < limits["wayback"]
    for source in BUILTIN_SOURCES:
        assert (
            source.default_download_warnsize
            and source.default_download_warnsize < source.default_download_maxsize
        )
