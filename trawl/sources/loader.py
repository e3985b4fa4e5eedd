"""Scrapy's spider loader, plus the sources that plugins register."""

from __future__ import annotations

from collections.abc import Mapping

from scrapy import Request, Spider
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

    A plugin's mapping is kept as it came and a class looked up in it only when
    it is loaded: trawl's own (:class:`~trawl.lazyclasses.LazyClasses`) imports a
    source then, so ``trawl list`` names them all without importing one.
    """

    def __init__(self, settings: BaseSettings) -> None:
        super().__init__(settings)
        #: Why the plugins could not be loaded (bad ``TRAWL_PLUGINS``...), or None.
        #: Scrapy builds the loader inside ``CrawlerProcess()``, before a command
        #: runs, where raising would end any command in a traceback: the crawl
        #: and list commands report it in one line instead.
        self.plugin_error: TrawlError | None = None
        #: name -> the mapping that registered it (its class is looked up on load).
        self._registered: dict[str, Mapping[str, type[Spider]]] = {}
        try:
            plugins = plugin_manager_from_settings(settings)
        except TrawlError as exc:
            self.plugin_error = exc
        else:
            for registered in plugins.hook.trawl_register_sources():
                for name in registered or {}:
                    self._add(name, registered)
        self._add(AllSourcesSpider.name, {AllSourcesSpider.name: AllSourcesSpider})

    def _add(self, name: str, registered: Mapping[str, type[Spider]]) -> None:
        known = self._registered.get(name)
        if known is None and name in self._spiders:
            known = self._spiders
        if known is not None and known is not registered and known[name] is not registered[name]:
            raise ValueError(
                f"two sources are named {name!r}: {known[name].__module__} and {registered[name].__module__}"
            )
        if known is None:
            self._registered[name] = registered

    def load(self, spider_name: str) -> type[Spider]:
        registered = self._registered.get(spider_name)
        if registered is None:
            return super().load(spider_name)
        return registered[spider_name]

    def list(self) -> list[str]:
        return [*self._spiders, *(name for name in self._registered if name not in self._spiders)]

    def find_by_request(self, request: Request) -> list[str]:
        return [name for name in self.list() if self.load(name).handles_request(request)]
