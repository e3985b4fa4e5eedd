"""urlscan.io search: the pages scans of a domain landed on, and the URLs they were asked for.

``/api/v1/search/?q=domain:<d>&size=<n>`` answers ``results`` (newest first),
``total`` and ``has_more``; the next page is asked for with ``search_after``,
the ``sort`` values of the last result, comma-joined.

The paging rule is not the obvious one: ``total`` is capped at 10,000 and
``has_more`` only says "more than ``total``", so ``has_more: false`` arrives
on full pages that are far from the end (gau stops there and gets one page).
The spider keeps asking while a page is full, or while it has read fewer
results than ``total`` (a plan may serve fewer than ``size``), and stops on a
short page or an empty one.

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

import calendar
import math
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from datetime import date, timedelta
from typing import Any
from urllib.parse import urlencode

import orjson
import scrapy
from scrapy.http import Response
from twisted.python.failure import Failure

from trawl.politeness.ratelimit import OWN_RATE_LIMITS
from trawl.politeness.retryhints import resume_time
from trawl.politeness.retryrule import backoff_retry
from trawl.records.batches import CaptureBatch
from trawl.records.timestamps import iso_timestamp
from trawl.settings_checks import Setting, text, whole
from trawl.sources.base import SourceSpider, json_error_text

#: ``total`` never says more than this; ``has_more`` then means "more than that".
TOTAL_CAP = 10_000
MAX_PAGE_SIZE = 10_000
#: Rest of a rate-limited key when urlscan says nothing about its reset.
DEFAULT_REST = 60.0
#: Request meta: this spider handles 429 itself (per key); the source must not pause.


class WaitTooLong(Exception):
    """Every key rests for longer than ``URLSCAN_MAX_WAIT``: stop rather than wait."""


def query_date(value: str, *, end: bool) -> str:
    """A ``YYYY[MM[DD...]]`` bound as ``YYYY-MM-DD`` for urlscan's ``date:[A TO B]``.

    An end bound becomes the day *after* the last day it covers: Elasticsearch
    reads ``2020-12-31`` as midnight, so an inclusive ``TO 2020-12-31`` would
    miss that whole day. The extra instant is dropped by the client-side date
    filter.
    """
    year = int(value[:4])
    month = int(value[4:6]) if len(value) >= 6 else (12 if end else 1)
    if len(value) >= 8:
        day = int(value[6:8])
    else:
        day = calendar.monthrange(year, month)[1] if end else 1
    bound = date(year, month, min(day, calendar.monthrange(year, month)[1]))
    if end:
        bound += timedelta(days=1)
    return bound.isoformat()


def sort_value(value: object) -> str:
    """One ``sort`` value as ``search_after`` wants it (``1675117496569``, not ``1.67e12``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def reset_delay(response: Response, now: float) -> float:
    """Seconds until a rate-limited key may be used again, from whatever urlscan said
    (``X-Rate-Limit-Reset-After``, ``X-Rate-Limit-Reset``, ``Retry-After`` or
    "Reset in N seconds" in the body: trawl.politeness.retryhints), else a minute."""
    hint = resume_time(response, now)
    return max(hint[0] - now, 0.0) if hint is not None else DEFAULT_REST


class UrlscanSpider(SourceSpider):
    """Every URL urlscan.io's public scans saw for a domain."""

    name = "urlscan"
    default_rate_limit = "120/60s"
    default_download_timeout = 30
    base_url_setting = "URLSCAN_BASE_URL"
    default_base_url = "https://urlscan.io"
    api_key_setting = "URLSCAN_API_KEY"
    api_key_required = False
    settings_declared = {
        "URLSCAN_API_KEYS": Setting("", text, "several API keys, comma-separated (a key ring)"),
        "URLSCAN_PAGE_SIZE": Setting(100, whole(1, MAX_PAGE_SIZE), "results per search request"),
        "URLSCAN_MAX_WAIT": Setting(
            3600, whole(0, 86400 * 7), "longest wait for a rate-limited key's reset (seconds)"
        ),
    }

    page_size: int
    max_wait: float

    def configure(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        super().configure(settings, arguments)
        self.page_size = int(self.setting(settings, "URLSCAN_PAGE_SIZE"))
        self.max_wait = float(int(self.setting(settings, "URLSCAN_MAX_WAIT")))
        self.page_requests = 0
        self.limit_logged = False
        self.results_read = 0
        #: When the public (keyless) quota of this IP resets, if it ran out.
        self.anonymous_rest = 0.0
        self.all_keys_refused = False

    @property
    def query(self) -> str:
        clauses = [f"domain:{self.target.domain}"]
        filters = self.filters
        if filters.from_date or filters.to_date:
            low = query_date(filters.from_date, end=False) if filters.from_date else "*"
            high = query_date(filters.to_date, end=True) if filters.to_date else "*"
            clauses.append(f"date:[{low} TO {high}]")
        return " AND ".join(clauses)

    async def start(self) -> AsyncIterator[Any]:
        self.log_target()
        if self.should_skip():
            return
        if self.check_only:
            request = await self._search(page=1, search_after=None, size=1, counting=True)
        else:
            request = await self._data_request(page=1, search_after=None)
        if request is not None:
            yield request

    # --- requests ----------------------------------------------------------------------

    async def _data_request(self, *, page: int, search_after: str | None) -> scrapy.Request | None:
        """A page request, counted against ``limit_requests`` (re-sends are not)."""
        if not self.take_request():
            return None
        return await self._search(page=page, search_after=search_after, size=self.page_size)

    async def _search(
        self,
        *,
        page: int,
        search_after: str | None,
        size: int,
        counting: bool = False,
        throttled: int = 0,
    ) -> scrapy.Request | None:
        """The search request for a page, with the next key that is not resting.

        Waits (without blocking) when every key rests; ``None`` if the wait
        would be longer than ``URLSCAN_MAX_WAIT``.
        """
        try:
            key = await self._usable_key()
        except WaitTooLong:
            return None
        params = [("q", self.query), ("size", str(size))]
        if search_after is not None:
            params.append(("search_after", search_after))
        headers = {"API-Key": key} if key else {}
        return scrapy.Request(
            f"{self.base_url}/api/v1/search/?{urlencode(params)}",
            headers=headers,
            callback=self.parse_search,
            errback=self.on_search_error,
            dont_filter=True,
            meta={
                "page": page,
                "search_after": search_after,
                "size": size,
                "counting": counting,
                "throttled": throttled,
                # The key's position, never its value.
                "key_index": self.keys.keys.index(key) if key else None,
                "handle_httpstatus_all": True,
                # 429 must not be re-sent with the same key: the spider retries itself.
                "dont_retry": True,
                # ... nor pause the whole source: one key resting leaves the others
                # usable (honoured by trawl.politeness.ratelimit once it reads it).
                OWN_RATE_LIMITS: True,
            },
        )

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
            self.crawler.stats.inc_value("trawl/rate_limit_waits")
            await self.wait(wait)

    async def _resend(self, response: Response, *, throttled: int | None = None) -> scrapy.Request | None:
        meta = response.meta
        return await self._search(
            page=meta["page"],
            search_after=meta["search_after"],
            size=meta["size"],
            counting=meta["counting"],
            throttled=meta["throttled"] if throttled is None else throttled,
        )

    # --- answers -----------------------------------------------------------------------

    async def parse_search(self, response: Response) -> AsyncIterator[Any]:
        status = response.status
        page: int = response.meta["page"]
        if status == 429:
            request = await self._rate_limited(response)
            if request is not None:
                yield request
            return
        if status in (401, 403) and response.meta["key_index"] is not None:
            self._refused(response)
            request = await self._resend(response)
            if request is not None:
                yield request
            return
        if status >= 500 or status == 408:
            retry = self._retry(response.request, f"HTTP {status}")
            if retry is not None:
                yield retry
            else:
                self.record_error("http", "HTTP %d for search page %d (after retries)", status, page)
            return
        data = self._read(response, page)
        if isinstance(data, scrapy.Request):  # an unreadable body, asked for again
            yield data
            return
        if data is None:
            return
        self.crawler.stats.inc_value("trawl/pages")
        if response.meta["counting"]:
            self._report_estimate(data)
            return
        results = [r for r in data["results"] if isinstance(r, dict)]
        batch = self._batch(results, page)
        if batch is not None:
            yield batch
        if page == 1:
            self._note_total(data)
        self.results_read += len(results)
        request = await self._next_page(data, results, response)
        if request is not None:
            yield request

    def _read(self, response: Response, page: int) -> dict[str, Any] | scrapy.Request | None:
        """The JSON object of a 200 answer; the request again if its body does not parse;
        or ``None`` after one error line."""
        status = response.status
        if self.reject_html(response, f"search page {page}", "JSON"):
            return None
        if status != 200:
            message = json_error_text(response.body, ("message", "description"))
            self.record_error(
                "http", "HTTP %d for search page %d%s", status, page, f": {message}" if message else ""
            )
            return None
        try:
            data = orjson.loads(response.body)
        except ValueError:
            return self.retry_bad_body(
                response, "search page %d: unreadable JSON (%d bytes)", page, len(response.body)
            )
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            self.record_error("malformed", "search page %d: a JSON answer without results", page)
            return None
        return data

    async def _rate_limited(self, response: Response) -> scrapy.Request | None:
        """Rest the key (or the keyless quota) until its reset; send again with the next one."""
        now = time.time()
        delay = reset_delay(response, now)
        throttled = response.meta["throttled"] + 1
        key_index = response.meta["key_index"]
        stats = self.crawler.stats
        stats.inc_value("trawl/rate_limited")
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
        self.crawler.stats.inc_value("trawl/keys_dropped")
        if not self.keys.usable and not self.all_keys_refused:
            self.all_keys_refused = True
            self.record_error(
                "bad_key",
                "every API key was refused; going on without a key (the public quota): check %sS",
                self.api_key_setting,
            )

    def on_search_error(self, failure: Failure) -> Iterator[scrapy.Request]:
        """Unreachable upstream: retried like Scrapy would (``dont_retry`` also stops it)."""
        request: scrapy.Request = failure.request  # type: ignore[attr-defined]
        retry = self._retry(request, failure.type.__name__ if failure.type else "error")
        if retry is not None:
            yield retry
            return
        self.on_request_error(failure)

    def _retry(self, request: scrapy.Request, reason: str) -> scrapy.Request | None:
        """trawl's retry (budget, backoff: trawl.politeness.retryrule), minus Scrapy's give-up ERROR
        line: the spider's own error line says what failed, once."""
        return backoff_retry(self.crawler, request, reason)

    # --- records -----------------------------------------------------------------------

    def _batch(self, results: list[dict[str, Any]], page: int) -> CaptureBatch | None:
        """Per scan: the page it landed on, the URL it was asked for, and the page's PTR host."""
        urls: list[str] = []
        timestamps: list[str] = []
        statuses: list[str] = []
        mimes: list[str] = []

        seen: set[str] = set()  # per scan: its task URL is often its page URL

        def add(url: object, timestamp: str, status: str = "", mime: str = "") -> None:
            if isinstance(url, str) and url and url not in seen:
                seen.add(url)
                urls.append(url)
                timestamps.append(timestamp)
                statuses.append(status)
                mimes.append(mime)

        for result in results:
            task = result.get("task") if isinstance(result.get("task"), dict) else {}
            landed = result.get("page") if isinstance(result.get("page"), dict) else {}
            timestamp = iso_timestamp(task.get("time"))
            status = landed.get("status")
            mime = landed.get("mimeType")
            seen.clear()
            add(
                landed.get("url"),
                timestamp,
                str(status) if isinstance(status, (str, int)) and not isinstance(status, bool) else "",
                mime if isinstance(mime, str) else "",
            )
            # The submitted URL: the status and mime above are the landing page's, not its own.
            add(task.get("url"), timestamp)
            ptr = landed.get("ptr")
            if isinstance(ptr, str) and ptr:
                add(f"http://{ptr}", timestamp)
        if not urls:
            return None
        return CaptureBatch.from_columns(
            source=self.name,
            urls=urls,
            timestamps=timestamps,
            statuses=statuses,
            mimes=mimes,
            page=f"page={page}",
        )

    # --- paging ------------------------------------------------------------------------

    @staticmethod
    def _total(data: dict[str, Any]) -> int | None:
        total = data.get("total")
        return total if isinstance(total, int) and not isinstance(total, bool) and total >= 0 else None

    def _note_total(self, data: dict[str, Any]) -> None:
        total = self._total(data)
        if total is None:
            return
        capped = total >= TOTAL_CAP or data.get("has_more") is True
        if not capped:
            self.crawler.stats.set_value("trawl/pages_total", max(1, math.ceil(total / self.page_size)))
        self.logger.info(
            "%s: %s%d scan(s) for %s (%s)",
            self.name,
            "at least " if capped else "",
            total,
            self.target.domain,
            self.query,
        )

    async def _next_page(
        self, data: dict[str, Any], results: list[dict[str, Any]], response: Response
    ) -> scrapy.Request | None:
        """Ask on while a page is full (``has_more: false`` included) or ``total`` is not reached."""
        if not results:
            return None
        size: int = response.meta["size"]
        total = self._total(data)
        more = (
            len(results) >= size
            or (total is not None and self.results_read < min(total, TOTAL_CAP))
            or data.get("has_more") is True
        )
        if not more:
            return None
        sort = results[-1].get("sort")
        if not isinstance(sort, list) or not sort:
            self.record_error(
                "malformed",
                "search page %d: the last result has no sort values; cannot ask for the next page",
                response.meta["page"],
            )
            return None
        search_after = ",".join(sort_value(v) for v in sort)
        if search_after == response.meta["search_after"]:
            self.logger.warning(
                "%s: the server ignores search_after (page %d repeats the last one); stopping",
                self.name,
                response.meta["page"],
            )
            return None
        return await self._data_request(page=response.meta["page"] + 1, search_after=search_after)

    def _report_estimate(self, data: dict[str, Any]) -> None:
        total = self._total(data)
        if total is None:
            self.crawler.stats.set_value("trawl/estimate/unknown", True)
            self.logger.info(
                "%s: check only: no total in the answer; the number of requests is unknown", self.name
            )
            return
        capped = total >= TOTAL_CAP or data.get("has_more") is True
        requests = max(1, math.ceil(min(total, TOTAL_CAP) / self.page_size))
        self.report_estimate(requests)
        if capped:
            self.crawler.stats.set_value("trawl/estimate/at_least", True)
        self.logger.info(
            "%s: check only: %s%d scan(s) for %s: %s%d request(s) of %d",
            self.name,
            "at least " if capped else "",
            total,
            self.target.domain,
            "at least " if capped else "",
            requests,
            self.page_size,
        )
