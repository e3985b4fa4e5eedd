"""Intelligence X phonebook: the URLs IntelX has seen under a domain (API key required).

A run is one search and its result pages, as the IntelX SDK does it:

1. ``POST {base}/phonebook/search`` with ``{"term": "<domain>", "target": 3, ...}``
   (target 3 = URLs) and the key in the ``X-Key`` header; the answer is
   ``{"id": "<uuid>", "status": 0}`` (status 1: invalid term, 2: too many
   concurrent searches).
2. ``GET {base}/phonebook/search/result?id=<uuid>&limit=<n>&offset=-1`` again
   and again: each call returns the next chunk, ``{"selectors": [...], "status": s}``
   with ``s`` 0 (results, ask again), 1 (no more results), 2 (search id not
   found) or 3 (not ready yet: ask again after ``INTELX_POLL_INTERVAL`` seconds,
   without blocking the reactor).

``INTELX_BASE_URL`` (``https://2.intelx.io``, paid plans) refuses free keys
with 401/403: the search is then sent once to ``INTELX_FALLBACK_BASE_URL``
(``https://free.intelx.io``) and the run stays there, as waymore does. 402 means
the key is out of credits. ``selectorvalue`` values are URLs, sometimes without
a scheme (the normalizer reads those as ``http://``); values masked with
``█`` (IntelX's Academia plan hides parts of selectors) are not URLs and are
counted, not stored.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

import orjson
import scrapy
from scrapy.http import JsonRequest, Response

from trawl.common import statkeys
from trawl.records.batches import CaptureBatch
from trawl.settings_checks import Setting, http_url, seconds, whole
from trawl.sources.base import SourceSpider

#: phonebook ``target``: 1 domains, 2 emails, 3 URLs.
TARGET_URLS = 3
MASK_CHARACTER = "█"
PRIMARY, FALLBACK = "primary", "fallback"

SEARCH_STATUS = {1: "invalid term", 2: "too many concurrent searches"}


class IntelxSpider(SourceSpider):
    """URLs under a domain from the Intelligence X phonebook."""

    name = "intelx"
    default_rate_limit = "1/1s"
    default_download_timeout = 30
    # A result page is INTELX_PAGE_SIZE (1,000) selectors of ~300 bytes of JSON: about 300 KB;
    # 16 MiB holds a page size of 50,000 (a larger one needs SOURCE_DOWNLOAD_MAXSIZE too).
    default_download_maxsize = 16 << 20
    default_download_warnsize = 4 << 20
    base_url_setting = "INTELX_BASE_URL"
    default_base_url = "https://2.intelx.io"
    api_key_setting = "INTELX_API_KEY"
    api_key_required = True
    settings_declared = {
        "INTELX_FALLBACK_BASE_URL": Setting(
            "https://free.intelx.io",
            http_url(optional=True),
            "the free tier, tried when the paid one refuses a key",
        ),
        "INTELX_MAX_RESULTS": Setting(10000, whole(1), '"maxresults" of the phonebook search'),
        "INTELX_PAGE_SIZE": Setting(
            1000, whole(1), '"limit" of each result request (the IntelX SDK\'s; no documented maximum)'
        ),
        "INTELX_SEARCH_TIMEOUT": Setting(
            5,
            seconds(0, maximum=300, whole=True),
            '"timeout" of the search (seconds, IntelX side), at most 300: IntelX\'s SDK sends 5',
        ),
        "INTELX_POLL_INTERVAL": Setting(
            2.0,
            seconds(0, maximum=60),
            'seconds between result requests while "not ready yet", at most 60 (INTELX_MAX_POLLS, 30, '
            "of them is already half an hour)",
        ),
        "INTELX_MAX_POLLS": Setting(30, whole(1), '"not ready yet" answers in a row before the run gives up'),
    }

    fallback_url: str

    def configure(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        super().configure(settings, arguments)
        self.fallback_url = str(self.setting(settings, "INTELX_FALLBACK_BASE_URL") or "").strip().rstrip("/")
        self.max_results = int(self.setting(settings, "INTELX_MAX_RESULTS"))
        self.page_size = int(self.setting(settings, "INTELX_PAGE_SIZE"))
        self.search_timeout = int(self.setting(settings, "INTELX_SEARCH_TIMEOUT"))
        self.poll_interval = float(self.setting(settings, "INTELX_POLL_INTERVAL"))
        self.max_polls = int(self.setting(settings, "INTELX_MAX_POLLS"))
        self.bases = {PRIMARY: self.base_url, FALLBACK: self.fallback_url}
        self.page_requests = 0
        self.selectors_read = 0

    async def start(self) -> AsyncIterator[Any]:
        self.log_target()
        if self.should_skip():
            return
        key = self.keys.next_key()
        if key is None:
            return
        if self.check_only:
            yield self.info_request(key, PRIMARY)
        else:
            yield self.search_request(key, PRIMARY)

    # --- requests --------------------------------------------------------------------------

    def _meta(self, key: str, base: str, **extra: Any) -> dict[str, Any]:
        return {
            "handle_httpstatus_all": True,
            # The callbacks say it in one ERROR line when retries run out.
            "key_index": self.keys.keys.index(key),
            "base": base,
            **extra,
        }

    def search_request(self, key: str, base: str) -> scrapy.Request:
        body = {
            "term": self.target.domain,
            "buckets": [],
            "lookuplevel": 0,
            "maxresults": self.max_results,
            "timeout": self.search_timeout,
            "datefrom": "",
            "dateto": "",
            "sort": 4,
            "media": 0,
            "terminate": [],
            "target": TARGET_URLS,
        }
        return JsonRequest(
            f"{self.bases[base]}/phonebook/search",
            data=body,
            headers={"X-Key": key},
            callback=self.parse_search,
            errback=self.on_request_error,
            dont_filter=True,
            meta=self._meta(key, base),
        )

    def result_request(
        self, key: str, base: str, search_id: str, page: int, polls: int = 0
    ) -> scrapy.Request:
        query = urlencode([("id", search_id), ("limit", str(self.page_size)), ("offset", "-1")])
        return scrapy.Request(
            f"{self.bases[base]}/phonebook/search/result?{query}",
            headers={"X-Key": key},
            callback=self.parse_results,
            errback=self.on_request_error,
            dont_filter=True,  # the same URL answers the next chunk each time
            meta=self._meta(key, base, search_id=search_id, page=page, polls=polls),
        )

    def info_request(self, key: str, base: str) -> scrapy.Request:
        """check_only: the account's credits; costs none."""
        return scrapy.Request(
            f"{self.bases[base]}/authenticate/info",
            headers={"X-Key": key},
            callback=self.parse_info,
            errback=self.on_request_error,
            dont_filter=True,
            meta=self._meta(key, base),
        )

    def next_page_request(self, response: Response, search_id: str, page: int) -> scrapy.Request | None:
        if not self.take_request():
            return None
        meta = response.meta
        key = self.keys.keys[meta["key_index"]]
        return self.result_request(key, meta["base"], search_id, page)

    # --- callbacks -------------------------------------------------------------------------

    def parse_search(self, response: Response) -> Iterator[Any]:
        refusal = self._refusal(response, self.search_request)
        if refusal is not None:
            yield from refusal
            return
        answer = self._read_json(response, "search")
        if isinstance(answer, scrapy.Request):  # an unreadable body, asked for again
            yield answer
            return
        if answer is None:
            return
        status = answer.get("status")
        search_id = answer.get("id")
        if status in SEARCH_STATUS:
            self.record_error(
                "api",
                "IntelX did not start the search for %s (status %s: %s)",
                self.target.domain,
                status,
                SEARCH_STATUS[status],
            )
            return
        if status != 0 or not isinstance(search_id, str) or not search_id:
            self.record_error("malformed", "unexpected search answer (status %r, id %r)", status, search_id)
            return
        request = self.next_page_request(response, search_id, 1)
        if request is not None:
            yield request

    async def parse_results(self, response: Response) -> AsyncIterator[Any]:
        if self._refusal(response, None) is not None:
            return
        page: int = response.meta["page"]
        answer = self._read_json(response, f"result page {page}")
        if isinstance(answer, scrapy.Request):  # an unreadable body, asked for again
            yield answer
            return
        if answer is None:
            return
        status = answer.get("status")
        if status == 3:
            retry = await self._poll_again(response)
            if retry is not None:
                yield retry
            return
        if status == 2:
            self.record_error(
                "api", "IntelX lost the search (status 2: search id not found) at page %d", page
            )
            return
        if status not in (0, 1):
            self.record_error("malformed", "result page %d: unknown status %r", page, status)
            return
        stats = self.crawler.stats
        stats.inc_value(statkeys.PAGES)
        batch, count = self._batch(answer.get("selectors"), page)
        if batch.urls:
            yield batch
        if status == 1 or not count:
            # 1: no more results. An empty chunk with status 0 ends it too (as waymore stops).
            stats.set_value(statkeys.PAGES_TOTAL, page)
            self.logger.info(
                "%s: %d selector(s) in %d result page(s) for %s",
                self.name,
                self.selectors_read,
                page,
                self.target.domain,
            )
            return
        request = self.next_page_request(response, response.meta["search_id"], page + 1)
        if request is not None:
            yield request

    def parse_info(self, response: Response) -> Iterator[Any]:
        """check_only: how many phonebook credits the key has, and what a run would cost."""
        refusal = self._refusal(response, self.info_request)
        if refusal is not None:
            yield from refusal
            return
        info = self._read_json(response, "account information")
        if isinstance(info, scrapy.Request):  # an unreadable body, asked for again
            yield info
            return
        if info is None:
            return
        key = self.keys.keys[response.meta["key_index"]]
        paths = info.get("paths")
        phonebook = paths.get("/phonebook/search") if isinstance(paths, dict) else None
        if isinstance(phonebook, dict):
            credit, credit_max = phonebook.get("Credit"), phonebook.get("CreditMax")
            self.crawler.stats.set_value(statkeys.INTELX_CREDITS, credit)
            self.logger.info(
                "%s: %s at %s: %s of %s phonebook search credit(s) left",
                self.name,
                self.keys.label(key),
                response.meta["base"],
                credit,
                credit_max,
            )
            if credit == 0:
                self.logger.warning(
                    "%s: no phonebook search credit left: a run now would get HTTP 402", self.name
                )
        # One search, its result pages, and the answer that says there are no more.
        self.report_estimate(2 + math.ceil(self.max_results / self.page_size))

    # --- helpers ---------------------------------------------------------------------------

    def _refusal(
        self, response: Response, again: Callable[[str, str], scrapy.Request] | None
    ) -> list[scrapy.Request] | None:
        """``None`` for a 200; else what to do instead: one error line, or the request
        sent once more to the fallback base (401/403 from the primary one)."""
        status = response.status
        if status == 200:
            return None
        meta = response.meta
        key = self.keys.keys[meta["key_index"]]
        label = self.keys.label(key)
        if status in (401, 403):
            if again is not None and meta["base"] == PRIMARY and self.fallback_url:
                self.logger.info(
                    "%s: %s refused %s (HTTP %d); trying %s",
                    self.name,
                    self.base_url,
                    label,
                    status,
                    self.fallback_url,
                )
                self.crawler.stats.set_value(statkeys.INTELX_BASE, FALLBACK)
                return [again(key, FALLBACK)]
            self.record_error(
                "bad_key",
                "IntelX refused %s (HTTP %d: wrong key, or no access to this API); check %s",
                label,
                status,
                self.api_key_setting,
            )
        elif status == 402:
            self.record_error(
                "no_credits",
                "IntelX: %s is out of phonebook search credits (HTTP 402); they renew daily",
                label,
            )
        elif status == 429:
            self.record_error(
                "rate_limited", "rate limited (HTTP 429) after %s retries", self.settings.get("RETRY_TIMES")
            )
        else:
            self.record_error("http", "HTTP %d from %s", status, self.describe_url(response.url))
        return []

    def _read_json(self, response: Response, what: str) -> dict[str, Any] | scrapy.Request | None:
        """The JSON object; the request again if the body does not parse; or ``None`` after one error line."""
        if self.reject_html(response, what, "JSON", sender="IntelX"):
            return None
        try:
            answer = orjson.loads(response.body)
        except orjson.JSONDecodeError as exc:
            return self.retry_bad_body(response, "%s: unreadable answer (%s)", what, exc)
        if not isinstance(answer, dict):
            self.record_error("malformed", "%s: unreadable answer (a JSON %s)", what, type(answer).__name__)
            return None
        return answer

    async def _poll_again(self, response: Response) -> scrapy.Request | None:
        """Status 3: the search is still running. Ask again later, a bounded number of times."""
        meta = response.meta
        polls = meta["polls"] + 1
        self.crawler.stats.inc_value(statkeys.INTELX_POLLS)
        if polls > self.max_polls:
            self.record_error(
                "timeout", "IntelX had no results ready after %d polls (status 3 each time)", self.max_polls
            )
            return None
        await self.wait(self.poll_interval)
        key = self.keys.keys[meta["key_index"]]
        return self.result_request(key, meta["base"], meta["search_id"], meta["page"], polls)

    def _batch(self, selectors: object, page: int) -> tuple[CaptureBatch, int]:
        """The URLs of one chunk, and how many selectors it held."""
        if not isinstance(selectors, list):
            selectors = []
        urls: list[str] = []
        masked = 0
        for selector in selectors:
            if not isinstance(selector, dict):
                continue
            value = selector.get("selectorvalue") or selector.get("selectorvalueh")
            if not isinstance(value, str) or not value.strip():
                continue
            if MASK_CHARACTER in value:
                masked += 1
                continue
            urls.append(value.strip())
        self.selectors_read += len(selectors)
        if masked:
            self.crawler.stats.inc_value(statkeys.INTELX_MASKED, masked)
            self.logger.warning(
                "%s: page %d: %d value(s) masked with %s by the plan of the key; not stored",
                self.name,
                page,
                masked,
                MASK_CHARACTER,
            )
        return CaptureBatch.from_columns(source=self.name, urls=urls, page=f"page={page}"), len(selectors)
