"""A progress line at a steady interval, and a summary when a crawl ends.

Scrapy's LogStats counts responses and items; for trawl a response is a CDX
page and an item a batch of thousands, so neither says how far a crawl is.
This line does: pages done of pages known, captures read, unique and new URLs,
and the capture rate since the previous line. When the rate is low it says
why: the source is paused (a Retry-After, a 429, a ban), waits on its budget
(``waiting on rate limit (60/60s) until 08:31:05``), or waits on answers that
do not come (``waiting 95 s on 4 requests to web.archive.org``, and the
timeouts so far); without that, a stalled run printed 49 identical lines saying
"0 errors" for 8 minutes. A source of another record kind says what it
counts instead, as its finish line does (:mod:`trawl.run.finishline`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from twisted.internet import task

from trawl.common import statkeys
from trawl.common.counts import counted
from trawl.common.failcause import estimate_unknown
from trawl.common.outcome import run_outcome
from trawl.common.secrets import install_redaction
from trawl.politeness.gate import SourceLimiter, existing_limiter
from trawl.politeness.inflight import in_flight
from trawl.politeness.ratelimit import source_rate
from trawl.politeness.rates import format_duration, parse_rate
from trawl.run.finishline import finish_line, records_said, says_urls, stored_by_kind

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler


def _n(value: Any) -> str:
    return f"{int(value or 0):,}"


#: Seconds from the spider's opening to its closing, as the finish line says them.
ELAPSED = statkeys.ELAPSED_SECONDS


def _clock(epoch: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch))


class Progress:
    """Logs progress every ``PROGRESS_INTERVAL`` seconds and a summary at the end."""

    def __init__(self, crawler: Crawler, interval: float) -> None:
        self.crawler = crawler
        self.interval = interval
        self.stall_after = crawler.settings.getfloat("PROGRESS_STALL_AFTER")
        self.loop: task.LoopingCall | None = None
        self.started = time.monotonic()
        self.last_time = self.started
        self.last_captures = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Progress:
        interval = crawler.settings.getfloat("PROGRESS_INTERVAL")
        extension = cls(crawler, interval)
        if interval < 0:
            # No progress lines and no finish line, but the run's outcome is still decided here:
            # without it ``-s PROGRESS_INTERVAL=-1`` made a crawl that logged an ERROR exit 0.
            crawler.signals.connect(extension.record_outcome, signal=signals.spider_closed)
            return extension
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
        urls = says_urls(spider)
        # A URL source is paced by its captures; another kind by the records it stored.
        captures = stats.get(statkeys.CAPTURES, 0) if urls else sum(stored_by_kind(stats).values())
        rate = (captures - self.last_captures) / max(now - self.last_time, 1e-9)
        self.last_time, self.last_captures = now, captures
        limiter = existing_limiter(spider.name)
        speed = f"{_n(rate)} {'captures' if urls else 'records'}/s"
        held = limiter.holdup() if limiter is not None else None
        if held is not None and int(rate) == 0:
            speed = f"waiting on rate limit ({limiter.budget}) until {_clock(held)}"  # type: ignore[union-attr]
        requests = counted(stats.get("downloader/request_count"), "request")
        errors = counted(stats.get(statkeys.ERRORS), "error")
        if not urls:
            fields = [requests, records_said(spider, stats), speed, errors]
        else:
            total = stats.get(statkeys.PAGES_TOTAL)
            pages = f"{_n(stats.get(statkeys.PAGES))}/{_n(total) if total is not None else '?'}"
            fields = [
                f"pages {pages}",
                requests,
                counted(captures, "capture"),
                counted(stats.get(statkeys.URLS_UNIQUE), "unique URL"),
                f"{_n(stats.get(statkeys.URLS_NEW))} new",
                speed,
                errors,
            ]
        if stats.get(statkeys.TIMEOUTS):
            fields.append(counted(stats[statkeys.TIMEOUTS], "timeout"))
        spider.logger.info(
            "%s: %s%s%s%s",
            spider.name,
            " | ".join(fields),
            self.pause_note(spider),
            self.gate_note(limiter),
            self.stall_note(),
        )

    def pause_note(self, spider: Spider) -> str:
        """ " | paused until 12:00:30 (HTTP 429, Retry-After)" while the source waits."""
        limiter = existing_limiter(spider.name)
        if limiter is None or limiter.paused_until <= time.time():
            return ""
        return f" | paused until {_clock(limiter.paused_until)} ({limiter.pause_reason})"

    @staticmethod
    def gate_note(limiter: SourceLimiter | None) -> str:
        """ " | waited 2.0 min, budget 15/60s" once the source was paused or its budget cut."""
        if limiter is None:
            return ""
        parts = []
        if limiter.waited() >= 1:
            parts.append(f"waited {format_duration(limiter.waited())}")
        if (limiter.requests, limiter.concurrency) != (limiter.base_requests, limiter.base_concurrency):
            parts.append(f"budget {limiter.budget}, {limiter.concurrency} at a time")
        return f" | {', '.join(parts)}" if parts else ""

    def stall_note(self) -> str:
        """ " | waiting 95 s on 4 requests to web.archive.org" past ``PROGRESS_STALL_AFTER``."""
        if self.stall_after <= 0:
            return ""
        stalled = in_flight(self.crawler).stalled(self.stall_after)
        if stalled is None:
            return ""
        age, count, hosts = stalled
        return f" | waiting {age:.0f} s on {counted(count, 'request')} to {', '.join(hosts)}"

    def log_estimate(self, spider: Spider, stats: dict[str, Any]) -> None:
        """check_only: how many requests a full run would make, and how long they take."""
        unknown = estimate_unknown(stats)
        if unknown is not None:
            spider.logger.info("%s: check only: the number of requests is %s", spider.name, unknown)
            return
        requests = int(stats.get(statkeys.ESTIMATE_REQUESTS, 0))
        limit = source_rate(self.crawler.settings, spider)
        duration = ""
        if limit:
            count, period = parse_rate(limit)
            duration = f", about {format_duration(max(0, requests - count) * period / count)} at {limit}"
        spider.logger.info(
            "%s: check only: a full run would make %s%s", spider.name, counted(requests, "request"), duration
        )

    def record_outcome(self, spider: Spider, reason: str) -> str:
        """Decide the run's outcome (the exit status and the summaries read it), whatever is logged."""
        outcome = run_outcome(self.stats, reason)
        assert self.crawler.stats is not None
        self.crawler.stats.set_value(statkeys.OUTCOME, outcome)
        return outcome

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        if self.interval < 0:  # a forced close (crawl_all) calls this directly
            self.record_outcome(spider, reason)
            return
        stats = self.stats
        outcome = self.record_outcome(spider, reason)
        if getattr(spider, "check_only", False):
            self.log_estimate(spider, stats)
        elapsed = time.monotonic() - self.started
        # The one duration of this source: the summary table and the run summary read it too.
        self.crawler.stats.set_value(ELAPSED, elapsed)
        line, values = finish_line(
            spider, stats, outcome, reason, elapsed, self.wait_summary(existing_limiter(spider.name), stats)
        )
        spider.logger.info(line, *values)

    @staticmethod
    def wait_summary(limiter: SourceLimiter | None, stats: dict[str, Any]) -> str:
        """ "; waited 2.0 min in 3 pauses (1 ban), finished at 15/60s, 1 at a time" when it applies."""
        if limiter is None or (limiter.paused_total <= 0 and limiter.requests == limiter.base_requests):
            return ""
        bans = int(stats.get(statkeys.BANS, 0))
        ban = f" ({counted(bans, 'ban')})" if bans else ""
        return (
            f"; waited {format_duration(limiter.waited())} in {counted(limiter.pauses, 'pause')}{ban}, "
            f"finished at {limiter.budget}, {limiter.concurrency} at a time"
        )
