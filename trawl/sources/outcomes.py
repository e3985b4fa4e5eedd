"""How a source reports what went wrong: errors, retried bad bodies, block pages, unreachable upstreams.

A mixin of :class:`trawl.sources.base.Source` (kept apart so the base class reads
as arguments, settings and budgets). Every failure a source meets ends in one
place, :meth:`Outcomes.record_error`: one ERROR line (keys masked), counted under
``trawl/errors`` and its kind, which is what makes a run partial (exit status 1)
instead of a silent "no URLs".
"""

from __future__ import annotations

from typing import Any

import scrapy
from scrapy.http import Response
from twisted.python.failure import Failure

from trawl.common import statkeys
from trawl.common.counts import counted
from trawl.common.secrets import redact
from trawl.common.stopping import Abandoned
from trawl.politeness.bans import block_reason
from trawl.politeness.bounds import bounded_failure
from trawl.politeness.retryrule import backoff_retry, retry_budget


class Outcomes:
    """Errors, retried bad bodies and block pages, for a spider with ``crawler``, ``logger``, ``name``."""

    crawler: Any
    logger: Any
    name: str

    def record_error(self, kind: str, message: str, *args: Any) -> None:
        """One ERROR line, counted; the run's exit status becomes non-zero."""
        self.logger.error(f"{self.name}: {message}", *args)
        stats = self.crawler.stats
        stats.inc_value(statkeys.ERRORS)
        stats.inc_value(statkeys.errors_of(kind))

    def retry_bad_body(self, response: Response, message: str, *args: Any) -> scrapy.Request | None:
        """An answer whose body does not parse: the request again, after the same backoff and
        within the same budget as a 5xx (trawl.politeness.retryrule), or ``None`` once that is spent,
        after one ERROR line (``...; gave up after 3 retries``): the run is partial.

        ``message`` says what could not be read (``"page 12: unreadable JSON (%d bytes)"``).
        """
        stats = self.crawler.stats
        stats.inc_value(statkeys.BAD_BODIES)
        retry = backoff_retry(self.crawler, response.request, "bad body")
        text = message % args if args else message
        if retry is not None:
            self.logger.warning(
                "%s: %s; retry %d of %d",
                self.name,
                text,
                retry.meta["retry_times"],
                retry_budget(self.crawler, retry),
            )
            return retry
        tries = response.meta.get("retry_times", 0)
        self.record_error("malformed", "%s; gave up after %s", text, counted(tries, "retry"))
        return None

    def record_blocked(self, message: str) -> None:
        self.crawler.stats.set_value(statkeys.BLOCKED, True)
        self.record_error("blocked", message)

    def on_request_error(self, failure: Failure) -> None:
        """Errback: the upstream could not be reached (after Scrapy's retries), or its
        answer was over this source's size limit, or still arriving at its timeout
        (:mod:`trawl.politeness.bounds`): one ERROR line each, the page counted as failed."""
        if failure.check(Abandoned):
            return  # not sent because the crawl is stopping: no error; a resumed run fetches it
        request = failure.request  # type: ignore[attr-defined]
        told = bounded_failure(request, failure.value)
        if told is not None:
            self.record_error(told[0], "%s", told[1])
            return
        response = getattr(failure.value, "response", None)
        if response is not None:
            self.record_error("http", "HTTP %s from %s", response.status, self.describe_url(request.url))
            return
        self.record_error(
            "unreachable",
            "cannot reach %s: %s",
            self.describe_url(request.url),
            failure.getErrorMessage() or failure.type.__name__,
        )

    def describe_url(self, url: str) -> str:
        """The URL as it may appear in a log line: any key in it masked."""
        return redact(url)

    def reject_html(
        self, response: Response, what: str, expected: str = "data", sender: str = "the server"
    ) -> bool:
        """An HTML page where ``expected`` was due: report it (blocked, HTTP error or
        HTML error page) in one line and return True; False for anything else."""
        if not self.looks_like_html(response):
            return False
        if self.report_block_page(response):
            return True
        if response.status != 200:
            self.record_error("http", "HTTP %d for %s (an HTML page)", response.status, what)
        else:
            self.record_error("html", "%s: %s sent an HTML page instead of %s", what, sender, expected)
        return True

    def report_block_page(self, response: Response) -> bool:
        """A captcha / WAF / access-denied page: blocked, not "no URLs"."""
        reason = block_reason(response) if self.looks_like_html(response) else None
        if reason is None:
            return False
        self.record_blocked(
            f"{self.describe_url(response.url)} answered with a block page ({reason}), "
            "not with data: this is not an empty result"
        )
        return True

    @staticmethod
    def looks_like_html(response: Response) -> bool:
        """An HTML page where data was expected: error pages served with 200."""
        head = response.body[:512].lstrip().lower()
        return head.startswith((b"<!doctype", b"<html", b"<head", b"<body", b"<?xml", b"<"))
