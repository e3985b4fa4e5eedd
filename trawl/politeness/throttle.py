"""AutoThrottle that hears 429 and 503.

Scrapy's AutoThrottle lowers its delay on fast answers and ignores their
status, so a server answering 429 quickly makes it go faster (scrapy#4424).
Here a 429 or 503 doubles the delay (at least ``AUTOTHROTTLE_START_DELAY``,
at most ``AUTOTHROTTLE_MAX_DELAY``); other answers adjust it from latency
as Scrapy does.

With the source gates on (``RATE_LIMITS_ENABLED``), the delay is applied by
the source's gate (trawl.politeness.gate) instead of the downloader slot, so that
every timing decision for a source is taken in one place and a request the
gate lets go is sent at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.extensions.throttle import AutoThrottle

from trawl.common import statkeys
from trawl.politeness.gate import SourceLimiter
from trawl.politeness.ratelimit import OWN_RATE_LIMITS, source_limiter

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.core.downloader import Slot
    from scrapy.http import Response

SLOW_DOWN = frozenset({429, 503})


class SourceAutoThrottle(AutoThrottle):
    limiter: SourceLimiter | None = None

    def _spider_opened(self, spider: Spider) -> None:
        super()._spider_opened(spider)
        if self.crawler.settings.getbool("RATE_LIMITS_ENABLED", True):
            self.limiter = source_limiter(self.crawler, spider)
            self.limiter.interval = self._start_delay()
            self.crawler.engine.downloader._delay = 0.0  # the gate applies it instead

    def _response_downloaded(self, response: Response, request: Request, spider: Spider) -> None:
        if self.limiter is None:
            super()._response_downloaded(response, request, spider)
            return
        latency = request.meta.get("download_latency")
        if latency is None or request.meta.get("autothrottle_dont_adjust_delay", False):
            return
        if response.status == 429 and request.meta.get(OWN_RATE_LIMITS):
            return  # one API key's quota (the spider rests that key), not the source's
        old = self.limiter.interval
        self.limiter.interval = self.next_delay(old, latency, response.status)
        if self.debug and self.limiter.interval != old:
            spider.logger.info(
                "%s: throttle delay %.0f ms -> %.0f ms (HTTP %d, latency %.0f ms)",
                spider.name,
                old * 1000,
                self.limiter.interval * 1000,
                response.status,
                latency * 1000,
            )
        self.crawler.stats.max_value(statkeys.THROTTLE_DELAY_MS_MAX, int(self.limiter.interval * 1000))

    def _adjust_delay(self, slot: Slot, latency: float, response: Response) -> None:
        slot.delay = self.next_delay(slot.delay, latency, response.status)

    def next_delay(self, current: float, latency: float, status: int) -> float:
        if status in SLOW_DOWN:
            raised = max(current * 2, self._start_delay(), 0.1)
            return min(max(raised, self.mindelay), self.maxdelay)
        target = latency / self.target_concurrency
        new = max(target, (current + target) / 2.0)
        new = min(max(self.mindelay, new), self.maxdelay)
        if status != 200 and new <= current:
            return current
        return new
