"""Politeness and resilience, read from the test server's request log.

These crawls run with the source gates on (``RATE_LIMITS_ENABLED=True``), with
budgets scaled down so the tests take seconds.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.conftest import assert_no_traceback, run_scrapy
from tests.helpers.politeness import POLITE, crawl, dataset, max_in_window, too_many_requests
from tests.servers.ia_cdx import (
    FakeCdxServer,
    connection_reset,
    cut_transfer,
    service_unavailable,
)
from trawl.records.canonical import canonicalize


def page_times(server: FakeCdxServer) -> list[float]:
    return sorted(r.time for r in server.requests)


def test_rate_never_exceeds_the_budget(workdir: Path) -> None:
    with FakeCdxServer(dataset(16, 1), lines_per_page=1) as server:
        result = crawl(
            workdir, server, RATE_LIMITS='{"wayback": "5/1s"}', SOURCE_CONCURRENCY='{"wayback": 8}'
        )
    assert result.returncode == 0, result.stderr[-2000:]
    times = page_times(server)
    assert len(times) >= 17  # count + 16 pages (+ the check past the end)
    assert max_in_window(times, 1.0) <= 5
    assert times[-1] - times[0] >= 2.0  # 18 requests at 5/s cannot take less
    assert "at most 5 requests per 1 s" in result.stderr


def test_retry_after_pauses_the_source(workdir: Path) -> None:
    with FakeCdxServer(dataset(6, 2), lines_per_page=2) as server:
        server.fail_pages = {2: [too_many_requests(2)]}
        result = crawl(workdir, server, SOURCE_CONCURRENCY='{"wayback": 1}', PROGRESS_INTERVAL=0.3)
    assert result.returncode == 0, result.stderr[-2000:]
    records = sorted(server.requests, key=lambda r: r.time)
    limited = next(i for i, r in enumerate(records) if ("page", "2") in r.params)
    gap = records[limited + 1].time - records[limited].time
    assert gap >= 2.0, f"next request {gap:.2f} s after the 429 with Retry-After: 2"
    assert "paused until" in result.stderr and "Retry-After" in result.stderr
    progress = [line for line in result.stderr.splitlines() if "captures/s |" in line]
    assert any("| paused until" in line and "(HTTP 429, Retry-After)" in line for line in progress)
    assert len(result.stored()) == 12


def test_all_urls_survive_faults(workdir: Path) -> None:
    captures = dataset(40, 10)
    expected = {canonicalize(c.original) for c in captures}
    rng = random.Random(7)
    faults: dict[int, list] = {}
    for page in range(40):
        if rng.random() < 0.05:
            faults.setdefault(page, []).append(service_unavailable())
    for page in (3, 4, 5):  # a burst of 429s
        faults.setdefault(page, []).append(too_many_requests(1))
    for page in (10, 20, 30):
        faults.setdefault(page, []).append(connection_reset())
    for page in (11, 21, 31):
        faults.setdefault(page, []).append(cut_transfer())
    with FakeCdxServer(captures, lines_per_page=10) as server:
        server.fail_pages = faults
        result = crawl(workdir, server, RETRY_TIMES=6, RATE_LIMITS='{"wayback": "200/1s"}')
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = result.stored()
    assert set(rows) == expected  # 100% recall
    assert len(rows) == len(expected)  # no duplicate
    assert all(row["captures"] == 1 for row in rows.values())
    assert not any(server.fail_pages.values())  # every fault was served
    assert int(result.stat("trawl/pauses")) == 3


def test_give_up_is_reported_and_partial(workdir: Path) -> None:
    with FakeCdxServer(dataset(4, 2), lines_per_page=2) as server:
        server.fail_pages = {1: [service_unavailable()] * 10}
        result = crawl(workdir, server, RETRY_TIMES=2)
    assert result.returncode == 1
    assert result.stat("trawl/gave_up") == "1"
    assert any("HTTP 503 for CDX page 1" in e for e in result.errors)
    assert len(result.stored()) == 6


@pytest.mark.parametrize(
    ("status", "latency", "current", "expected"),
    [
        (429, 0.01, 0.5, 1.0),  # a fast 429 doubles the delay instead of lowering it
        (503, 0.01, 0.0, 1.0),  # at least the start delay
        (429, 0.01, 40.0, 60.0),  # capped
        (200, 0.2, 1.0, 0.6),  # a normal answer moves towards latency / concurrency
        (404, 0.01, 1.0, 1.0),  # error pages never lower it
    ],
)
def test_autothrottle_hears_429(status: int, latency: float, current: float, expected: float) -> None:
    from scrapy.utils.test import get_crawler

    from trawl.politeness.throttle import SourceAutoThrottle

    crawler = get_crawler(
        settings_dict={
            "AUTOTHROTTLE_ENABLED": True,
            "AUTOTHROTTLE_START_DELAY": 1.0,
            "AUTOTHROTTLE_MAX_DELAY": 60.0,
            "DOWNLOAD_DELAY": 0.0,
            "AUTOTHROTTLE_TARGET_CONCURRENCY": 1.0,
        }
    )
    throttle = SourceAutoThrottle(crawler)
    throttle.mindelay, throttle.maxdelay = 0.0, 60.0
    assert throttle.next_delay(current, latency, status) == pytest.approx(expected)


def test_retry_hints() -> None:
    from scrapy.http import Response

    from trawl.politeness.retryhints import resume_time

    now = 1_700_000_000.0
    assert resume_time(Response("http://x", headers={"Retry-After": "30"}), now) == (now + 30, "Retry-After")
    dated = Response("http://x", headers={"Retry-After": "Tue, 14 Nov 2023 22:14:20 GMT"})
    assert resume_time(dated, now)[0] == 1_700_000_060.0
    reset = Response("http://x", headers={"X-Rate-Limit-Reset-After": "566"})
    assert resume_time(reset, now) == (now + 566, "X-Rate-Limit-Reset-After")
    body = Response("http://x", body=b'{"message": "Rate limit exceeded. Reset in 42 seconds."}')
    assert resume_time(body, now) == (now + 42, "body")
    drf = Response("http://x", body=b'{"detail": "Request was throttled. Expected available in 7 seconds."}')
    assert resume_time(drf, now) == (now + 7, "body")
    assert resume_time(Response("http://x", body=b"busy"), now) is None


def test_other_sources_keep_going_during_a_pause(workdir: Path) -> None:
    from tests.servers.otx import FakeOtxServer, OtxUrl

    otx_urls = [OtxUrl(f"https://example.com/otx{i}", "2021-01-01T00:00:00") for i in range(30)]
    with (
        FakeCdxServer(dataset(4, 2), lines_per_page=2) as wayback,
        FakeOtxServer(urls=otx_urls, max_limit=1) as otx,
    ):
        wayback.fail_pages = {1: [too_many_requests(3)]}
        command = [
            "crawl",
            "all",
            "-a",
            "domain=example.com",
            "-a",
            "sources=wayback,otx",
            "-a",
            "filters=false",
        ]
        settings = {
            **POLITE,
            "WAYBACK_BASE_URL": wayback.base_url,
            "OTX_BASE_URL": otx.base_url,
            "SOURCE_CONCURRENCY": '{"wayback": 1, "otx": 1}',
            "RATE_LIMITS": '{"wayback": "100/1s", "otx": "10/1s"}',
        }
        for key, value in settings.items():
            command += ["-s", f"{key}={value}"]
        result = run_scrapy(workdir, *command)
        limited = next(r.time for r in wayback.requests if ("page", "1") in r.params)
        resumed = min(r.time for r in wayback.requests if r.time > limited)
        during = [r.time for r in otx.requests if limited < r.time < resumed]
    assert result.returncode == 0, result.stderr[-3000:]
    assert resumed - limited >= 3.0  # wayback waited out its Retry-After...
    assert len(during) >= 10  # ...while OTX kept going at its own pace
