"""The Wayback Machine's CDX API (and any CDX server: pywb, OutbackCDX mirrors).

One ``showNumPages`` request, then every page at once (Scrapy's scheduler
spreads them over ``CONCURRENT_REQUESTS_PER_DOMAIN``). The page count is only
a hint: the Internet Archive answers it with HTTP 400 at times and ignores
filters when counting, so when it fails, or when the last counted page still
has rows, the spider walks on page by page until a page comes back empty. A
page that filters emptied is told apart from the real end by one unfiltered
``limit=1`` probe of the same page.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

import scrapy
from scrapy.http import Response

from trawl.cdx import (
    Dialect,
    ParsedPage,
    filter_params,
    fl_fields,
    fl_param,
    is_blocked,
    parse_page,
    parse_page_count,
)
from trawl.errors import TrawlUsageError
from trawl.items import CaptureBatch
from trawl.spiders.base import SourceSpider


class WaybackSpider(SourceSpider):
    """Every URL a CDX server knows for a domain (and its subdomains)."""

    name = "wayback"
    base_url_setting = "WAYBACK_BASE_URL"

    dialect: Dialect
    dialect_forced: bool
    cdx_url: str
    page_size: int

    def configure(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        super().configure(settings, arguments)
        path = str(settings.get("WAYBACK_CDX_PATH") or "/cdx/search/cdx")
        self.cdx_url = self.base_url + "/" + path.lstrip("/")
        forced = str(settings.get("WAYBACK_DIALECT") or "auto").lower()
        if forced not in ("auto", "ia", "pywb"):
            raise TrawlUsageError(f"WAYBACK_DIALECT must be auto, ia or pywb, got {forced!r}")
        self.dialect_forced = forced != "auto"
        self.dialect = Dialect(forced) if self.dialect_forced else Dialect.IA
        try:
            self.page_size = int(settings.get("WAYBACK_PAGE_SIZE") or 0)
        except (TypeError, ValueError):
            raise TrawlUsageError("WAYBACK_PAGE_SIZE must be a whole number") from None
        self.page_requests = 0
        self.limit_logged = False

    # --- requests --------------------------------------------------------------------------

    def query(self, *, filtered: bool = True, count: bool = False) -> list[tuple[str, str]]:
        target = self.target
        pattern = f"*.{target.domain}/*" if target.include_subdomains else f"{target.domain}/*"
        params: list[tuple[str, str]] = [("url", pattern)]
        if not count:
            # IA: plain text (one split per page, no JSON to decode; its fields
            # cannot hold spaces). pywb: NDJSON, the form its fl= names work in.
            if self.dialect is Dialect.PYWB:
                params.append(("output", "json"))
            params.append(("fl", fl_param(self.dialect)))
            if filtered:
                params += filter_params(self.filters, self.dialect)
        if self.filters.from_date:
            params.append(("from", self.filters.from_date))
        if self.filters.to_date:
            params.append(("to", self.filters.to_date))
        if self.dialect is Dialect.PYWB and not count:
            # pywb answers a query whose filters leave nothing with fuzzy,
            # unfiltered matches unless told not to.
            params.append(("allowFuzzy", "false"))
        if self.page_size:
            params.append(("pageSize", str(self.page_size)))
        return params

    def _request(self, params: list[tuple[str, str]], callback: Any, **meta: Any) -> scrapy.Request:
        meta["handle_httpstatus_all"] = True
        return scrapy.Request(
            f"{self.cdx_url}?{urlencode(params)}",
            callback=callback,
            errback=self.on_request_error,
            meta=meta,
        )

    def count_request(self) -> scrapy.Request:
        params = self.query(count=True) + [("showNumPages", "true")]
        return self._request(params, self.parse_count, priority_hint="count")

    def page_request(self, page: int, *, walk: bool = False) -> scrapy.Request | None:
        if self.limit_requests and self.page_requests >= self.limit_requests:
            if not self.limit_logged:
                self.limit_logged = True
                self.logger.warning(
                    "wayback: stopping at limit_requests=%d page requests; the results are partial",
                    self.limit_requests,
                )
                self.crawler.stats.set_value("trawl/limited", True)
            return None
        self.page_requests += 1
        params = self.query() + [("page", str(page))]
        return self._request(
            params, self.parse_cdx_page, page=page, walk=walk, fields=fl_fields(self.dialect)
        )

    def probe_request(self, page: int) -> scrapy.Request:
        params = self.query(filtered=False) + [("limit", "1"), ("page", str(page))]
        return self._request(params, self.parse_probe, page=page, fields=fl_fields(self.dialect))

    async def start(self) -> AsyncIterator[Any]:
        self.log_target()
        yield self.count_request()

    # --- callbacks -------------------------------------------------------------------------

    def _blocked(self, response: Response) -> bool:
        headers = b"\n".join(k + b": " + b", ".join(v) for k, v in response.headers.items())
        if is_blocked(response.status, headers, response.body):
            self.record_blocked(
                f"the archive blocks {self.target.domain} (Blocked Site Error): "
                "it holds captures it will not list; this is not an empty result"
            )
            return True
        return False

    def parse_count(self, response: Response) -> Iterator[Any]:
        if self._blocked(response):
            return
        count = parse_page_count(response.body) if response.status == 200 else None
        unpaged = (
            parse_page(response.body, fl_fields(self.dialect))
            if count is None and response.status == 200
            else None
        )
        if unpaged is not None and unpaged.rows:
            # pywb over a plain (non-ZipNum) index answers showNumPages with every
            # row and ignores page=: one unpaged request gets it all, filtered.
            self.logger.info("wayback: the server does not page this index; one request")
            self._note_dialect(unpaged)
            self.page_requests += 1
            yield self._request(
                self.query(), self.parse_cdx_page, page=0, walk=False, fields=fl_fields(self.dialect)
            )
            return
        if count is None:
            self.logger.warning(
                "wayback: the server gave no page count (HTTP %d); paging until an empty page",
                response.status,
            )
            self.crawler.stats.set_value("trawl/page_count_failed", response.status)
            request = self.page_request(0, walk=True)
            if request is not None:
                yield request
            return
        if not self.dialect_forced:
            self.dialect = count.dialect
        pages = count.pages
        self.crawler.stats.set_value("trawl/pages_total", pages)
        self.logger.info(
            "wayback: %d CDX page(s) for %s (%s server)",
            pages,
            self.target.domain,
            self.dialect.value,
        )
        if pages == 0:
            # Zero is a hint too: one request confirms the domain has nothing.
            pages = 1
        for page in range(pages):
            request = self.page_request(page, walk=page == pages - 1)
            if request is None:
                break
            yield request

    def parse_cdx_page(self, response: Response) -> Iterator[Any]:
        page: int = response.meta["page"]
        walk: bool = response.meta.get("walk", False)
        if self._blocked(response):
            return
        if response.status != 200:
            if walk and response.status == 400 and page > 0:
                return  # past the last page, the way IA's paged index says it
            self.record_error("http", "HTTP %d for CDX page %d", response.status, page)
            return
        if self.looks_like_html(response):
            self.record_error("html", "CDX page %d: the server sent an HTML page instead of CDX data", page)
            return
        if walk and self._repeats_previous_page(page, response.body):
            self.logger.warning("wayback: the server ignores page=; stopping at page %d", page)
            return
        parsed = parse_page(response.body, response.meta.get("fields"))
        self._note_dialect(parsed)
        stats = self.crawler.stats
        if parsed.bad_lines and not response.meta.get("refetched"):
            # A cut-off or garbled page is most often a transfer that went wrong:
            # fetch it once more before settling for what could be read.
            stats.inc_value("trawl/pages_refetched")
            yield response.request.replace(dont_filter=True, meta={**response.meta, "refetched": True})
            return
        stats.inc_value("trawl/pages")
        if parsed.bad_lines:
            stats.inc_value("trawl/bad_lines", parsed.bad_lines)
            if parsed.rows:
                self.logger.warning(
                    "wayback: CDX page %d: skipped %d unreadable line(s)", page, parsed.bad_lines
                )
            else:
                self.record_error(
                    "malformed",
                    "CDX page %d: unreadable answer (%d bad line(s))",
                    page,
                    parsed.bad_lines,
                )
        if parsed.rows:
            yield self._batch(parsed, page)
        if not walk:
            return
        if parsed.rows or parsed.bad_lines:
            request = self.page_request(page + 1, walk=True)
            if request is not None:
                yield request
        elif self.filters.server_codes[0] or self.filters.server_mimes[0]:
            yield self.probe_request(page)

    def parse_probe(self, response: Response) -> Iterator[Any]:
        """Was the empty page the end, or did filters empty it?"""
        page: int = response.meta["page"]
        if response.status != 200 or self.looks_like_html(response):
            return
        if parse_page(response.body, response.meta.get("fields")).rows:
            request = self.page_request(page + 1, walk=True)
            if request is not None:
                yield request

    def _repeats_previous_page(self, page: int, body: bytes) -> bool:
        """A server that ignores ``page=`` would make walking never end."""
        digest = hash(body)
        previous = getattr(self, "_last_walk_page", None)
        repeated = (
            bool(body.strip()) and previous is not None and previous[0] == page - 1 and previous[1] == digest
        )
        self._last_walk_page = (page, digest)
        return repeated

    def _note_dialect(self, parsed: ParsedPage) -> None:
        if parsed.dialect and parsed.dialect is not self.dialect and not self.dialect_forced:
            self.logger.info("wayback: the server speaks the %s dialect", parsed.dialect.value)
            self.dialect = parsed.dialect

    def _batch(self, parsed: ParsedPage, page: int) -> CaptureBatch:
        columns = parsed.columns
        statuses = columns.get("statuses")
        if statuses is not None and "-" in statuses:
            # Revisit records carry "-": no status of their own.
            statuses = ["" if s == "-" else s for s in statuses]
        return CaptureBatch(
            source=self.name,
            urls=columns.get("urls", []),
            timestamps=columns.get("timestamps"),
            statuses=statuses,
            mimes=columns.get("mimes"),
            digests=columns.get("digests"),
            lengths=columns.get("lengths"),
            page=f"page={page}",
        )
