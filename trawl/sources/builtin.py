"""Registers trawl's own sources, the way a plugin package registers its own.

Every built-in source comes through ``trawl_register_sources``, none through
``SPIDER_MODULES``: what ``trawl list`` offers is exactly what the registered
plugins offer, and disabling this plugin leaves only third-party sources.
:data:`BUILTIN_URL_SOURCES` are the URL sources; :data:`BUILTIN_RECORD_SOURCE_PATHS`
those of other record kinds (crates.io).

The sources are named by import path and imported when first looked up
(:class:`~trawl.lazyclasses.LazyClasses`): importing all eleven cost every
command that builds the plugin manager 0.3-0.5 s of CPU. ``BUILTIN_SOURCES`` and
``BUILTIN_RECORD_SOURCES`` (the classes) import them when asked for.
"""

from __future__ import annotations

from typing import Any

from trawl import hookimpl
from trawl.lazyclasses import LazyClasses

#: The URL sources, by name: the class each name is, as ``module:Class``.
BUILTIN_URL_SOURCES: dict[str, str] = {
    "wayback": "trawl.sources.cdx.wayback:WaybackSpider",
    "commoncrawl": "trawl.sources.cdx.commoncrawl:CommonCrawlSpider",
    "otx": "trawl.sources.otx:OtxSpider",
    "urlscan": "trawl.sources.urlscan.spider:UrlscanSpider",
    "virustotal": "trawl.sources.virustotal:VirustotalSpider",
    "intelx": "trawl.sources.intelx:IntelxSpider",
    "ghostarchive": "trawl.sources.ghostarchive:GhostarchiveSpider",
}

#: Built-in sources ``crawl all`` runs only when named (``-a sources=crates``): other record
#: kinds (crates.io, archived responses), and those that talk to the target itself (the probe
#: asks the stored URLs, the live crawl follows the site's links).
BUILTIN_RECORD_SOURCE_PATHS: dict[str, str] = {
    "crates": "trawl.sources.crates.spider:CratesSpider",
    "responses": "trawl.sources.responses.spider:ResponsesSpider",
    "probe": "trawl.sources.probe.spider:ProbeSpider",
    "live": "trawl.sources.live.spider:LiveSpider",
}

#: Every built-in source; one mapping for the whole process, so each class is imported once.
SOURCES = LazyClasses({**BUILTIN_URL_SOURCES, **BUILTIN_RECORD_SOURCE_PATHS})


def __getattr__(name: str) -> Any:
    """``BUILTIN_SOURCES`` and ``BUILTIN_RECORD_SOURCES``: the classes, imported on first use."""
    if name == "BUILTIN_SOURCES":
        return tuple(SOURCES[source] for source in BUILTIN_URL_SOURCES)
    if name == "BUILTIN_RECORD_SOURCES":
        return tuple(SOURCES[source] for source in BUILTIN_RECORD_SOURCE_PATHS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def trawl_register_sources() -> LazyClasses:
    return SOURCES
