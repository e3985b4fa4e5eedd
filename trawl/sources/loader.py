"""Scrapy's spider loader, plus the sources that plugins register."""

from __future__ import annotations

from scrapy import Spider
from scrapy.settings import BaseSettings
from scrapy.spiderloader import SpiderLoader

from trawl.errors import TrawlError
from trawl.pipeline.manager import plugin_manager_from_settings
from trawl.sources.all import AllSourcesSpider


class PluginSpiderLoader(SpiderLoader):
    """Offers the sources of ``trawl_register_sources``, ``all``, and ``SPIDER_MODULES``.

    trawl's own sources come from its ``sources`` plugin, so a plugin package
    adds ``scrapy crawl mysource`` exactly as trawl does, without touching
    trawl's code or settings. ``SPIDER_MODULES`` (empty in trawl's settings)
    is for a project's own spiders. ``all`` is no source: it is the name the
    crawl command answers by running every source (:mod:`trawl.run.crawl_all`).
    """

    def __init__(self, settings: BaseSettings) -> None:
        super().__init__(settings)
        #: Why the plugins could not be loaded (bad ``TRAWL_PLUGINS``...), or None.
        #: Scrapy builds the loader inside ``CrawlerProcess()``, before a command
        #: runs, where raising would end any command in a traceback: the crawl
        #: and list commands report it in one line instead.
        self.plugin_error: TrawlError | None = None
        try:
            plugins = plugin_manager_from_settings(settings)
        except TrawlError as exc:
            self.plugin_error = exc
        else:
            for registered in plugins.hook.trawl_register_sources():
                for name, spidercls in (registered or {}).items():
                    self._add(name, spidercls)
        self._add(AllSourcesSpider.name, AllSourcesSpider)

    def _add(self, name: str, spidercls: type[Spider]) -> None:
        known = self._spiders.get(name)
        if known is not None and known is not spidercls:
            raise ValueError(f"two sources are named {name!r}: {known.__module__} and {spidercls.__module__}")
        self._spiders[name] = spidercls
