"""Downloader middleware: every request waits at its source's gate (trawl.limiter).

A 429 or 503 that says when to come back (Retry-After, X-Rate-Limit-Reset...,
see trawl.retryhints) pauses the whole source until then; the other sources
keep going. Budgets come from the spider (``default_rate_limit``, ``default_concurrency``)
unless ``RATE_LIMITS`` / ``SOURCE_CONCURRENCY`` override them, e.g.
``-s 'RATE_LIMITS={"wayback": "30/60s"}'``. ``RATE_LIMITS_ENABLED=False``
turns the gate off (tests that are not about politeness).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future

from trawl.limiter import SourceLimiter, limiter_for
from trawl.retryhints import resume_time

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

#: Answers whose hint (Retry-After...) pauses the whole source.
PAUSE_STATUSES = frozenset({429, 503})
#: request.meta key: earliest time (epoch seconds) this request may be sent (backoff).
NOT_BEFORE = "trawl_not_before"
#: request.meta key: the spider handles 429 per API key (urlscan's key ring): a 429
#: rests that key only and must not pause the whole source.
OWN_RATE_LIMITS = "trawl_own_rate_limits"
_ACQUIRED = "trawl_gate_acquired"


def source_concurrency(settings: BaseSettings, spider: Spider | type[Spider]) -> int:
    """Requests of a source in flight at once: ``SOURCE_CONCURRENCY``, else the spider's
    ``default_concurrency``, else ``CONCURRENT_REQUESTS_PER_DOMAIN``. The gate holds it,
    and so does the source's download slot (trawl.downloader), gate or no gate."""
    default = getattr(spider, "default_concurrency", settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN"))
    return int(settings.getdict("SOURCE_CONCURRENCY").get(spider.name, default))


def source_limiter(crawler: Crawler, spider: Spider) -> SourceLimiter:
    settings = crawler.settings
    name = spider.name
    rate = settings.getdict("RATE_LIMITS").get(name, getattr(spider, "default_rate_limit", None))
    return limiter_for(name, rate, source_concurrency(settings, spider))


class RateLimitMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.limiter: SourceLimiter | None = None
        #: Longest pause a hint may impose: a server asking for more gets a partial run, not a hung one.
        self.max_pause = crawler.settings.getfloat("RETRY_MAX_PAUSE", 3600.0)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RateLimitMiddleware:
        if not crawler.settings.getbool("RATE_LIMITS_ENABLED", True):
            raise NotConfigured
        return cls(crawler)

    def spider_opened(self, spider: Spider) -> None:
        self.limiter = source_limiter(self.crawler, spider)
        if self.limiter.requests is not None:
            spider.logger.info(
                "%s: at most %d requests per %g s, %d at a time",
                spider.name,
                self.limiter.requests,
                self.limiter.period,
                self.limiter.concurrency,
            )

    async def process_request(self, request: Request, spider: Spider | None = None) -> None:
        limiter = self.limiter
        if limiter is None or request.meta.get(_ACQUIRED):
            return
        not_before = float(request.meta.get(NOT_BEFORE) or 0.0)
        if limiter.paused_until > time.time():
            self.crawler.stats.inc_value("trawl/requests_held_by_pause")
        await maybe_deferred_to_future(limiter.acquire(not_before))
        request.meta[_ACQUIRED] = True

    def process_response(self, request: Request, response: Response, spider: Spider | None = None) -> Any:
        # Pause before letting the next request through: releasing first would
        # send one more request into the very limit the server just reported.
        own = response.status == 429 and request.meta.get(OWN_RATE_LIMITS)
        if response.status in PAUSE_STATUSES and self.limiter is not None and not own:
            self._pause(response)
        self._release(request)
        return response

    def _pause(self, response: Response) -> None:
        assert self.limiter is not None
        now = time.time()
        hint = resume_time(response, now)
        if hint is None:
            return
        until = min(hint[0], now + self.max_pause)
        if self.limiter.pause(until, f"HTTP {response.status}, {hint[1]}"):
            self.crawler.stats.inc_value("trawl/pauses")
            self.crawler.stats.max_value("trawl/pause_seconds_max", round(until - now, 3))
            logger.warning(
                "%s: paused until %s (HTTP %d, %s); other sources keep going",
                self.limiter.source,
                time.strftime("%H:%M:%S", time.localtime(until)),
                response.status,
                hint[1],
            )

    def process_exception(self, request: Request, exception: Exception, spider: Spider | None = None) -> None:
        self._release(request)

    def _release(self, request: Request) -> None:
        if self.limiter is not None and request.meta.pop(_ACQUIRED, False):
            self.limiter.release()
