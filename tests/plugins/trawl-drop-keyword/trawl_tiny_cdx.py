"""A third-party source with settings of its own: what a plugin's source gets, trawl's own get.

``trawl crawl tinycdx -a domain=example.com`` asks a CDX server
(``TINYCDX_BASE_URL``) for at most ``TINYCDX_LIMIT`` captures, in one request,
and logs how many came. The source declares its budget, base URL and
``TINYCDX_LIMIT`` (default 5, a whole number from 1 to 1000) on its class:
trawl applies the default, refuses ``-s TINYCDX_LIMIT=lots`` in one line
before any request, and its docs test lists the setting.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import orjson
import pluggy
import scrapy

from trawl.settings_checks import Setting, whole
from trawl.sources.base import SourceSpider

hookimpl = pluggy.HookimplMarker("trawl")


class TinyCdxSpider(SourceSpider):
    name = "tinycdx"
    default_rate_limit = "10/1s"
    default_download_timeout = 20
    base_url_setting = "TINYCDX_BASE_URL"
    default_base_url = "https://cdx.example.org"
    settings_declared = {
        "TINYCDX_LIMIT": Setting(5, whole(1, 1000), "captures asked for, in one request"),
    }

    async def start(self) -> AsyncIterator[Any]:
        self.log_target()
        limit = int(self.setting(self.settings, "TINYCDX_LIMIT"))
        query = urlencode({"url": f"{self.target.domain}/*", "output": "json", "limit": limit})
        yield scrapy.Request(f"{self.base_url}/cdx/search/cdx?{query}", callback=self.parse_rows)

    def parse_rows(self, response: scrapy.http.Response) -> None:
        rows = orjson.loads(response.body) if response.body.strip() else []
        self.logger.info("tinycdx: %d captures", max(len(rows) - 1, 0))


@hookimpl
def trawl_register_sources():
    return {TinyCdxSpider.name: TinyCdxSpider}
