"""``crawl wayback`` against the fake CDX server, and captures that give every filter something to do.

:func:`captures` is ``CAPTURES`` as the CDX server serves them: URLs that
canonicalize to one, a dropped port, other schemes and subdomains, statuses
``FILTER_CODE`` drops, a MIME type ``FILTER_MIME`` drops, paths ``FILTER_URL``
drops, a revisit, another domain. ``FILTERED_IN`` is what a crawl of them keeps
with the default filters, ``EVERYTHING`` what it keeps with ``filters=false``.
:func:`crawl` runs ``crawl wayback`` against a server (or ``base_url``).
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CrawlResult, crawl_args, run_scrapy
from tests.servers.ia_cdx import FakeCdxServer, make_capture

CAPTURES = [
    # (original, timestamp, mime, status)
    ("http://example.com/", "20100101000000", "text/html", "200"),
    ("http://example.com:80/", "20120101000000", "text/html", "200"),  # same URL as above
    ("https://example.com:443/", "20130101000000", "text/html", "200"),  # https stays distinct
    ("http://www.example.com/login?next=%2Fhome", "20150101000000", "text/html", "200"),
    ("http://WWW.Example.com/about#team", "20160101000000", "text/html", "200"),
    ("https://api.example.com/v1/users?id=1&b=2", "20170101000000", "application/json", "200"),
    ("https://api.example.com/v1/users?id=1&b=2", "20180101000000", "application/json", "500"),
    ("https://deep.sub.example.com/app.js", "20190101000000", "application/javascript", "200"),
    ("https://sub.example.com/gone", "20190101000000", "text/html", "404"),  # FILTER_CODE
    ("https://sub.example.com/moved", "20190101000000", "text/html", "301"),  # FILTER_CODE
    ("https://sub.example.com/logo", "20190101000000", "image/svg+xml", "200"),  # FILTER_MIME
    ("https://sub.example.com/theme.css", "20190101000000", "text/plain", "200"),  # FILTER_URL
    ("https://sub.example.com/img/a", "20190101000000", "text/html", "200"),  # FILTER_URL /img
    ("https://sub.example.com/revisit", "20190101000000", "warc/revisit", "-"),
    ("https://sub.example.com/2008", "20081231235959", "text/html", "200"),
    ("https://sub.example.com/2021", "20210101000000", "text/html", "200"),
    ("http://notexample.com/", "20190101000000", "text/html", "200"),  # not the domain
]

FILTERED_IN = {
    "http://example.com/",
    "https://example.com/",
    "http://www.example.com/login?next=%2Fhome",
    "http://www.example.com/about",
    "https://api.example.com/v1/users?id=1&b=2",
    "https://deep.sub.example.com/app.js",
    "https://sub.example.com/2008",
    "https://sub.example.com/2021",
}
EVERYTHING = FILTERED_IN | {
    "https://sub.example.com/gone",
    "https://sub.example.com/moved",
    "https://sub.example.com/logo",
    "https://sub.example.com/theme.css",
    "https://sub.example.com/img/a",
    "https://sub.example.com/revisit",
}


def captures() -> list:
    return [make_capture(u, ts, mimetype=m, statuscode=s) for u, ts, m, s in CAPTURES]


def crawl(
    workdir: Path,
    server: FakeCdxServer | None,
    *extra: str,
    domain: str | None = "example.com",
    settings: dict | None = None,
    base_url: str | None = None,
) -> CrawlResult:
    merged = {"WAYBACK_BASE_URL": base_url or (server.base_url if server else ""), "RETRY_TIMES": 1}
    merged.update(settings or {})
    return run_scrapy(workdir, *crawl_args("wayback", domain, merged, *extra))
