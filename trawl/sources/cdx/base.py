"""What every CDX-server source shares: counting pages, paging, walking, parsing.

The Wayback Machine, Common Crawl's index server and private pywb or
OutbackCDX archives all speak the CDX API in one of two dialects (see
``trawl.sources.cdx.parse``). A spider here queries one or more *endpoints* (Common Crawl has
one per crawl index); per endpoint it sends one ``showNumPages`` request, then
every page at once (Scrapy's scheduler spreads them over
``CONCURRENT_REQUESTS_PER_DOMAIN``).

The page count is only a hint: the Internet Archive answers it with HTTP 400
at times and ignores filters when counting, so when it fails, or when the last
counted page still has rows, the spider walks on page by page until a page
comes back empty. A page that filters emptied is told apart from the real end
by one unfiltered ``limit=1`` probe of the same page.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlencode

import polars as pl
import scrapy
from scrapy.http import Response

from trawl.common import statkeys
from trawl.errors import TrawlUsageError
from trawl.records.batches import CaptureBatch
from trawl.settings_checks import read
from trawl.sources.base import SourceSpider
from trawl.sources.cdx.parse import (
    Dialect,
    ParsedPage,
    filter_params,
    fl_fields,
    fl_param,
    is_blocked,
    parse_page,
    parse_page_count,
)

NO_CAPTURES = b"no captures found"
#: The meta key of the endpoint a request of a spreadable source carries (:meth:`Endpoint.spec`).
ENDPOINT_SPEC = "cdx_endpoint"
#: The meta key of the endpoint's page count as its sender knew it (a spreadable source's requests).
PAGES_KNOWN = "cdx_pages_total"


@dataclass
class Endpoint:
    """One CDX API URL and what the spider learned about it."""

    url: str
    label: str
    dialect: Dialect
    dialect_forced: bool = False
    pages_total: int | None = None
    last_walk: tuple[int, int] | None = None  # (page, body hash) of the last walked page
    named: bool | None = None  #: its pages named by its label in the ledger (``None``: if there are several)

    def spec(self) -> list[Any]:
        """What a request carries so that another worker's spider knows the endpoint (a spread run)."""
        return [self.url, self.label, self.dialect.value, self.dialect_forced, self.named]


class CdxSpider(SourceSpider):
    """Base of the CDX-server sources. Subclasses provide :meth:`start`."""

    #: Setting naming the dialect (``auto``, ``ia`` or ``pywb``), if the source has one.
    dialect_setting: ClassVar[str] = ""
    #: Setting naming the ``pageSize`` to send (0: the server's default).
    page_size_setting: ClassVar[str] = ""

    endpoints: list[Endpoint]
    page_size: int
    #: A CDX page past the end is an empty body: not a sign of a banned proxy.
    empty_answers_are_data: ClassVar[bool] = True

    def configure(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        super().configure(settings, arguments)
        self.endpoints = []
        self.page_size = 0
        if self.page_size_setting:
            try:
                self.page_size = int(read(settings, self.declared_settings(), self.page_size_setting) or 0)
            except (TypeError, ValueError):
                raise TrawlUsageError(f"{self.page_size_setting} must be a whole number") from None
        self.page_requests = 0
        self.limit_logged = False

    def read_dialect(self, settings: Mapping[str, Any]) -> tuple[Dialect, bool]:
        forced = str(read(settings, self.declared_settings(), self.dialect_setting) or "auto").lower()
        if forced not in ("auto", "ia", "pywb"):
            raise TrawlUsageError(f"{self.dialect_setting} must be auto, ia or pywb, got {forced!r}")
        if forced == "auto":
            return Dialect.IA, False
        return Dialect(forced), True

    def add_endpoint(self, url: str, label: str, dialect: Dialect, forced: bool) -> int:
        self.endpoints.append(Endpoint(url, label, dialect, forced))
        return len(self.endpoints) - 1

    # --- requests --------------------------------------------------------------------------

    def query(
        self, endpoint: Endpoint, *, filtered: bool = True, count: bool = False
    ) -> list[tuple[str, str]]:
        target = self.target
        pattern = f"*.{target.domain}/*" if target.include_subdomains else f"{target.domain}/*"
        params: list[tuple[str, str]] = [("url", pattern)]
        dialect = endpoint.dialect
        if not count:
            # IA: plain text (one split per page, no JSON to decode; its fields
            # cannot hold spaces). pywb: NDJSON, the form its fl= names work in.
            if dialect is Dialect.PYWB:
                params.append(("output", "json"))
            params.append(("fl", fl_param(dialect)))
            if filtered:
                params += filter_params(self.filters, dialect)
        if self.filters.from_date:
            params.append(("from", self.filters.from_date))
        if self.filters.to_date:
            params.append(("to", self.filters.to_date))
        if dialect is Dialect.PYWB and not count:
            # pywb answers a query whose filters leave nothing with fuzzy,
            # unfiltered matches unless told not to.
            params.append(("allowFuzzy", "false"))
        if self.page_size:
            params.append(("pageSize", str(self.page_size)))
        return params

    def _request(
        self, index: int, params: list[tuple[str, str]], callback: Any, **meta: Any
    ) -> scrapy.Request:
        meta["handle_httpstatus_all"] = True
        meta["endpoint"] = index
        if self.spreadable:  # any worker's spider may answer it: the endpoint travels with it
            meta[ENDPOINT_SPEC] = self.endpoints[index].spec()
            meta[PAGES_KNOWN] = self.endpoints[index].pages_total
        return scrapy.Request(
            f"{self.endpoints[index].url}?{urlencode(params)}",
            callback=callback,
            errback=self.on_request_error,
            meta=meta,
        )

    def count_request(self, index: int) -> scrapy.Request:
        params = self.query(self.endpoints[index], count=True) + [("showNumPages", "true")]
        return self._request(index, params, self.parse_count)

    def endpoint_of(self, response: Response) -> int:
        """This spider's index of the response's endpoint, learnt from the request's meta if need be:
        in a spread run another worker's spider may have built it (Common Crawl's, from collinfo.json).

        Its page count too (:data:`PAGES_KNOWN`): only the spider that read ``showNumPages`` knew
        it, so another worker's spider that fetched the empty page walked past the count took it
        for a page (a spread run of 60 pages said 61 or 60, by who fetched page 60). The larger of
        this spider's count and the request's: a walk raises it on whichever worker reads a page.
        """
        meta = response.meta
        index: int = meta["endpoint"]
        spec = meta.get(ENDPOINT_SPEC)
        if spec is None:
            return index
        url, label, dialect, forced, named = spec
        if not (index < len(self.endpoints) and self.endpoints[index].label == label):
            found = [n for n, endpoint in enumerate(self.endpoints) if endpoint.label == label]
            index = found[0] if found else self.add_endpoint(url, label, Dialect(dialect), bool(forced))
            self.endpoints[index].named = named
            meta["endpoint"] = index
        known = meta.get(PAGES_KNOWN)
        endpoint = self.endpoints[index]
        if known is not None and (endpoint.pages_total is None or known > endpoint.pages_total):
            endpoint.pages_total = known
        return index

    def page_key(self, index: int, page: int) -> str:
        """How a page is named in batches and in the store's page ledger."""
        named = self.endpoints[index].named
        if named if named is not None else len(self.endpoints) > 1:
            return f"{self.endpoints[index].label} page={page}"
        return f"page={page}"

    def done_rows(self, index: int, page: int) -> int | None:
        """Rows of a page this run stored before it was stopped, or ``None``."""
        return self.page_done(self.page_key(index, page))

    def page_request(self, index: int, page: int, *, walk: bool = False) -> scrapy.Request | None:
        """The request for a page, or ``None`` if the limit is reached or a resumed
        run stored it already (walking on past it when it had rows)."""
        while (rows := self.done_rows(index, page)) is not None:
            if not walk or rows == 0:
                return None
            page += 1
        if not self.take_request():
            return None
        endpoint = self.endpoints[index]
        params = self.query(endpoint) + [("page", str(page))]
        return self._request(
            index,
            params,
            self.parse_cdx_page,
            page=page,
            walk=walk,
            fields=fl_fields(endpoint.dialect),
        )

    def probe_request(self, index: int, page: int) -> scrapy.Request:
        endpoint = self.endpoints[index]
        params = self.query(endpoint, filtered=False) + [("limit", "1"), ("page", str(page))]
        return self._request(index, params, self.parse_probe, page=page, fields=fl_fields(endpoint.dialect))

    # --- callbacks -------------------------------------------------------------------------

    def where(self, response: Response) -> str:
        """Names the endpoint in log lines when there is more than one."""
        if len(self.endpoints) < 2:
            return ""
        return f" ({self.endpoints[self.endpoint_of(response)].label})"

    def _blocked(self, response: Response) -> bool:
        headers = b"\n".join(k + b": " + b", ".join(v) for k, v in response.headers.items())
        if is_blocked(response.status, headers, response.body):
            self.record_blocked(
                f"the archive blocks {self.target.domain} (Blocked Site Error): "
                "it holds captures it will not list; this is not an empty result"
            )
            return True
        return False

    @staticmethod
    def _no_captures(response: Response) -> bool:
        """pywb's 404 ``{"message": "No Captures found for: ..."}``: empty, not an error."""
        return response.status == 404 and NO_CAPTURES in response.body[:512].lower()

    def parse_count(self, response: Response) -> Iterator[Any]:
        index = self.endpoint_of(response)
        endpoint = self.endpoints[index]
        if self._blocked(response):
            return
        if self._no_captures(response):
            endpoint.pages_total = 0
            return
        count = parse_page_count(response.body) if response.status == 200 else None
        unpaged = parse_page(response.body, None) if count is None and response.status == 200 else None
        if unpaged is not None and unpaged.rows:
            # pywb over a plain (non-ZipNum) index answers showNumPages with every
            # row and ignores page=: one unpaged request gets it all, filtered.
            self.logger.info("%s: the server does not page this index; one request", self.name)
            self._note_dialect(endpoint, unpaged)
            if self.done_rows(index, 0) is not None:
                return
            self.page_requests += 1
            yield self._request(
                index,
                self.query(endpoint),
                self.parse_cdx_page,
                page=0,
                walk=False,
                fields=fl_fields(endpoint.dialect),
            )
            return
        if self.check_only:
            if count is None:
                self.crawler.stats.set_value(statkeys.ESTIMATE_UNKNOWN, True)
            else:
                self.report_estimate(max(count.pages, 1))
            return
        if count is None:
            self.logger.warning(
                "%s: the server gave no page count (HTTP %d)%s; paging until an empty page",
                self.name,
                response.status,
                self.where(response),
            )
            self.crawler.stats.set_value(statkeys.PAGE_COUNT_FAILED, response.status)
            request = self.page_request(index, 0, walk=True)
            if request is not None:
                yield request
            return
        if not endpoint.dialect_forced:
            endpoint.dialect = count.dialect
        pages = count.pages
        endpoint.pages_total = pages
        self.crawler.stats.inc_value(statkeys.PAGES_TOTAL, pages)
        self.logger.info(
            "%s: %d CDX page(s) for %s%s (%s server)",
            self.name,
            pages,
            self.target.domain,
            self.where(response),
            endpoint.dialect.value,
        )
        if pages == 0:
            # Zero is a hint too: one request confirms the domain has nothing.
            pages = 1
        for page in range(pages):
            request = self.page_request(index, page, walk=page == pages - 1)
            if request is not None:
                yield request
            elif self.limit_logged:
                break  # the request limit, not a page stored before

    def parse_cdx_page(self, response: Response) -> Iterator[Any]:
        index = self.endpoint_of(response)
        endpoint = self.endpoints[index]
        page: int = response.meta["page"]
        walk: bool = response.meta.get("walk", False)
        if self._blocked(response):
            return
        if self._no_captures(response):
            self._count_page(endpoint, page, empty=True)
            yield self._batch(ParsedPage(), index, page)
            return
        if response.status != 200:
            if walk and response.status == 400 and page > 0:
                return  # past the last page, the way a paged index says it
            self.record_error(
                "http", "HTTP %d for CDX page %d%s", response.status, page, self.where(response)
            )
            return
        if self.reject_html(response, f"CDX page {page}{self.where(response)}", "CDX data"):
            return
        if walk and self._repeats_previous_page(endpoint, page, response.body):
            self.logger.warning("%s: the server ignores page=; stopping at page %d", self.name, page)
            return
        parsed = parse_page(response.body, response.meta.get("fields"))
        self._note_dialect(endpoint, parsed)
        stats = self.crawler.stats
        if parsed.bad_lines:
            # Lines that do not split are most often a transfer that went wrong:
            # retried like a 5xx; once the retries are spent, what could be read is kept.
            where = f"CDX page {page}{self.where(response)}"
            if parsed.rows:
                lines = parsed.rows + parsed.bad_lines
                message = f"{where}: {parsed.bad_lines} unreadable line(s) of {lines}"
            else:
                message = f"{where}: unreadable answer ({parsed.bad_lines} bad line(s))"
            retry = self.retry_bad_body(response, message)
            if retry is not None:
                yield retry
                return
            stats.inc_value(statkeys.BAD_LINES, parsed.bad_lines)
        if parsed.undecodable_lines:  # said once, when the source closes (Source.closed)
            stats.inc_value(statkeys.UNDECODABLE_LINES, parsed.undecodable_lines)
        self._count_page(endpoint, page, empty=not (parsed.rows or parsed.bad_lines))
        # Also an empty page: the store records it in the page ledger (resume).
        yield self._batch(parsed, index, page)
        if not walk:
            return
        if parsed.rows or parsed.bad_lines:
            request = self.page_request(index, page + 1, walk=True)
            if request is not None:
                yield request
        elif self.filters.server_codes[0] or self.filters.server_mimes[0]:
            yield self.probe_request(index, page)

    def _count_page(self, endpoint: Endpoint, page: int, empty: bool) -> None:
        """One more page read, shown against the server's count (``pages 6/6``).

        The last counted page is walked past (``showNumPages`` runs behind a
        growing index), and that page was counted too: progress said ``pages
        7/6``. An empty page past the count is the end of
        the walk, not a page; one with rows is, and raises the count (pages
        are numbered from 0: page ``n`` makes it at least ``n + 1``).
        """
        stats = self.crawler.stats
        total = endpoint.pages_total
        if total is not None and page >= total:
            if empty:
                return
            stats.inc_value(statkeys.PAGES_TOTAL, page + 1 - total)
            endpoint.pages_total = page + 1
        stats.inc_value(statkeys.PAGES)

    def parse_probe(self, response: Response) -> Iterator[Any]:
        """Was the empty page the end, or did filters empty it?"""
        index = self.endpoint_of(response)
        page: int = response.meta["page"]
        if response.status != 200 or self.looks_like_html(response):
            return
        if parse_page(response.body, response.meta.get("fields")).rows:
            request = self.page_request(index, page + 1, walk=True)
            if request is not None:
                yield request

    @staticmethod
    def _repeats_previous_page(endpoint: Endpoint, page: int, body: bytes) -> bool:
        """A server that ignores ``page=`` would make walking never end."""
        digest = hash(body)
        previous = endpoint.last_walk
        endpoint.last_walk = (page, digest)
        return (
            bool(body.strip()) and previous is not None and previous[0] == page - 1 and previous[1] == digest
        )

    def _note_dialect(self, endpoint: Endpoint, parsed: ParsedPage) -> None:
        if parsed.dialect and parsed.dialect is not endpoint.dialect and not endpoint.dialect_forced:
            self.logger.info("%s: the server speaks the %s dialect", self.name, parsed.dialect.value)
            endpoint.dialect = parsed.dialect

    def _batch(self, parsed: ParsedPage, index: int, page: int) -> CaptureBatch:
        frame = parsed.frame
        if frame.width == 0:
            frame = CaptureBatch.empty_frame()
        missing = [c for c in CaptureBatch.SCHEMA if c not in frame.columns]
        if missing:
            frame = frame.with_columns(pl.lit(None, dtype=pl.String).alias(c) for c in missing)
        # Revisit records carry "-": no status of their own. One select: each polars call on
        # the reactor's thread waits for the GIL again when another thread holds it.
        status = pl.col("status")
        revisit = pl.when(status == "-").then(pl.lit("")).otherwise(status).alias("status")
        frame = frame.select(revisit if name == "status" else pl.col(name) for name in CaptureBatch.SCHEMA)
        return CaptureBatch(self.name, frame, self.page_key(index, page), parsed.rows + parsed.bad_lines)
