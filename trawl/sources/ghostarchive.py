"""GhostArchive: the URLs ghostarchive.org holds archives of, from its HTML search pages.

GhostArchive has no API. Like waymore, the spider reads
``GET {GHOSTARCHIVE_BASE_URL}/search?term=<term>&page=<n>`` with the cookie
``theme=original`` (the plain markup), one page after the other:

* the term is ``.example.com`` when the domain has exactly one dot (a leading
  dot keeps the substring search from matching ``notexample.com``), otherwise
  the bare domain; neighbours the substring search still returns are left to
  the scope filter;
* every anchor whose href is ``/archive/<id>`` (relative or absolute, anywhere
  on the page) is one archive: the archived URL is the link text, with a
  ``web.archive.org/web/<timestamp>/`` prefix removed (archives of Wayback
  pages);
* paging starts at ``page=0`` (waymore's first request); the next page is the
  one the "Next Page" link points to, so 0- and 1-based numbering both work;
  the walk stops when there is no such link, on "No archives for that site",
  on "The site is under maintenance and will be back soon" (an error: the
  archive could not be read), or when a page holds only archives already read:
  GhostArchive serves page 1 again past its last page;
* "out of N" gives the total: pages when it reads "Page X out of N", archives
  when it reads "Showing X to Y out of N" (pages = N / rows per page).

The HTML layout has not been seen in a recording: the parser only relies on
the anchors, the "Next Page" link and the texts above.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.selector import Selector

from trawl.common import statkeys
from trawl.records.batches import CaptureBatch
from trawl.sources.base import SourceSpider

NO_ARCHIVES = "No archives for that site"
MAINTENANCE = "The site is under maintenance and will be back soon"
ARCHIVE_PATH = "/archive/"
# An archived Wayback page: the URL after web.archive.org/web/<timestamp><flags>/ is the real one.
_WAYBACK_PREFIX = re.compile(r"^(?:https?://)?(?:web\.)?archive\.org/web/[0-9]{1,14}[a-z_]*/", re.IGNORECASE)
_NEXT_LINK = "//a[contains(normalize-space(.), 'Next Page') or normalize-space(.)='»']"


def search_term(domain: str) -> str:
    """``.example.com`` for a registrable-looking name with one dot, else the name itself."""
    return f".{domain}" if domain.count(".") == 1 else domain


def archived_url(text: str) -> str | None:
    """The URL a result link names, or ``None`` if its text is not a URL."""
    text = text.strip()
    if not text or any(ch.isspace() for ch in text) or "." not in text:
        return None
    return _WAYBACK_PREFIX.sub("", text, count=1)


def archive_links(selector: Selector) -> list[tuple[str, str]]:
    """``(archive id, archived URL)`` of every result link on a page, in page order."""
    links: list[tuple[str, str]] = []
    for anchor in selector.xpath("//a[@href]"):
        path = urlsplit(anchor.attrib.get("href", "")).path
        if not path.startswith(ARCHIVE_PATH):
            continue
        archive_id = path[len(ARCHIVE_PATH) :].strip("/")
        url = archived_url(anchor.xpath("normalize-space(.)").get() or "")
        if archive_id and url:
            links.append((archive_id, url))
    return links


def next_page(selector: Selector, current: int) -> int | None:
    """The page the "Next Page" link points to; ``None`` without one."""
    href = selector.xpath(_NEXT_LINK + "/@href").get()
    if href is None:
        return None
    values = parse_qs(urlsplit(href).query).get("page")
    try:
        target = int(values[0]) if values else current + 1
    except ValueError:
        target = current + 1
    return target if target > current else current + 1


def total_pages(selector: Selector, rows: int) -> int | None:
    """Pages in the whole result, from "Page X out of N" or "Showing X to Y out of N"."""
    text = " ".join(selector.xpath("//body//text()[contains(., 'out of')]").getall())
    pages = re.search(r"Page\s+\d+\s+out of\s+(\d+)", text)
    if pages:
        return int(pages.group(1))
    archives = re.search(r"out of\s+(\d+)", text)
    if archives and rows:
        return math.ceil(int(archives.group(1)) / rows)
    return None


class GhostarchiveSpider(SourceSpider):
    """URLs archived on ghostarchive.org under a domain (no key)."""

    name = "ghostarchive"
    default_rate_limit = "30/60s"
    default_download_timeout = 60
    # A search page is HTML listing a few dozen archived pages: tens of KB.
    default_download_maxsize = 8 << 20
    default_download_warnsize = 2 << 20
    base_url_setting = "GHOSTARCHIVE_BASE_URL"
    default_base_url = "https://ghostarchive.org"
    #: waymore's first page; see the module docstring for how the next ones are found.
    first_page = 0

    def configure(self, settings: Any, arguments: Any) -> None:
        super().configure(settings, arguments)
        self.term = search_term(self.target.domain)
        self.seen_ids: set[str] = set()
        self.page_requests = 0
        self.pages_read = 0

    async def start(self) -> AsyncIterator[Any]:
        self.log_target()
        if self.should_skip():
            return
        request = self.page_request(self.first_page)
        if request is not None:
            yield request

    def page_request(self, page: int) -> scrapy.Request | None:
        if not self.take_request():
            return None
        query = urlencode([("term", self.term), ("page", str(page))])
        return scrapy.Request(
            f"{self.base_url}/search?{query}",
            # The cookie as a plain header, outside Scrapy's cookie jar: the jar
            # would look the host up in the public suffix list, which tldextract
            # fetches from publicsuffix.org the first time.
            headers={"Cookie": "theme=original"},
            callback=self.parse_page,
            errback=self.on_request_error,
            meta={
                "dont_merge_cookies": True,
                "handle_httpstatus_all": True,
                # The callback says it in one ERROR line when retries run out.
                "page": page,
            },
        )

    def parse_page(self, response: Response) -> Iterator[Any]:
        page: int = response.meta["page"]
        first = self.pages_read == 0
        if isinstance(response, TextResponse):
            text, selector = response.text, response.selector
        else:  # no Content-Type: still read it as the HTML it should be
            text = response.body.decode("utf-8", "replace")
            selector = Selector(text=text)
        if MAINTENANCE in text:
            self.record_error("maintenance", "GhostArchive is under maintenance (page %d); try later", page)
            return
        if response.status != 200:
            self.record_error("http", "HTTP %d for search page %d", response.status, page)
            return
        stats = self.crawler.stats
        if NO_ARCHIVES in text:
            stats.inc_value(statkeys.PAGES)
            self.pages_read += 1
            if first:
                self.logger.info("%s: no archives for %r", self.name, self.term)
                if self.check_only:
                    self.report_estimate(1)
            return
        links = archive_links(selector)
        if not links:
            if first:
                self.record_error(
                    "layout",
                    "search page %d has no /archive/ links and no %r notice: has the layout changed?",
                    page,
                    NO_ARCHIVES,
                )
            else:
                self.logger.warning("%s: search page %d has no archive links; stopping", self.name, page)
            return
        new_ids = {archive_id for archive_id, _ in links} - self.seen_ids
        if not new_ids:
            self.logger.info(
                "%s: page %d repeats archives already read (GhostArchive starts over past the end); done",
                self.name,
                page,
            )
            return
        self.seen_ids |= new_ids
        self.pages_read += 1
        stats.inc_value(statkeys.PAGES)
        if first:
            pages = self._note_total(selector, len(links))
            if self.check_only:
                self._estimate(pages, selector, page)
                return
        yield CaptureBatch.from_columns(source=self.name, urls=[url for _, url in links], page=f"page={page}")
        following = next_page(selector, page)
        if following is None:
            return
        request = self.page_request(following)
        if request is not None:
            yield request

    def _note_total(self, selector: Selector, rows: int) -> int | None:
        pages = total_pages(selector, rows)
        if pages is not None:
            self.crawler.stats.set_value(statkeys.PAGES_TOTAL, pages)
            self.logger.info("%s: %d search page(s) for %r", self.name, pages, self.term)
        return pages

    def _estimate(self, pages: int | None, selector: Selector, page: int) -> None:
        """check_only: the first page is the counting request."""
        if pages is not None:
            self.report_estimate(max(pages, 1))
        elif next_page(selector, page) is None:
            self.report_estimate(1)
        else:
            self.crawler.stats.set_value(statkeys.ESTIMATE_UNKNOWN, True)
