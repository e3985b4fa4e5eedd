"""Registers trawl's own sources, the way a plugin package registers its own.

Every built-in source comes through ``trawl_register_sources``, none through
``SPIDER_MODULES``: what ``scrapy list`` offers is exactly what the registered
plugins offer, and disabling this plugin leaves only third-party sources.
:data:`BUILTIN_SOURCES` are the URL sources; :data:`BUILTIN_RECORD_SOURCES` those
of other record kinds (crates.io).
"""

from __future__ import annotations

from scrapy import Spider

from trawl import hookimpl
from trawl.sources.cdx.commoncrawl import CommonCrawlSpider
from trawl.sources.cdx.wayback import WaybackSpider
from trawl.sources.crates.spider import CratesSpider
from trawl.sources.ghostarchive import GhostarchiveSpider
from trawl.sources.intelx import IntelxSpider
from trawl.sources.live.spider import LiveSpider
from trawl.sources.otx import OtxSpider
from trawl.sources.probe.spider import ProbeSpider
from trawl.sources.responses.spider import ResponsesSpider
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

#: Built-in sources ``crawl all`` runs only when named (``-a sources=crates``): other record
#: kinds (crates.io, archived responses), and those that talk to the target itself (the probe
#: asks the stored URLs, the live crawl follows the site's links).
BUILTIN_RECORD_SOURCES: tuple[type[Spider], ...] = (CratesSpider, ResponsesSpider, ProbeSpider, LiveSpider)


@hookimpl
def trawl_register_sources() -> dict[str, type[Spider]]:
    return {spidercls.name: spidercls for spidercls in (*BUILTIN_SOURCES, *BUILTIN_RECORD_SOURCES)}
