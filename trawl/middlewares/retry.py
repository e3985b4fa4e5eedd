"""Retries with backoff: Scrapy's RetryMiddleware, taught to wait.

Scrapy retries at once and ignores ``Retry-After`` (scrapy#3849). Here:

* a 429/503 that says when to come back has paused the whole source
  (trawl.middlewares.ratelimit); its retry simply waits for the pause;
* without a hint, the retry waits a full-jitter exponential backoff,
  ``uniform(0, min(RETRY_BACKOFF_MAX, RETRY_BACKOFF_BASE * 2**attempt))``;
* each source may have its own number of retries (``RETRY_LIMITS``);
* a request that gives up is counted (``trawl/gave_up``) and reaches the spider,
  which reports it, so the run is partial and a resumed run fetches it again.
"""

from __future__ import annotations

import logging
import random
import time
from typing import TYPE_CHECKING, Any

from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.utils.response import response_status_message

from trawl.middlewares.ratelimit import NOT_BEFORE, PAUSE_STATUSES
from trawl.retryhints import resume_time

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class BackoffRetryMiddleware(RetryMiddleware):
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BackoffRetryMiddleware:
        middleware = super().from_crawler(crawler)
        settings = crawler.settings
        middleware.backoff_base = settings.getfloat("RETRY_BACKOFF_BASE", 1.0)
        middleware.backoff_max = settings.getfloat("RETRY_BACKOFF_MAX", 60.0)
        middleware.rate_limits_enabled = settings.getbool("RATE_LIMITS_ENABLED", True)
        return middleware

    def _limits(self) -> dict[str, Any]:
        return self.crawler.settings.getdict("RETRY_LIMITS")

    def process_response(self, request: Request, response: Response, spider: Spider | None = None) -> Any:
        if request.meta.get("dont_retry", False) or response.status not in self.retry_http_codes:
            return response
        # A hinted 429/503 has paused the source already (RateLimitMiddleware):
        # the retry waits for that pause, not for a backoff of its own.
        hinted = response.status in PAUSE_STATUSES and resume_time(response, time.time()) is not None
        retry = self._retry(
            request, response_status_message(response.status), hinted=hinted and self.rate_limits_enabled
        )
        return retry or self._gave_up(response)

    def process_exception(self, request: Request, exception: Exception, spider: Spider | None = None) -> Any:
        if isinstance(exception, self.exceptions_to_retry) and not request.meta.get("dont_retry", False):
            retry = self._retry(request, exception, hinted=False)
            if retry is None:
                self.crawler.stats.inc_value("trawl/gave_up")
            return retry
        return None

    def _retry(self, request: Request, reason: Any, hinted: bool = False) -> Request | None:  # type: ignore[override]
        spider = self.crawler.spider
        limit = self._limits().get(getattr(spider, "name", ""))
        if limit is not None and "max_retry_times" not in request.meta:
            request.meta["max_retry_times"] = int(limit)
        retry = super()._retry(request, reason)
        if retry is None:
            return None
        if not hinted:
            attempt = retry.meta.get("retry_times", 1)
            delay = random.uniform(0, min(self.backoff_max, self.backoff_base * 2**attempt))
            retry.meta[NOT_BEFORE] = time.time() + delay
            self.crawler.stats.inc_value("trawl/backoff_seconds", round(delay, 3))
        return retry

    def _gave_up(self, response: Response) -> Response:
        self.crawler.stats.inc_value("trawl/gave_up")
        return response
