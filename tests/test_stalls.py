"""Issue 9, item 5: a server that accepts the connection and never answers is said, as it happens.

Before: 492 s, four 120 s timeouts, 49 identical progress lines saying "0 errors",
nothing about timeouts until the end. Now the progress line names the requests
outstanding past ``PROGRESS_STALL_AFTER``, every timeout is a WARNING naming the
source and the retry, and each source has a timeout that fits it
(``SOURCE_DOWNLOAD_TIMEOUT``). Timeouts here are short so the tests take seconds.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from tests.conftest import CrawlResult, crawl_args, run_scrapy
from tests.servers.silent import SilentServer

QUICK = {"RETRY_BACKOFF_BASE": 0.01, "RETRY_BACKOFF_MAX": 0.05, "PROGRESS_INTERVAL": 0.25}


def progress_lines(result: CrawlResult, source: str) -> list[str]:
    return [line for line in result.stderr.splitlines() if f"{source}: pages " in line]


def warnings(result: CrawlResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if "] WARNING:" in line]


def test_a_server_that_never_answers_is_reported_as_it_happens(workdir: Path) -> None:
    settings = {
        **QUICK,
        "SOURCE_DOWNLOAD_TIMEOUT": '{"wayback": 1.5}',
        "PROGRESS_STALL_AFTER": 0.5,
        "RETRY_TIMES": 1,
    }
    started = time.monotonic()
    with SilentServer() as server:
        settings["WAYBACK_BASE_URL"] = server.base_url
        result = run_scrapy(workdir, *crawl_args("wayback", "example.com", settings), timeout=60)
        asked = len(server.requests)
    elapsed = time.monotonic() - started
    host = server.base_url.split("//")[1]
    assert result.returncode == 1
    assert asked == 2  # the count request and its one retry
    said = warnings(result)
    assert any(f"wayback: timeout: no answer for {host} within 1.5 s; retry 1 of 1" in line for line in said)
    assert any(f"wayback: timeout: no answer for {host} within 1.5 s; giving up" in line for line in said)
    lines = progress_lines(result, "wayback")
    stalled = [line for line in lines if re.search(r"\| waiting [01] s on 1 request to 127\.0\.0\.1$", line)]
    assert stalled, "\n".join(lines)
    assert any("| 0 errors | 1 timeout |" in line for line in lines)  # counted as it happened
    assert any("cannot reach" in e for e in result.errors)
    assert elapsed < 30  # two 1.5 s timeouts, not two of DOWNLOAD_TIMEOUT=120


def test_each_source_has_a_timeout_that_fits_it(workdir: Path) -> None:
    from trawl.sources.builtin import BUILTIN_SOURCES

    timeouts = {source.name: source.default_download_timeout for source in BUILTIN_SOURCES}
    assert timeouts["otx"] < timeouts["wayback"] and timeouts["urlscan"] < timeouts["commoncrawl"]
    with SilentServer() as wayback, SilentServer() as otx:
        settings = {
            **QUICK,
            "SOURCE_DOWNLOAD_TIMEOUT": '{"wayback": 3, "otx": 1}',
            "RETRY_TIMES": 0,
            "WAYBACK_BASE_URL": wayback.base_url,
            "OTX_BASE_URL": otx.base_url,
        }
        args = crawl_args("all", "example.com", settings, "-a", "sources=wayback,otx")
        result = run_scrapy(workdir, *args, timeout=60)
    said = warnings(result)
    assert any("otx: timeout: no answer for" in line and "within 1 s; giving up" in line for line in said)
    assert any("wayback: timeout: no answer for" in line and "within 3 s; giving up" in line for line in said)


def test_download_timeout_on_the_command_line_still_applies_to_every_source(workdir: Path) -> None:
    with SilentServer() as server:
        settings = {**QUICK, "DOWNLOAD_TIMEOUT": 1, "RETRY_TIMES": 0, "WAYBACK_BASE_URL": server.base_url}
        result = run_scrapy(workdir, *crawl_args("wayback", "example.com", settings), timeout=60)
    assert any("wayback: timeout" in line and "within 1 s; giving up" in line for line in warnings(result))
