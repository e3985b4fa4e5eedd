"""``crawl all`` against three small upstreams, and its closing table.

:func:`wayback_server`, :func:`otx_server` and :func:`urlscan_server` each serve
``SHARED`` (one URL all three report) and URLs of their own; :func:`crawl_all`
runs ``crawl all`` on ``example.com`` (filters off); :func:`table` reads the
per-source table the run prints, source -> its columns.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CrawlResult, run_scrapy
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.otx import FakeOtxServer, OtxUrl
from tests.servers.urlscan import FakeUrlscanServer, make_result

SHARED = "https://example.com/shared/page"


def wayback_server() -> FakeCdxServer:
    captures = [
        make_capture(u, "20200101000000")
        for u in (SHARED, "https://example.com/only-wayback", "https://a.example.com/x")
    ]
    return FakeCdxServer(captures, lines_per_page=2)


def otx_server() -> FakeOtxServer:
    return FakeOtxServer(
        urls=[
            OtxUrl(SHARED, "2021-03-04T05:06:07"),
            OtxUrl("https://example.com/only-otx", "2021-01-01T00:00:00"),
        ]
    )


def urlscan_server() -> FakeUrlscanServer:
    return FakeUrlscanServer(
        results=[
            make_result(SHARED, "2022-05-06T07:08:09.000Z"),
            make_result("https://example.com/only-urlscan", "2022-01-01T00:00:00.000Z"),
        ]
    )


def crawl_all(workdir: Path, *args: str, settings: dict[str, object], env: dict | None = None) -> CrawlResult:
    command = ["crawl", "all", "-a", "domain=example.com", "-a", "filters=false", *args]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    return run_scrapy(workdir, *command, env=env)


def table(result: CrawlResult) -> dict[str, list[str]]:
    rows = [line.split() for line in result.stdout.splitlines() if line.strip()]
    return {row[0]: row[1:] for row in rows[2:]}  # skip the header and the rule
