"""urlscan's API keys in turn, and the wait when every key (or the public quota) rests.

Keys (``URLSCAN_API_KEYS=k1,k2`` or ``URLSCAN_API_KEY``) are optional: without
one the public per-IP quota applies. Several keys are used in turn. A key that
hits its limit (429) rests until the reset urlscan announces and the request
goes out again with the next key; when every key rests, the retry waits for
the first one to wake, without blocking the reactor: the callback is a
coroutine that awaits a ``deferLater`` (other requests, the progress line and
shutdown carry on meanwhile). A key urlscan refuses (401/403) is dropped for
the run with one warning that names it by position.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import scrapy
from scrapy.http import Response

from trawl.common import statkeys
from trawl.politeness.retryhints import resume_time
from trawl.sources.errortext import json_error_text

#: Rest of a rate-limited key when urlscan says nothing about its reset.
DEFAULT_REST = 60.0

if TYPE_CHECKING:
    from trawl.sources.base import SourceSpider

    _Base = SourceSpider  # a part of UrlscanSpider: its target, keys, logger, stats and error lines
else:
    _Base = object


class WaitTooLong(Exception):
    """Every key rests for longer than ``URLSCAN_MAX_WAIT``: stop rather than wait."""


def reset_delay(response: Response, now: float) -> float:
    """Seconds until a rate-limited key may be used again, from whatever urlscan said
    (``X-Rate-Limit-Reset-After``, ``X-Rate-Limit-Reset``, ``Retry-After`` or
    "Reset in N seconds" in the body: trawl.politeness.retryhints), else a minute."""
    hint = resume_time(response, now)
    return max(hint[0] - now, 0.0) if hint is not None else DEFAULT_REST


class KeyRotation(_Base):
    """The key of each request, and what a 429 or a refused key does (part of :class:`UrlscanSpider`)."""

    async def _usable_key(self) -> str | None:
        """The next key not resting (``None``: no key left, the public quota).

        Raises :class:`WaitTooLong` after one error line when the wait would
        exceed ``URLSCAN_MAX_WAIT``.
        """
        while True:
            now = time.time()
            if self.keys.usable:
                key = self.keys.next_key(now)
                if key is not None:
                    return key
                wake = self.keys.wake_time() or now
                who = "every API key is"
            else:
                if self.anonymous_rest <= now:
                    return None
                wake = self.anonymous_rest
                who = "the public (keyless) quota is"
            wait = wake - now
            if wait > self.max_wait:
                self.record_error(
                    "rate_limited",
                    "%s rate limited for another %.0f s, longer than URLSCAN_MAX_WAIT=%.0f s; "
                    "stopping, the results are partial",
                    who,
                    wait,
                    self.max_wait,
                )
                raise WaitTooLong
            self.logger.warning("%s: %s rate limited; waiting %.1f s for the reset", self.name, who, wait)
            self.crawler.stats.inc_value(statkeys.RATE_LIMIT_WAITS)
            if not await self.wait(wait):
                raise WaitTooLong  # the crawl is stopping: no key will be waited for

    async def _rate_limited(self, response: Response) -> scrapy.Request | None:
        """Rest the key (or the keyless quota) until its reset; send again with the next one."""
        now = time.time()
        delay = reset_delay(response, now)
        throttled = response.meta["throttled"] + 1
        key_index = response.meta["key_index"]
        stats = self.crawler.stats
        stats.inc_value(statkeys.RATE_LIMITED)
        if key_index is not None:
            key = self.keys.keys[key_index]
            self.keys.rest(key, now + delay)
            who = self.keys.label(key)
        else:
            self.anonymous_rest = max(self.anonymous_rest, now + delay)
            who = "the public (keyless) quota"
        self.logger.info(
            "%s: %s hit its rate limit (%s window); resting %.0f s",
            self.name,
            who,
            response.headers.get(b"X-Rate-Limit-Window", b"?").decode("latin-1"),
            delay,
        )
        # Each key may be limited once per page, plus RETRY_TIMES more: a server that
        # keeps answering 429 after its own reset is not waited for forever.
        allowed = max(len(self.keys.usable), 1) + self.settings.getint("RETRY_TIMES", 0)
        if throttled > allowed:
            message = json_error_text(response.body, ("message", "description"))
            self.record_error(
                "rate_limited",
                "search page %d: still rate limited (HTTP 429) after %d attempts%s",
                response.meta["page"],
                throttled,
                f": {message}" if message else "",
            )
            return None
        return await self._resend(response, throttled=throttled)

    def _refused(self, response: Response) -> None:
        key = self.keys.keys[response.meta["key_index"]]
        if key in self.keys.dropped:
            return
        self.keys.drop(key)
        message = json_error_text(response.body, ("message", "description"))
        self.logger.warning(
            "%s: %s was refused (HTTP %d%s); dropped for this run",
            self.name,
            self.keys.label(key),
            response.status,
            f": {message}" if message else "",
        )
        self.crawler.stats.inc_value(statkeys.KEYS_DROPPED)
        if not self.keys.usable and not self.all_keys_refused:
            self.all_keys_refused = True
            self.record_error(
                "bad_key",
                "every API key was refused; going on without a key (the public quota): check %sS",
                self.api_key_setting,
            )
