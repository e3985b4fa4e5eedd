"""One retry rule for every transient fault: 5xx, timeouts, resets, and bodies that do not parse.

The retry middleware (trawl.politeness.retry) calls :func:`backoff_retry` for
HTTP errors and connection failures; spiders call it, through
:meth:`trawl.sources.base.SourceSpider.retry_bad_body`, for an answer whose
body cannot be read (cut-off JSON, NDJSON or CDX lines that do not split). A
corrupt body is a transfer that went wrong as often as a 503 is: measured under
injected faults, dropping it at once lost one OTX page in 800 (recall 0.9988).
Both kinds get the same budget (``RETRY_TIMES``, per source
``RETRY_LIMITS``) and the same full-jitter backoff, ``uniform(0, min(
RETRY_BACKOFF_MAX, RETRY_BACKOFF_BASE * 2**attempt))``, applied by the source's
gate (the request's not-before time), so a retry never blocks the reactor.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any

from scrapy.downloadermiddlewares.retry import get_retry_request

from trawl.common import statkeys

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

#: request.meta key: earliest time (epoch seconds) this request may be sent (backoff).
NOT_BEFORE = "trawl_not_before"


def retry_budget(crawler: Crawler, request: Request) -> int:
    """Retries this request may have: ``max_retry_times``, else the source's ``RETRY_LIMITS``,
    else ``RETRY_TIMES``."""
    if request.meta.get("max_retry_times") is not None:
        return int(request.meta["max_retry_times"])
    name = getattr(crawler.spider, "name", "")
    limit = crawler.settings.getdict("RETRY_LIMITS").get(name)
    return int(limit) if limit is not None else crawler.settings.getint("RETRY_TIMES")


def backoff_retry(crawler: Crawler, request: Request, reason: Any, *, hinted: bool = False) -> Request | None:
    """A copy of ``request`` to send again after a backoff, or ``None`` once its retries are spent.

    ``hinted``: the server said when to come back and the source is paused until
    then; the retry waits for that pause rather than for a backoff of its own.
    Scrapy's give-up line is not logged: the spider reports what failed, once.
    """
    budget = retry_budget(crawler, request)
    if request.meta.get("retry_times", 0) >= budget:
        crawler.stats.inc_value(statkeys.GAVE_UP)
        return None
    retry = get_retry_request(request, spider=crawler.spider, reason=reason, max_retry_times=budget)
    if retry is None:  # pragma: no cover - the budget was checked above
        return None
    retry.meta["max_retry_times"] = budget
    # The last try's latency is not this one's; a spider re-yielding the copy (a bad body)
    # made Scrapy's MetaCopyDetectionMiddleware warn about it.
    retry.meta.pop("download_latency", None)
    if not hinted:
        settings = crawler.settings
        attempt = retry.meta.get("retry_times", 1)
        ceiling = min(
            settings.getfloat("RETRY_BACKOFF_MAX"), settings.getfloat("RETRY_BACKOFF_BASE") * 2**attempt
        )
        delay = random.uniform(0, ceiling)
        retry.meta[NOT_BEFORE] = time.time() + delay
        crawler.stats.inc_value(statkeys.BACKOFF_SECONDS, round(delay, 3))
    return retry
