"""The Wayback Machine's CDX API (and any CDX server: pywb, OutbackCDX mirrors).

How pages are counted, fetched and walked is shared with every CDX source:
see :mod:`trawl.sources.cdx.base`. This spider queries one endpoint,
``WAYBACK_BASE_URL`` + ``WAYBACK_CDX_PATH``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from trawl.settings_checks import Setting, one_of, text, whole
from trawl.sources.cdx.base import CdxSpider


class WaybackSpider(CdxSpider):
    """Every URL a CDX server knows for a domain (and its subdomains)."""

    name = "wayback"
    default_rate_limit = "60/60s"
    # The Internet Archive bans an IP after three 429s in a row: with two requests in flight,
    # the first 429 cannot become three before the gate pauses the source (trawl.politeness.aimd).
    default_concurrency = 2
    # A CDX page may take a minute to come.
    default_download_timeout = 120
    # A page is at most 50 ZipNum blocks of 3,000 lines (archive.org's pageSize ceiling):
    # 150,000 plain-text lines of ~150 bytes, about 22 MB; 64 MiB leaves room for
    # 440-byte lines (long query strings) and still bounds two pages in flight to 128 MiB.
    default_download_maxsize = 64 << 20
    default_download_warnsize = 32 << 20
    # Each page request carries its endpoint, page and fields in its meta: any worker fetches it.
    spreadable = True
    base_url_setting = "WAYBACK_BASE_URL"
    default_base_url = "https://web.archive.org"
    dialect_setting = "WAYBACK_DIALECT"
    page_size_setting = "WAYBACK_PAGE_SIZE"
    settings_declared = {
        "WAYBACK_CDX_PATH": Setting(
            "/cdx/search/cdx", text, "the CDX endpoint's path under WAYBACK_BASE_URL"
        ),
        "WAYBACK_DIALECT": Setting("auto", one_of("auto", "ia", "pywb"), "auto, ia or pywb"),
        "WAYBACK_PAGE_SIZE": Setting(
            0,
            whole(0),
            "the pageSize sent (0: the server's; archive.org's default, 50 blocks, is also its most)",
        ),
    }

    #: Rows a store write takes at least (``BATCH_COALESCE_ROWS`` for this source, unless given):
    #: a CDX index comes in SURT order, so each batch touches leaf pages all over the URL index,
    #: and a merge of 50,000 rows rewrites them once where ten of 5,000 rewrote them ten times
    #: (the writer thread's CPU halved, 2,000,000 captures 22.6 -> 20.3 s of CPU; peak RSS +45 MB).
    coalesce_rows = 50_000

    @classmethod
    def update_settings(cls, settings: Any) -> None:
        super().update_settings(settings)
        # Under a -s BATCH_COALESCE_ROWS, over the project default.
        settings.set("BATCH_COALESCE_ROWS", cls.coalesce_rows, priority="spider")

    def configure(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        super().configure(settings, arguments)
        declared = self.declared_settings()["WAYBACK_CDX_PATH"]
        path = str(settings.get("WAYBACK_CDX_PATH") or declared.default)
        dialect, forced = self.read_dialect(settings)
        self.add_endpoint(self.base_url + "/" + path.lstrip("/"), "wayback", dialect, forced)

    async def start(self) -> AsyncIterator[Any]:
        self.log_target()
        if self.should_skip():
            return
        yield self.count_request(0)
