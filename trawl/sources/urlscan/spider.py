"""The urlscan spider: its settings, its requests, and what each answer leads to.

The query and paging are :mod:`.paging`'s, the keys and rate-limit waits
:mod:`.rotation`'s, the reading of results :mod:`.results`'; this class puts
them together and holds every attribute the source has.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

import scrapy
from scrapy.http import Response
from twisted.python.failure import Failure

from trawl.common import statkeys
from trawl.common.stopping import Abandoned
from trawl.politeness.ratelimit import OWN_RATE_LIMITS
from trawl.politeness.retryrule import backoff_retry
from trawl.settings_checks import Setting, seconds, whole
from trawl.sources.base import SourceSpider
from trawl.sources.urlscan.paging import MAX_PAGE_SIZE, Paging
from trawl.sources.urlscan.results import Results
from trawl.sources.urlscan.rotation import KeyRotation, WaitTooLong


class UrlscanSpider(Paging, KeyRotation, Results, SourceSpider):
    """Every URL urlscan.io's public scans saw for a domain."""

    name = "urlscan"
    default_rate_limit = "120/60s"
    default_download_timeout = 30
    # A search page is URLSCAN_PAGE_SIZE (10,000) results of ~2 KB of JSON (measured on a
    # recorded answer: 1,850 bytes a result): about 20 MB; pages come one after the other.
    default_download_maxsize = 64 << 20
    default_download_warnsize = 32 << 20
    base_url_setting = "URLSCAN_BASE_URL"
    default_base_url = "https://urlscan.io"
    api_key_setting = "URLSCAN_API_KEY"
    api_key_required = False
    settings_declared = {
        "URLSCAN_PAGE_SIZE": Setting(
            MAX_PAGE_SIZE,
            whole(1, MAX_PAGE_SIZE),
            "results per search request: urlscan's maximum, 10000 (waymore's too), up to 100 times "
            "fewer requests than its default of 100; a plan that refuses a size (HTTP 400) gets the same "
            "page asked a step smaller, 1000 then 100 (urlscan.paging says why)",
        ),
        "URLSCAN_MAX_WAIT": Setting(
            3600,
            seconds(0, maximum=86400 * 7, whole=True),
            "longest wait for a rate-limited key's reset (seconds), at most a week: urlscan's longest "
            "quota window is a day, and a key reset weekly is not worth a crawl that waits",
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
        #: Sizes a plan refused (HTTP 400), the first refusal's message, and whether the
        #: size kept was logged (once a page came at a smaller size).
        self.sizes_refused: list[int] = []
        self.size_refusal = ""
        self.size_logged = False

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

    async def _resend(
        self, response: Response, *, throttled: int | None = None, size: int | None = None
    ) -> scrapy.Request | None:
        """The same page again (same ``search_after``): nothing skipped, nothing read twice."""
        meta = response.meta
        return await self._search(
            page=meta["page"],
            search_after=meta["search_after"],
            size=meta["size"] if size is None else size,
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
        if status == 400:
            smaller = self._size_refused(response)
            if smaller is not None:
                request = await self._resend(response, size=smaller)
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
        self.crawler.stats.inc_value(statkeys.PAGES)
        if response.meta["counting"]:
            self._report_estimate(data)
            return
        self._log_size_kept(response.meta["size"])
        results = [r for r in data["results"] if isinstance(r, dict)]
        batch = self._batch(results, page)
        if batch is not None:
            yield batch
        if page == 1:
            self._note_total(data, len(results), response.meta["size"])
        self.results_read += len(results)
        request = await self._next_page(data, results, response)
        if request is not None:
            yield request

    def on_search_error(self, failure: Failure) -> Iterator[scrapy.Request]:
        """Unreachable upstream: retried like Scrapy would (``dont_retry`` also stops it)."""
        if failure.check(Abandoned):
            return  # not sent, the crawl is stopping: nothing to retry
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
