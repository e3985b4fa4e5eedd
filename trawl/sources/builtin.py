"""Registers trawl's own sources, the way a plugin package registers its own.

Every built-in source comes through ``trawl_register_sources``, none through
``SPIDER_MODULES``: what ``scrapy list`` offers is exactly what the registered
plugins offer, and disabling this plugin leaves only third-party sources.
"""

from __future__ import annotations

from scrapy import Spider

from trawl import hookimpl
from trawl.sources.cdx.commoncrawl import CommonCrawlSpider
from trawl.sources.cdx.wayback import WaybackSpider
from trawl.sources.ghostarchive import GhostarchiveSpider
from trawl.sources.intelx import IntelxSpider
from trawl.sources.otx import OtxSpider
from trawl.sources.urlscan import UrlscanSpider
from trawl.sources.virustotal import VirustotalSpider

BUILTIN_SOURCES: tuple[type[Spider], ...] = (
    WaybackSpider,
    CommonCrawlSpider,
    OtxSpider,
    UrlscanSpider,
    VirustotalSpider,
    IntelxSpider,
    GhostarchiveSpider,
)


@hookimpl
def trawl_register_sources() -> dict[str, type[Spider]]:
    return {spidercls.name: spidercls for spidercls in BUILTIN_SOURCES}
