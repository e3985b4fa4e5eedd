"""Scrapy's HTTP/1.1 download handler, without Twisted's silent second try.

Twisted's connection pool re-sends a request once, on a new connection, when
a kept-alive connection fails before any answer. That second request never
passes the source's gate (trawl.politeness.gate): the server sees two requests where
trawl counted one, and a budget of 40 a second was measured at 41. Turned off,
the failure surfaces, and trawl's retry middleware sends the request again
through the gate, with its backoff.

The handler also notes every request on the wire (trawl.politeness.inflight), the one
place that knows when a request really went out, for the progress line; and it
says why a download failed where Scrapy says only "cancelled" or "took longer"
(trawl.politeness.bounds): the answer was over the source's size limit, or it
had begun and was still arriving at the timeout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.exceptions import DownloadCancelledError, DownloadTimeoutError

from trawl.politeness.bounds import BodyWatch
from trawl.politeness.inflight import in_flight

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class GatedHTTPDownloadHandler(HTTP11DownloadHandler):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._pool.retryAutomatically = False
        self._in_flight = in_flight(crawler)
        self._bodies = BodyWatch(crawler)

    async def download_request(self, request: Request) -> Response:
        token = self._in_flight.start(request.url)
        watch = self._bodies.start(request)
        try:
            return await super().download_request(request)
        except DownloadCancelledError:
            told = self._bodies.too_large(request, watch)
            if told is None:
                raise
        except DownloadTimeoutError as error:
            told = self._bodies.timed_out(error, request, watch)
            if told is error:
                raise
        finally:
            self._bodies.end(request)
            self._in_flight.end(token)
        # Out of the except blocks: Scrapy's exception, as the context of ours, would keep
        # its traceback (and what its frames hold) alive as long as the failure.
        raise told
