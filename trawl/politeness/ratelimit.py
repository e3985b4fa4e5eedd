"""Downloader middleware: every request waits at its source's gate (trawl.politeness.gate).

A 429 or 503 that says when to come back (Retry-After, X-Rate-Limit-Reset...,
see trawl.politeness.retryhints) pauses the whole source until then; the other sources
keep going. A 429 that says nothing cuts the source's budget and concurrency
and pauses it, and a refused or reset connection right after such 429s is a
ban the source sits out (trawl.politeness.aimd). Budgets come from the spider
(``default_rate_limit``, ``default_concurrency``) unless ``RATE_LIMITS`` /
``SOURCE_CONCURRENCY`` override them, e.g. ``-s 'RATE_LIMITS={"wayback":
"30/60s"}'``. ``RATE_LIMITS_ENABLED=False`` turns the gate off (tests that are
not about politeness).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DownloadConnectionRefusedError, DownloadFailedError, NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.error import ConnectError, ConnectionDone, ConnectionLost

from trawl.common import statkeys
from trawl.common.stopping import Abandoned, stopping
from trawl.distributed.connection import redis_url
from trawl.politeness.aimd import Backpressure
from trawl.politeness.gate import SourceLimiter, limiter_for
from trawl.politeness.rates import format_duration
from trawl.politeness.retryhints import resume_time
from trawl.politeness.retryrule import NOT_BEFORE

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

__all__ = ["BANNED", "NOT_BEFORE", "OWN_RATE_LIMITS", "PAUSE_STATUSES", "RateLimitMiddleware"]

#: Answers whose hint (Retry-After...) pauses the whole source.
PAUSE_STATUSES = frozenset({429, 503})
#: request.meta key: the spider handles 429 per API key (urlscan's key ring): a 429
#: rests that key only and must not pause the whole source.
OWN_RATE_LIMITS = "trawl_own_rate_limits"
#: request.meta key set on a failed request: the source is banned, the request waits
#: out the pause without spending a retry (trawl.politeness.retry).
BANNED = "trawl_banned"
#: request.meta key: when the gate let the request go (epoch seconds).
SENT_AT = "trawl_sent_at"
_ACQUIRED = "trawl_gate_acquired"
#: What a ban looks like from here: the connection refused, or closed before an answer.
BAN_ERRORS = (
    DownloadConnectionRefusedError,
    DownloadFailedError,
    ConnectError,
    ConnectionDone,
    ConnectionLost,
)


def source_concurrency(settings: BaseSettings, spider: Spider | type[Spider]) -> int:
    """Requests of a source in flight at once: ``SOURCE_CONCURRENCY``, else the spider's
    ``default_concurrency``, else ``CONCURRENT_REQUESTS_PER_DOMAIN``. The gate holds it,
    and so does the source's download slot (trawl.politeness.downloader), gate or no gate."""
    default = getattr(spider, "default_concurrency", None)
    if default is None:
        default = settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
    return int(settings.getdict("SOURCE_CONCURRENCY").get(spider.name, default))


def source_rate(settings: BaseSettings, spider: Spider | type[Spider]) -> str | None:
    """A source's budget (``"60/60s"``): ``RATE_LIMITS``, else the spider's ``default_rate_limit``.

    The one reading of it: the gate enforces it, ``check_only`` estimates durations with it.
    """
    return settings.getdict("RATE_LIMITS").get(spider.name, getattr(spider, "default_rate_limit", None))


def source_limiter(crawler: Crawler, spider: Spider) -> SourceLimiter:
    """The source's gate in this process; with ``TRAWL_REDIS_URL``, shared by every process
    through Redis (trawl.distributed.sharedgate, imported only then)."""
    settings = crawler.settings
    make = None
    url = redis_url(settings)
    if url:
        from trawl.distributed.sharedgate import SharedLimiter

        make = SharedLimiter.shared(url)
    return limiter_for(spider.name, source_rate(settings, spider), source_concurrency(settings, spider), make)


class RateLimitMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.limiter: SourceLimiter | None = None
        self.backpressure: Backpressure | None = None
        self.counted = False
        #: Longest pause a hint may impose: a server asking for more gets a partial run, not a hung one.
        self.max_pause = crawler.settings.getfloat("RETRY_MAX_PAUSE")
        self.ban_pause = crawler.settings.getfloat("RETRY_BAN_PAUSE")
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.stopping, signal=stopping)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RateLimitMiddleware:
        if not crawler.settings.getbool("RATE_LIMITS_ENABLED"):
            raise NotConfigured
        return cls(crawler)

    def spider_opened(self, spider: Spider) -> None:
        self.limiter = source_limiter(self.crawler, spider)
        self.limiter.reopen()
        # The gate is the source's in this process: a worker runs several crawls of one source at
        # once (tasks, a spread run's joiners); only the last one stopping gives up the waiting requests.
        self.limiter.open_crawls = getattr(self.limiter, "open_crawls", 0) + 1  # type: ignore[attr-defined]
        self.counted = True
        self.backpressure = Backpressure(self.limiter, self.ban_pause, self.max_pause)
        self.limiter.backpressure = self.backpressure  # type: ignore[attr-defined]
        if self.limiter.requests is not None:
            spider.logger.info(
                "%s: at most %d requests per %g s, %d at a time",
                spider.name,
                self.limiter.requests,
                self.limiter.period,
                self.limiter.concurrency,
            )

    def stopping(self, reason: str) -> None:
        """The crawler is closing: requests held by a pause or a backoff are given up, not waited for."""
        if self.limiter is None:
            return
        if self.counted:  # the signal may come more than once for one crawl
            self.counted = False
            self.limiter.open_crawls = getattr(self.limiter, "open_crawls", 1) - 1  # type: ignore[attr-defined]
        if getattr(self.limiter, "open_crawls", 0) > 0:
            return  # another crawl of the source runs here: its requests must not fail
        source = self.limiter.source
        given_up = self.limiter.abandon(
            lambda: Abandoned(f"{source}: not sent, the crawl is stopping ({reason})")
        )
        if given_up:
            self.crawler.stats.inc_value(statkeys.ABANDONED, given_up)

    async def process_request(self, request: Request, spider: Spider | None = None) -> None:
        limiter = self.limiter
        if limiter is None or request.meta.get(_ACQUIRED):
            return
        not_before = float(request.meta.get(NOT_BEFORE) or 0.0)
        if limiter.paused_until > time.time():
            self.crawler.stats.inc_value(statkeys.REQUESTS_HELD_BY_PAUSE)
        await maybe_deferred_to_future(limiter.acquire(not_before))
        request.meta[_ACQUIRED] = True
        request.meta[SENT_AT] = time.time()

    def process_response(self, request: Request, response: Response, spider: Spider | None = None) -> Any:
        # Pause before letting the next request through: releasing first would
        # send one more request into the very limit the server just reported.
        own = response.status == 429 and request.meta.get(OWN_RATE_LIMITS)
        if self.limiter is not None and not own and request.meta.get(_ACQUIRED):
            if response.status in PAUSE_STATUSES:
                if not self._pause(response) and response.status == 429:
                    self._cut(request)
            elif response.status < 500:
                self._answered(request)
        self._release(request)
        return response

    def _pause(self, response: Response) -> bool:
        """Pause the source until the answer's hint; False without a hint."""
        assert self.limiter is not None
        now = time.time()
        hint = resume_time(response, now)
        if hint is None:
            return False
        until = min(hint[0], now + self.max_pause)
        if self.limiter.pause(until, f"HTTP {response.status}, {hint[1]}"):
            self._count_pause(until - now)
            logger.warning(
                "%s: paused until %s (HTTP %d, %s); other sources keep going",
                self.limiter.source,
                _clock(until),
                response.status,
                hint[1],
            )
        return True

    def _cut(self, request: Request) -> None:
        assert self.limiter is not None and self.backpressure is not None
        length = self.backpressure.too_many(request.meta.get(SENT_AT, 0.0))
        if length is None:
            return
        limiter = self.limiter
        stats = self.crawler.stats
        stats.inc_value(statkeys.RATE_CUTS)
        self._count_pause(length)
        stats.set_value(statkeys.RATE_FINAL, limiter.budget)
        logger.warning(
            "%s: HTTP 429 without Retry-After: budget cut to %s, %d at a time; paused until %s",
            limiter.source,
            limiter.budget,
            limiter.concurrency,
            _clock(limiter.paused_until),
        )

    def _answered(self, request: Request) -> None:
        assert self.limiter is not None and self.backpressure is not None
        before = (self.limiter.requests, self.limiter.concurrency)
        self.backpressure.answered(request.meta.get(SENT_AT, 0.0))
        if (self.limiter.requests, self.limiter.concurrency) != before:
            self.crawler.stats.set_value(statkeys.RATE_FINAL, self.limiter.budget)
            logger.info(
                "%s: no 429 for a while: budget back up to %s, %d at a time",
                self.limiter.source,
                self.limiter.budget,
                self.limiter.concurrency,
            )

    def process_exception(self, request: Request, exception: Exception, spider: Spider | None = None) -> None:
        if (
            self.backpressure is not None
            and request.meta.get(_ACQUIRED)
            and isinstance(exception, BAN_ERRORS)
        ):
            what = "connection refused" if "Refused" in type(exception).__name__ else "connection closed"
            length = self.backpressure.connection_failed(request.meta.get(SENT_AT, 0.0), what)
            if length is not None:
                request.meta[BANNED] = True
                if length:
                    self._banned(what, length)
        self._release(request)

    def _banned(self, what: str, length: float) -> None:
        assert self.limiter is not None and self.backpressure is not None
        stats = self.crawler.stats
        stats.set_value(statkeys.BANS, self.backpressure.bans)
        self._count_pause(length)
        logger.warning(
            "%s: banned (%s right after HTTP 429): pausing %s, until %s; its pages wait, no retry spent",
            self.limiter.source,
            what,
            format_duration(length),
            _clock(self.limiter.paused_until),
        )

    def _count_pause(self, length: float) -> None:
        stats = self.crawler.stats
        stats.inc_value(statkeys.PAUSES)
        stats.max_value(statkeys.PAUSE_SECONDS_MAX, round(length, 3))
        assert self.limiter is not None
        stats.set_value(statkeys.PAUSED_SECONDS, round(self.limiter.paused_total, 3))

    def _release(self, request: Request) -> None:
        if self.limiter is not None and request.meta.pop(_ACQUIRED, False):
            self.limiter.release()


def _clock(epoch: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch))
