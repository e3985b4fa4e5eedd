"""Scrapy's spider loader, plus the sources that plugins register."""

from __future__ import annotations

from scrapy.settings import BaseSettings
from scrapy.spiderloader import SpiderLoader

from trawl.pluginmanager import plugin_manager_from_settings


class PluginSpiderLoader(SpiderLoader):
    """Finds spiders in ``SPIDER_MODULES`` and from ``trawl_register_sources``.

    A plugin package can therefore add ``scrapy crawl mysource`` without
    touching trawl's code or settings.
    """

    def __init__(self, settings: BaseSettings) -> None:
        super().__init__(settings)
        plugins = plugin_manager_from_settings(settings)
        for registered in plugins.hook.trawl_register_sources():
            for name, spidercls in (registered or {}).items():
                known = self._spiders.get(name)
                if known is not None and known is not spidercls:
                    raise ValueError(
                        f"two sources are named {name!r}: {known.__module__} and {spidercls.__module__}"
                    )
                self._spiders[name] = spidercls
