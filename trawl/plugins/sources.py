"""Registers trawl's own sources, the way a plugin package registers its own.

Every built-in source comes through ``trawl_register_sources``, none through
``SPIDER_MODULES``: what ``scrapy list`` offers is exactly what the registered
plugins offer, and disabling this plugin leaves only third-party sources.
"""

from __future__ import annotations

from scrapy import Spider

from trawl import hookimpl
from trawl.spiders.commoncrawl import CommonCrawlSpider
from trawl.spiders.ghostarchive import GhostarchiveSpider
from trawl.spiders.intelx import IntelxSpider
from trawl.spiders.otx import OtxSpider
from trawl.spiders.urlscan import UrlscanSpider
from trawl.spiders.virustotal import VirustotalSpider
from trawl.spiders.wayback import WaybackSpider

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
