"""The search query urlscan is asked, and how its answers page.

``/api/v1/search/?q=domain:<d>&size=<n>`` answers ``results`` (newest first),
``total`` and ``has_more``; the next page is asked for with ``search_after``,
the ``sort`` values of the last result, comma-joined.

The paging rule is not the obvious one: ``total`` is capped at 10,000 and
``has_more`` only says "more than ``total``", so ``has_more: false`` arrives
on full pages that are far from the end (gau stops there and gets one page).
The spider keeps asking while a page is full, or while it has read fewer
results than ``total`` (a plan may serve fewer than ``size``), and stops on a
short page or an empty one.

Page size: the spider asks for ``size=10000``, urlscan's documented maximum
(default 100, "max 10000 (depending on plan)": api-formats.md, section e), as
waymore does: up to 100 times fewer requests, and every search request counts
against the account's quota. What a plan does with a ``size`` above its own
limit is not documented anywhere we could read (docs.urlscan.io, urlscan-python,
waymore, api-formats.md). The evidence points to a short page: waymore sends
``size=10000`` with a free key and without one, handles no refusal, and notes
that the key "can change the max endpoints per page, depending on URLScan
subscription"; the paging rule above already reads such short pages to the end.
In case a plan refuses instead, the most plausible answer (HTTP 400 with
urlscan's JSON error body, ``{"message", "description", "status"}``) is handled
too: any 400 to a request asking for more than 100 is taken as the size refused,
and the *same* page (same ``search_after``) is asked again a step smaller (10000
-> 1000 -> 100), so nothing is skipped or read twice. The size kept is
remembered for the rest of the run and logged once. A query urlscan refuses at
every size (a genuine bad query) costs two extra requests (refused requests are
not counted against the quota: only HTTP 200s are) and ends, as before, in one
ERROR line quoting urlscan's message.
"""

from __future__ import annotations

import calendar
import math
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.http import Response

from trawl.common import statkeys
from trawl.sources.errortext import json_error_text

#: ``total`` never says more than this; ``has_more`` then means "more than that".
TOTAL_CAP = 10_000
#: urlscan's documented maximum ``size``, and the default asked for.
MAX_PAGE_SIZE = 10_000
#: The sizes tried, largest first, after a plan refuses a bigger one; 100 is urlscan's
#: default ``size``, served to every plan and to keyless requests.
SMALLER_SIZES = (1_000, 100)

if TYPE_CHECKING:
    from trawl.sources.base import SourceSpider

    _Base = SourceSpider  # a part of UrlscanSpider: its target, keys, logger, stats and error lines
else:
    _Base = object


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


def smaller_size(refused: int) -> int | None:
    """The next size to ask after ``refused`` was refused, or ``None`` below the last step."""
    return next((size for size in SMALLER_SIZES if size < refused), None)


def sort_value(value: object) -> str:
    """One ``sort`` value as ``search_after`` wants it (``1675117496569``, not ``1.67e12``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class Paging(_Base):
    """The query, the total, the next page, the ``check_only`` estimate (part of :class:`UrlscanSpider`)."""

    @property
    def query(self) -> str:
        clauses = [f"domain:{self.target.domain}"]
        filters = self.filters
        if filters.from_date or filters.to_date:
            low = query_date(filters.from_date, end=False) if filters.from_date else "*"
            high = query_date(filters.to_date, end=True) if filters.to_date else "*"
            clauses.append(f"date:[{low} TO {high}]")
        return " AND ".join(clauses)

    @staticmethod
    def _total(data: dict[str, Any]) -> int | None:
        total = data.get("total")
        return total if isinstance(total, int) and not isinstance(total, bool) and total >= 0 else None

    def _note_total(self, data: dict[str, Any], served: int, size: int) -> None:
        """The scan count (log line) and the page count (progress) from page 1.

        A plan that serves fewer than ``size`` serves that many a page: the pages
        are counted at what page 1 brought, not at what was asked.
        """
        total = self._total(data)
        if total is None:
            return
        capped = total >= TOTAL_CAP or data.get("has_more") is True
        per_page = served if 0 < served < min(size, total) else size
        if not capped:
            self.crawler.stats.set_value(statkeys.PAGES_TOTAL, max(1, math.ceil(total / per_page)))
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

    # --- the page size a plan accepts ---------------------------------------------------

    def _size_refused(self, response: Response) -> int | None:
        """After a 400 to a page request: the smaller size to ask the same page with, noted
        for the rest of the run; ``None`` when there is no smaller step (the 400 is then an
        error like any other)."""
        meta = response.meta
        smaller = smaller_size(meta["size"])
        if meta["counting"] or smaller is None:
            return None
        if not self.sizes_refused:
            self.size_refusal = json_error_text(response.body, ("message", "description"))
        self.sizes_refused.append(meta["size"])
        self.page_size = min(self.page_size, smaller)
        self.logger.debug("%s: size=%d refused (HTTP 400); asking %d", self.name, meta["size"], smaller)
        return smaller

    def _log_size_kept(self, size: int) -> None:
        """Once a smaller size was served: one line naming the size kept for the run."""
        if not self.sizes_refused or self.size_logged:
            return
        self.size_logged = True
        refused = " and ".join(str(s) for s in self.sizes_refused)
        why = f": {self.size_refusal}" if self.size_refusal else ""
        self.logger.info(
            "%s: the plan refused size=%s (HTTP 400%s); %d results a page for the rest of the run",
            self.name,
            refused,
            why,
            size,
        )

    def _report_estimate(self, data: dict[str, Any]) -> None:
        total = self._total(data)
        if total is None:
            self.crawler.stats.set_value(statkeys.ESTIMATE_UNKNOWN, True)
            self.logger.info(
                "%s: check only: no total in the answer; the number of requests is unknown", self.name
            )
            return
        capped = total >= TOTAL_CAP or data.get("has_more") is True
        requests = max(1, math.ceil(min(total, TOTAL_CAP) / self.page_size))
        self.report_estimate(requests)
        if capped:
            self.crawler.stats.set_value(statkeys.ESTIMATE_AT_LEAST, True)
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
