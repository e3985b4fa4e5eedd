"""Crawls that notify receivers, and the warnings they log about it.

:func:`wayback` is a fake CDX server holding ``URLS``; :func:`crawl` runs a
crawl against it (or against nothing listening, ``server=None``) with the
given settings and checks it left no traceback; :func:`warnings` are the
notification warnings of its log.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.servers.ia_cdx import FakeCdxServer, make_capture

URLS = ["https://example.com/a", "https://example.com/b", "https://sub.example.com/c"]


def wayback(urls: list[str] = URLS) -> FakeCdxServer:
    return FakeCdxServer([make_capture(u, "20200101000000") for u in urls], lines_per_page=2)


def crawl(
    workdir: Path, server: FakeCdxServer | None, *extra: str, source: str = "wayback", **settings: object
) -> CrawlResult:
    values: dict[str, object] = {
        "WAYBACK_BASE_URL": server.base_url if server else "http://127.0.0.1:9",
        "PROGRESS_INTERVAL": 0,
        "RETRY_TIMES": 0,
        **settings,
    }
    result = run_scrapy(workdir, *crawl_args(source, "example.com", values, "-a", "filters=false", *extra))
    assert_no_traceback(result)
    return result


def warnings(result: CrawlResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if "WARNING" in line and "notify" in line]
