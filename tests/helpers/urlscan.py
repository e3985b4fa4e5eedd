"""``crawl urlscan`` against the urlscan.io search stand-in, and the scans past the recording.

``EXTRA`` is 30 scans older than the recorded answer (page 2 at urlscan's default
size of 100): landed off-domain, filtered by status, MIME or nothing, with PTR
host names. ``FILTERED`` is what a crawl of the recording plus ``EXTRA`` keeps
with the default filters (``RECORDED_FILTERED | EXTRA_FILTERED``), ``EVERYTHING``
what it keeps with ``filters=false``. :func:`crawl` runs ``crawl urlscan`` without
a key from the environment (``NO_KEY_ENV``).
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CrawlResult, crawl_args, run_scrapy
from tests.servers.urlscan import FakeUrlscanServer, make_result

NO_KEY_ENV = {"URLSCAN_API_KEY": "", "URLSCAN_API_KEYS": ""}
#: The recorded answer's page size (urlscan's default ``size``).
RECORDED_SIZE = 100

# 30 scans older than the recorded ones: page 2 at the default size of 100.
EXTRA = [
    make_result(
        "https://shop.example.com/cart",
        "2023-01-20T10:00:00.000Z",
        task_url="http://shop.example.com/cart?utm=1",
    ),
    # landed off-domain: only the submitted URL is ours
    make_result(
        "https://login.other.net/",
        "2023-01-19T10:00:00.000Z",
        task_url="https://example.com/redirect?to=other",
    ),
    make_result("https://example.com/moved", "2023-01-18T10:00:00.000Z", status="301"),  # FILTER_CODE
    make_result("https://cdn.example.com/logo", "2023-01-17T10:00:00.000Z", mime="image/png"),  # FILTER_MIME
    make_result("https://example.com/app.js", "2023-01-16T10:00:00.000Z", ptr="edge-1.example.com"),
    make_result(
        "https://api.example.com/v2/",
        "2023-01-15T10:00:00.000Z",
        ptr="a23-1-2-3.deploy.akamaitechnologies.com",
    ),
    make_result("https://example.com/2022", "2022-12-31T23:59:59.000Z"),
] + [
    make_result(f"https://www.example.com/item/{i}", f"2023-01-{1 + i % 14:02d}T0{i % 10}:00:0{i % 7}.000Z")
    for i in range(23)
]

RECORDED_FILTERED = {"https://example.com/", "http://example.com/", "https://www.example.com/"}
EXTRA_FILTERED = {
    "https://shop.example.com/cart",
    "http://shop.example.com/cart?utm=1",
    "https://example.com/redirect?to=other",
    "https://example.com/app.js",
    "http://edge-1.example.com/",
    "https://api.example.com/v2/",
    "https://example.com/2022",
} | {f"https://www.example.com/item/{i}" for i in range(23)}
FILTERED = RECORDED_FILTERED | EXTRA_FILTERED
EVERYTHING = FILTERED | {
    "http://example.com/my-web-app/",  # a 404 in the recording
    "https://example.com/moved",
    "https://cdn.example.com/logo",
}


def crawl(
    workdir: Path,
    server: FakeUrlscanServer | None,
    *extra: str,
    domain: str = "example.com",
    settings: dict | None = None,
    env: dict | None = None,
    page_size: int | None = RECORDED_SIZE,
) -> CrawlResult:
    """``trawl crawl urlscan`` against ``server``.

    Most tests page the recording at its own size (``-s URLSCAN_PAGE_SIZE=100``:
    page 1 is then the recorded answer); ``page_size=None`` sends no size
    setting, so the default (10000) applies, as for a user.
    """
    merged: dict[str, object] = {
        "URLSCAN_BASE_URL": server.base_url if server else "http://127.0.0.1:9",
        "RETRY_TIMES": 1,
        "RETRY_BACKOFF_BASE": 0.01,
    }
    if page_size is not None:
        merged["URLSCAN_PAGE_SIZE"] = page_size
    merged.update(settings or {})
    return run_scrapy(
        workdir, *crawl_args("urlscan", domain, merged, *extra), env={**NO_KEY_ENV, **(env or {})}
    )
