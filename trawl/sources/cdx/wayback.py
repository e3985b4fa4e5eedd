"""The Wayback Machine's CDX API (and any CDX server: pywb, OutbackCDX mirrors).

How pages are counted, fetched and walked is shared with every CDX source:
see :mod:`trawl.sources.cdx.base`. This spider queries one endpoint,
``WAYBACK_BASE_URL`` + ``WAYBACK_CDX_PATH``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from trawl.sources.cdx.base import CdxSpider


class WaybackSpider(CdxSpider):
    """Every URL a CDX server knows for a domain (and its subdomains)."""

    name = "wayback"
    base_url_setting = "WAYBACK_BASE_URL"
    dialect_setting = "WAYBACK_DIALECT"
    page_size_setting = "WAYBACK_PAGE_SIZE"

    def configure(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        super().configure(settings, arguments)
        path = str(settings.get("WAYBACK_CDX_PATH") or "/cdx/search/cdx")
        dialect, forced = self.read_dialect(settings)
        self.add_endpoint(self.base_url + "/" + path.lstrip("/"), "wayback", dialect, forced)

    async def start(self) -> AsyncIterator[Any]:
        self.log_target()
        if self.should_skip():
            return
        yield self.count_request(0)
