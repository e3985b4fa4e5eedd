"""Registers trawl's own sources, the way a plugin package registers its own."""

from __future__ import annotations

from scrapy import Spider

from trawl import hookimpl
from trawl.spiders.wayback import WaybackSpider


@hookimpl
def trawl_register_sources() -> dict[str, type[Spider]]:
    return {"wayback": WaybackSpider}
