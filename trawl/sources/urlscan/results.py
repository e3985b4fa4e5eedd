"""urlscan's answers: the JSON of a page, and the URLs each scan gives.

Per scan, three URLs: the page it landed on (with that page's status and mime
type), the URL it was asked for, and ``http://`` the landing host's PTR name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.http import Response

from trawl.records.batches import CaptureBatch
from trawl.records.timestamps import iso_timestamp
from trawl.sources.errortext import json_error_text
from trawl.sources.urlscan.decode import decode_page

if TYPE_CHECKING:
    from trawl.sources.base import SourceSpider

    _Base = SourceSpider  # a part of UrlscanSpider: its target, keys, logger, stats and error lines
else:
    _Base = object


class Results(_Base):
    """A page's JSON and its capture batch (part of :class:`UrlscanSpider`)."""

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
            data = decode_page(response.body)
        except ValueError:
            return self.retry_bad_body(
                response, "search page %d: unreadable JSON (%d bytes)", page, len(response.body)
            )
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            self.record_error("malformed", "search page %d: a JSON answer without results", page)
            return None
        return data

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
