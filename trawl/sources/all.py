"""``all``: the name ``scrapy crawl all`` answers to (see trawl.run.crawl_all).

The crawl command runs every selected source as its own crawler; this class
only makes ``all`` appear in ``scrapy list`` and scrapyd's spider list.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import scrapy


class AllSourcesSpider(scrapy.Spider):
    name = "all"

    async def start(self) -> AsyncIterator[Any]:
        self.logger.error("run every source with `trawl crawl all`, not as a single spider")
        return
        yield  # pragma: no cover - makes this an async generator
