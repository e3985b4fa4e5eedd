"""Retries with backoff: Scrapy's RetryMiddleware, taught to wait.

Scrapy retries at once and ignores ``Retry-After`` (scrapy#3849). Here:

* a 429/503 that says when to come back has paused the whole source
  (trawl.politeness.ratelimit); its retry simply waits for the pause;
* without a hint, the retry waits a full-jitter exponential backoff
  (trawl.politeness.retryrule, the rule spiders also use for bodies that do not parse);
* each source may have its own number of retries (``RETRY_LIMITS``);
* a timeout is said at once, in one WARNING naming the source and the retry:
  a server that accepts and never answers cost 8 minutes of silence.
  It names the page (``page 3 from web.archive.org``), else the host; for a
  source whose requests are the target's own pages (the live crawl, the probe:
  ``answers_are_targets``) the URL, which the host alone did not tell among a
  site's thousand pages;
  an answer that began and was still arriving is said as such, with the bytes
  received, and retried once at most (trawl.politeness.bounds);
* a connection refused or reset right after 429s is a ban (the gate said so):
  the source is paused and the request waits for the pause without spending a
  retry, so that a ban does not burn every page's budget in seconds
  (72 refused connections, 11 of 40 pages given up);
* a request that gives up is counted (``trawl/gave_up``) and reaches the spider,
  which reports it, so the run is partial and a resumed run fetches it again.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.exceptions import DownloadTimeoutError
from scrapy.utils.response import response_status_message
from twisted.internet.error import TCPTimedOutError, TimeoutError

from trawl.common import statkeys
from trawl.politeness.bounds import SLOW_ANSWER_RETRIES, StillArriving, what_request
from trawl.politeness.ratelimit import BANNED, PAUSE_STATUSES
from trawl.politeness.retryhints import resume_time
from trawl.politeness.retryrule import NOT_BEFORE, backoff_retry, retry_budget

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

TIMEOUTS = (DownloadTimeoutError, TimeoutError, TCPTimedOutError)


class BackoffRetryMiddleware(RetryMiddleware):
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BackoffRetryMiddleware:
        middleware = super().from_crawler(crawler)
        middleware.rate_limits_enabled = crawler.settings.getbool("RATE_LIMITS_ENABLED")
        return middleware

    def process_response(self, request: Request, response: Response, spider: Spider | None = None) -> Any:
        if request.meta.get("dont_retry", False) or response.status not in self.retry_http_codes:
            return response
        # A hinted 429/503 has paused the source already (RateLimitMiddleware):
        # the retry waits for that pause, not for a backoff of its own.
        hinted = response.status in PAUSE_STATUSES and resume_time(response, time.time()) is not None
        retry = self._retry(
            request, response_status_message(response.status), hinted=hinted and self.rate_limits_enabled
        )
        return retry or response

    def process_exception(self, request: Request, exception: Exception, spider: Spider | None = None) -> Any:
        if request.meta.get(BANNED):
            return self._wait_out_ban(request)
        if isinstance(exception, self.exceptions_to_retry) and not request.meta.get("dont_retry", False):
            if isinstance(exception, StillArriving):
                # A server that dribbles does so every time: one more try, not RETRY_TIMES.
                budget = min(retry_budget(self.crawler, request), SLOW_ANSWER_RETRIES)
                request.meta["max_retry_times"] = budget
            retry = self._retry(request, exception)
            if isinstance(exception, TIMEOUTS):
                self._report_timeout(request, retry, exception)
            return retry
        return None

    def _retry(self, request: Request, reason: Any, hinted: bool = False) -> Request | None:  # type: ignore[override]
        return backoff_retry(self.crawler, request, reason, hinted=hinted)

    def _wait_out_ban(self, request: Request) -> Request:
        """The same request again, its retries untouched: the gate holds it until the ban's pause ends."""
        again = request.replace(dont_filter=True)
        again.meta.pop(BANNED, None)
        again.meta.pop(NOT_BEFORE, None)
        self.crawler.stats.inc_value(statkeys.BAN_REQUEUED)
        return again

    def _report_timeout(self, request: Request, retry: Request | None, exception: Exception) -> None:
        """One WARNING per timeout, as it happens, and the count the progress line shows."""
        stats = self.crawler.stats
        stats.inc_value(statkeys.TIMEOUTS)
        spider = self.crawler.spider
        name = getattr(spider, "name", "?")
        if request.meta.get("page") is not None or getattr(spider, "answers_are_targets", False):
            where = what_request(request)  # page 3 from web.archive.org; a target's page: its URL
        else:
            where = urlsplit(request.url).netloc
        budget = retry_budget(self.crawler, request)
        then = f"retry {retry.meta['retry_times']} of {budget}" if retry is not None else "giving up"
        if isinstance(exception, StillArriving):
            logger.warning("%s: timeout: %s: %s; %s", name, where, exception, then)
            return
        logger.warning(
            "%s: timeout: no answer for %s within %g s; %s",
            name,
            where,
            request.meta.get("download_timeout", 0),
            then,
        )
