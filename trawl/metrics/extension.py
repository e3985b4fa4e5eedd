"""The Scrapy extension that puts a crawler's source on the process's ``/metrics``.

Registered in trawl's ``EXTENSIONS``; ``NotConfigured`` (Scrapy leaves it out)
unless ``PROMETHEUS_PORT`` is set. It starts the process's server if the
crawl command has not (:mod:`.server`), adds its crawler's series when the
spider opens and folds them into the source's totals when the engine stops
(:mod:`.collector`). Two signals per crawl, nothing per request: the values
are read from the stats at scrape time.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured

from trawl.errors import TrawlUsageError
from trawl.metrics.collector import crawler_finished, crawler_started
from trawl.metrics.server import start_metrics, wanted

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

_warned: set[str] = set()


class Metrics:
    """One crawler's part of the process's metrics (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Metrics:
        if not wanted(crawler.settings):
            raise NotConfigured
        try:
            start_metrics(crawler.settings)
        except TrawlUsageError as exc:
            # The crawl command refuses this in one line before the run; a script's crawl goes on.
            if str(exc) not in _warned:
                _warned.add(str(exc))
                logger.warning("%s; this process serves no metrics", exc)
            raise NotConfigured from None
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        crawler_started(self.crawler, spider.name)

    def engine_stopped(self) -> None:
        crawler_finished(self.crawler)
