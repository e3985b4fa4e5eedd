"""AlienVault OTX: the URLs OTX's URL worker saw on a domain (``url_list``).

``/api/v1/indicators/domain/<d>/url_list`` (``hostname/<h>`` when the input is
a subdomain: the ``domain`` indicator of a subdomain is not what OTX indexes)
answers one JSON object per page: ``url_list`` (newest first), ``has_next``,
``full_size``, ``limit``, ``page_num``. The spider asks for page 1, computes
the page count from ``full_size`` and asks for every other page at once;
``full_size`` is a hint, ``has_next`` has the last word: when the last counted
page still says ``has_next``, pages are walked one by one until it stops.

A body with an ``"error"`` key is OTX's "nothing known about this indicator"
(waymore reads it so): an empty result, logged, not a failure.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson
import scrapy
from scrapy.http import Response

from trawl.common import statkeys
from trawl.records.batches import CaptureBatch
from trawl.records.timestamps import iso_timestamp
from trawl.sources.base import SourceSpider
from trawl.sources.errortext import json_error_text

#: URLs per page: the most OTX serves (waymore's author: "the maximum you can set"), and
#: what waymore asks for; no source confirms a bigger one, so it is not a setting
#: (docs/sources/otx.md, "Page size"). The ``limit`` OTX echoes is what pages are counted at.
PAGE_LIMIT = 500
#: 401/403 mean a bad key; 429 and these reach the callback after Scrapy's retries.
AUTH_STATUSES = (401, 403)


class OtxSpider(SourceSpider):
    """Every URL AlienVault OTX lists for a domain (or a host)."""

    name = "otx"
    default_rate_limit = "100/60s"
    # An API page that has not come in 30 s will not.
    default_download_timeout = 30
    # A page is PAGE_LIMIT (500) URL entries of ~400 bytes of JSON: about 200 KB.
    default_download_maxsize = 8 << 20
    default_download_warnsize = 2 << 20
    base_url_setting = "OTX_BASE_URL"
    default_base_url = "https://otx.alienvault.com"
    api_key_setting = "OTX_API_KEY"
    api_key_required = False

    @property
    def indicator(self) -> str:
        """``domain`` for a registered domain, ``hostname`` for a subdomain (as waymore)."""
        target = self.target
        return "hostname" if target.domain != target.registered_domain else "domain"

    async def start(self) -> AsyncIterator[Any]:
        self.log_target()
        if self.should_skip():
            return
        if self.check_only:
            # full_size does not depend on limit: a one-URL page is the cheap count.
            yield self._request(1, limit=1, counting=True)
            return
        request = self.page_request(1)
        if request is not None:
            yield request

    # --- requests ----------------------------------------------------------------------

    def page_request(self, page: int, *, last: bool = False, walk: bool = False) -> scrapy.Request | None:
        """A data request, counted against ``limit_requests`` (retries are not)."""
        if not self.take_request():
            return None
        return self._request(page, last=last, walk=walk)

    def _request(self, page: int, *, limit: int = PAGE_LIMIT, **meta: Any) -> scrapy.Request:
        url = (
            f"{self.base_url}/api/v1/indicators/{self.indicator}/{self.target.domain}"
            f"/url_list?limit={limit}&page={page}"
        )
        key = self.keys.next_key()
        headers = {"X-OTX-API-KEY": key} if key else {}
        meta.update(
            page=page,
            # The key's position, never its value: meta may be printed by debugging code.
            key_index=self.keys.keys.index(key) if key else None,
            handle_httpstatus_all=True,
            # Our own ERROR line says what failed; Scrapy's give-up line would be a second one.
        )
        return scrapy.Request(
            url,
            headers=headers,
            callback=self.parse_page,
            errback=self.on_request_error,
            meta=meta,
            dont_filter=True,
        )

    # --- answers -----------------------------------------------------------------------

    def parse_page(self, response: Response) -> Iterator[Any]:
        page: int = response.meta["page"]
        data = yield from self._read(response, page)
        if data is None:
            return
        stats = self.crawler.stats
        stats.inc_value(statkeys.PAGES)
        if response.meta.get("counting"):
            self._report_estimate(data)
            return
        batch = self._batch(data, page)
        if batch is not None:
            yield batch
        if page == 1 and not response.meta.get("walk"):
            yield from self._after_first_page(data)
            return
        if response.meta.get("last") or response.meta.get("walk"):
            yield from self._walk_on(data, page, bool(batch))

    def _read(self, response: Response, page: int) -> Iterator[Any]:
        """Classify an answer; return its JSON object, or ``None`` when there is no data.

        A generator (``yield from``) because a refused key means sending the
        request again without it.
        """
        status = response.status
        key_index = response.meta.get("key_index")
        if status in AUTH_STATUSES and key_index is not None:
            yield self._drop_key(response, key_index)
            return None
        if status == 429:
            retry_after = response.headers.get(b"Retry-After", b"").decode("latin-1")
            detail = json_error_text(response.body) or (f"Retry-After: {retry_after}" if retry_after else "")
            self.record_error(
                "rate_limited",
                "page %d: rate limited (HTTP 429) after %d retries%s",
                page,
                response.meta.get("retry_times", 0),
                f": {detail}" if detail else "",
            )
            return None
        if status >= 500:
            self.record_error("http", "HTTP %d for page %d (after retries)", status, page)
            return None
        if self.reject_html(response, f"page {page}", "JSON"):
            return None
        try:
            data = orjson.loads(response.body)
        except ValueError:
            if status == 200:
                retry = self.retry_bad_body(
                    response, "page %d: unreadable JSON (%d bytes)", page, len(response.body)
                )
                if retry is not None:
                    yield retry
            else:
                self.record_error("http", "HTTP %d for page %d", status, page)
            return None
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            # waymore's reading: OTX knows nothing about this indicator.
            self.logger.info(
                "%s: OTX has nothing for %s %s (HTTP %d: %s)",
                self.name,
                self.indicator,
                self.target.domain,
                status,
                data["error"][:200],
            )
            self.crawler.stats.inc_value(statkeys.PAGES)
            return None
        if status != 200:
            detail = json_error_text(response.body)
            self.record_error("http", "HTTP %d for page %d%s", status, page, f": {detail}" if detail else "")
            return None
        if not isinstance(data, dict) or not isinstance(data.get("url_list"), list):
            self.record_error("malformed", "page %d: a JSON answer without a url_list", page)
            return None
        return data

    def _drop_key(self, response: Response, key_index: int) -> scrapy.Request:
        """A refused key: say so once, forget it, ask again (with the next key or none)."""
        key = self.keys.keys[key_index]
        if key not in self.keys.dropped:
            self.keys.drop(key)
            detail = json_error_text(response.body)
            self.record_error(
                "bad_key",
                "%s was refused (HTTP %d%s); asking again without it",
                self.keys.label(key),
                response.status,
                f": {detail}" if detail else "",
            )
        meta = {k: response.meta[k] for k in ("counting", "last", "walk") if k in response.meta}
        limit = 1 if meta.get("counting") else PAGE_LIMIT
        return self._request(response.meta["page"], limit=limit, **meta)

    def _batch(self, data: dict[str, Any], page: int) -> CaptureBatch | None:
        urls: list[str] = []
        timestamps: list[str] = []
        statuses: list[str] = []
        skipped = 0
        for entry in data["url_list"]:
            url = entry.get("url") if isinstance(entry, dict) else None
            if not isinstance(url, str) or not url:
                skipped += 1
                continue
            urls.append(url)
            timestamps.append(iso_timestamp(entry.get("date")))
            code = entry.get("httpcode")
            # 0 is OTX's "the URL worker got no answer": unknown, not a status.
            statuses.append(str(code) if isinstance(code, int) and code > 0 else "")
        if skipped:
            self.crawler.stats.inc_value(statkeys.BAD_LINES, skipped)
            self.logger.warning("%s: page %d: skipped %d entry(ies) without a URL", self.name, page, skipped)
        if not urls:
            return None
        return CaptureBatch.from_columns(
            source=self.name,
            urls=urls,
            timestamps=timestamps,
            statuses=statuses,
            mimes=None,
            page=f"page={page}",
        )

    # --- paging ------------------------------------------------------------------------

    @staticmethod
    def _page_limit(data: dict[str, Any]) -> int:
        """The limit the server applied (it may serve fewer than asked for)."""
        limit = data.get("limit")
        return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else PAGE_LIMIT

    @staticmethod
    def _full_size(data: dict[str, Any]) -> int | None:
        size = data.get("full_size")
        return size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None

    def _after_first_page(self, data: dict[str, Any]) -> Iterator[scrapy.Request]:
        """Every counted page at once; walk on if page 1 is the last counted and says has_next."""
        full_size = self._full_size(data)
        has_next = data.get("has_next") is True
        if full_size is None:
            self.logger.warning("%s: no full_size in the answer; following has_next page by page", self.name)
            if has_next:
                yield from self._next_walk(2)
            return
        pages = max(1, math.ceil(full_size / self._page_limit(data)))
        self.crawler.stats.set_value(statkeys.PAGES_TOTAL, pages)
        self.logger.info(
            "%s: %d URL(s) in %d page(s) for %s %s",
            self.name,
            full_size,
            pages,
            self.indicator,
            self.target.domain,
        )
        for page in range(2, pages + 1):
            if page != pages and self.page_done(f"page={page}") is not None:
                continue  # stored by this run before it was stopped (resume)
            request = self.page_request(page, last=page == pages)
            if request is None:
                return
            yield request
        if pages == 1 and has_next and data["url_list"]:
            yield from self._next_walk(2)

    def _walk_on(self, data: dict[str, Any], page: int, had_rows: bool) -> Iterator[scrapy.Request]:
        if data.get("has_next") is not True:
            return
        if not had_rows:
            self.logger.warning("%s: page %d is empty yet says has_next; stopping there", self.name, page)
            return
        yield from self._next_walk(page + 1)

    def _next_walk(self, page: int) -> Iterator[scrapy.Request]:
        request = self.page_request(page, walk=True)
        if request is not None:
            self.crawler.stats.inc_value(statkeys.PAGES_TOTAL)
            yield request

    def _report_estimate(self, data: dict[str, Any]) -> None:
        full_size = self._full_size(data)
        if full_size is None:
            self.crawler.stats.set_value(statkeys.ESTIMATE_UNKNOWN, True)
            self.logger.info(
                "%s: check only: OTX gave no full_size; the number of requests is unknown", self.name
            )
            return
        requests = max(1, math.ceil(full_size / PAGE_LIMIT))
        self.report_estimate(requests)
        self.logger.info(
            "%s: check only: %d URL(s) for %s %s: %d request(s) of %d",
            self.name,
            full_size,
            self.indicator,
            self.target.domain,
            requests,
            PAGE_LIMIT,
        )
