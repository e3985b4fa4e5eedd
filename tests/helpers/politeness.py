"""Crawls with the source gates on, and what to read of them in the fake CDX server's request log.

``POLITE`` turns the gates on (``RATE_LIMITS_ENABLED=True``) with backoffs scaled
down so a test takes seconds; :func:`crawl` runs ``crawl wayback`` with it on
``example.com`` (filters off); :func:`dataset` is ``pages`` x ``per_page`` distinct URLs;
:func:`max_in_window` counts the most requests any ``window`` seconds saw;
:func:`too_many_requests` is a 429 answer with a ``Retry-After``.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CrawlResult, crawl_args, run_scrapy
from tests.servers.ia_cdx import FakeCdxServer, make_capture

POLITE = {
    "RATE_LIMITS_ENABLED": "True",
    "AUTOTHROTTLE_ENABLED": "False",
    "RETRY_BACKOFF_BASE": "0.05",
    "RETRY_BACKOFF_MAX": "0.3",
}


def dataset(pages: int, per_page: int) -> list:
    return [
        make_capture(f"http://example.com/p{page:03d}/u{row:03d}", f"2020{1 + row % 12:02d}01000000")
        for page in range(pages)
        for row in range(per_page)
    ]


def crawl(workdir: Path, server: FakeCdxServer, **settings: object) -> CrawlResult:
    merged = {"WAYBACK_BASE_URL": server.base_url, **POLITE, **settings}
    return run_scrapy(workdir, *crawl_args("wayback", "example.com", merged, "-a", "filters=false"))


def max_in_window(times: list[float], window: float) -> int:
    best = 0
    start = 0
    for end, t in enumerate(times):
        while times[start] <= t - window:
            start += 1
        best = max(best, end - start + 1)
    return best


def too_many_requests(seconds: int) -> tuple[int, bytes, dict[str, str]]:
    body = b"<html><body><h1>429 Too Many Requests</h1>\nslow down\n</body></html>"
    return (429, body, {"Content-Type": "text/html", "Retry-After": str(seconds)})
