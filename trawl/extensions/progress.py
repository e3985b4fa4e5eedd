"""A progress line at a steady interval, and a summary when a crawl ends.

Scrapy's LogStats counts responses and items; for trawl a response is a CDX
page and an item a batch of thousands, so neither says how far a crawl is.
This line does: pages done of pages known, captures read, unique and new URLs,
and the capture rate since the previous line.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from trawl.limiter import existing_limiter
from trawl.outcome import error_count, run_outcome
from trawl.ratelimits import format_duration, parse_rate
from trawl.secrets import install_redaction

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler


def _n(value: Any) -> str:
    return f"{int(value or 0):,}"


class Progress:
    """Logs progress every ``PROGRESS_INTERVAL`` seconds and a summary at the end."""

    def __init__(self, crawler: Crawler, interval: float) -> None:
        self.crawler = crawler
        self.interval = interval
        self.loop: task.LoopingCall | None = None
        self.started = time.monotonic()
        self.last_time = self.started
        self.last_captures = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Progress:
        interval = crawler.settings.getfloat("PROGRESS_INTERVAL", 10.0)
        if interval < 0:
            raise NotConfigured
        extension = cls(crawler, interval)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    @property
    def stats(self) -> dict[str, Any]:
        assert self.crawler.stats is not None
        return self.crawler.stats.get_stats()

    def spider_opened(self, spider: Spider) -> None:
        install_redaction()  # Scrapy's log handlers exist by now
        self.started = self.last_time = time.monotonic()
        if self.interval > 0:
            self.loop = task.LoopingCall(self.log_progress, spider)
            self.loop.start(self.interval, now=False)

    def log_progress(self, spider: Spider) -> None:
        stats = self.stats
        now = time.monotonic()
        captures = stats.get("trawl/captures", 0)
        rate = (captures - self.last_captures) / max(now - self.last_time, 1e-9)
        self.last_time, self.last_captures = now, captures
        total = stats.get("trawl/pages_total")
        pages = f"{_n(stats.get('trawl/pages'))}/{_n(total) if total is not None else '?'}"
        spider.logger.info(
            "%s: pages %s | %s requests | %s captures | %s unique URLs | %s new | %s captures/s"
            " | %s errors%s",
            spider.name,
            pages,
            _n(stats.get("downloader/request_count")),
            _n(captures),
            _n(stats.get("trawl/urls_unique")),
            _n(stats.get("trawl/urls_new")),
            _n(rate),
            _n(stats.get("trawl/errors")),
            self.pause_note(spider),
        )

    def pause_note(self, spider: Spider) -> str:
        """ " | paused until 12:00:30 (HTTP 429, Retry-After)" while the source waits."""
        limiter = existing_limiter(spider.name)
        if limiter is None or limiter.paused_until <= time.time():
            return ""
        until = time.strftime("%H:%M:%S", time.localtime(limiter.paused_until))
        return f" | paused until {until} ({limiter.pause_reason})"

    def log_estimate(self, spider: Spider, stats: dict[str, Any]) -> None:
        """check_only: how many requests a full run would make, and how long they take."""
        if stats.get("trawl/estimate/unknown"):
            spider.logger.info("%s: check only: the number of requests is unknown", spider.name)
            return
        requests = int(stats.get("trawl/estimate/requests", 0))
        limit = self.crawler.settings.getdict("RATE_LIMITS").get(spider.name)
        duration = ""
        if limit:
            count, period = parse_rate(limit)
            duration = f", about {format_duration(max(0, requests - count) * period / count)} at {limit}"
        spider.logger.info(
            "%s: check only: a full run would make %s requests%s", spider.name, _n(requests), duration
        )

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        stats = self.stats
        outcome = run_outcome(stats, reason)
        assert self.crawler.stats is not None
        self.crawler.stats.set_value("trawl/outcome", outcome)
        if getattr(spider, "check_only", False):
            self.log_estimate(spider, stats)
        elapsed = time.monotonic() - self.started
        filtered = sum(v for k, v in stats.items() if k.startswith("trawl/filtered/"))
        captures = stats.get("trawl/captures", 0)
        spider.logger.info(
            "%s: %s (%s) in %.1f s: %s requests, %s pages, %s URLs seen, %s unique, "
            "%s new this run, %s duplicates dropped, %s filtered, %s errors, %s captures/s",
            spider.name,
            outcome,
            reason,
            elapsed,
            _n(stats.get("downloader/request_count")),
            _n(stats.get("trawl/pages")),
            _n(captures),
            _n(stats.get("trawl/urls_unique")),
            _n(stats.get("trawl/urls_new")),
            _n(stats.get("trawl/duplicates")),
            _n(filtered),
            _n(error_count(stats)),
            _n(captures / elapsed if elapsed > 0 else 0),
        )
