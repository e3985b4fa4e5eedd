"""Scrapy's HTTP/1.1 download handler, without Twisted's silent second try, and stoppable.

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

When the crawl is stopping (trawl.common.stopping), requests on the wire get
:data:`STOP_GRACE` seconds to be answered, then are given up (``Abandoned``:
no error; a resumed run fetches their pages): a server that accepts and never
answers kept a stopped crawl open for the whole ``DOWNLOAD_TIMEOUT``.

For the probe and the live crawl, an https request without a proxy goes over
HTTP/2 when its origin offers it (trawl.politeness.http2); all of the above
holds for it the same.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from scrapy.exceptions import DownloadCancelledError, DownloadTimeoutError
from scrapy.utils.asyncio import is_asyncio_available

from trawl.common import statkeys
from trawl.common.shallowstack import shallow_stack

with shallow_stack():  # its TLS modules' deprecated aliases: 0.15 s of CPU otherwise
    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from trawl.common.stopping import Abandoned, stopping
from trawl.politeness.bounds import BodyWatch
from trawl.politeness.http2 import Http2Route
from trawl.politeness.inflight import in_flight

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

#: Seconds requests on the wire may still take once the crawl is stopping.
STOP_GRACE = 3.0


class GatedHTTPDownloadHandler(HTTP11DownloadHandler):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._pool.retryAutomatically = False
        self._in_flight = in_flight(crawler)
        self._downloads: set[asyncio.Task[Response]] = set()
        self._given_up = False
        crawler.signals.connect(self._stopping, signal=stopping)
        self._bodies = BodyWatch(crawler)
        self._http2 = Http2Route.for_crawler(crawler)

    async def download_request(self, request: Request) -> Response:
        if self._given_up:
            raise Abandoned("not sent, the crawl is stopping")
        token = self._in_flight.start(request.url)
        watch = self._bodies.start(request)
        try:
            return await self._download(request)
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

    async def _download(self, request: Request) -> Response:
        """Scrapy's download, as a task the stop can cancel (:meth:`_give_up`)."""
        if not is_asyncio_available():
            return await self._by_protocol(request)
        download = asyncio.ensure_future(self._by_protocol(request))
        self._downloads.add(download)
        try:
            return await download
        except asyncio.CancelledError:
            if not (self._given_up and download.cancelled()):
                raise  # cancelled by someone else than the stop
            raise Abandoned("no answer before the crawl stopped") from None
        finally:
            self._downloads.discard(download)

    async def _by_protocol(self, request: Request) -> Response:
        """Over HTTP/2 if the request may take it, else Scrapy's HTTP/1.1 download."""
        if self._http2 is not None and self._http2.takes(request):
            return await self._http2.download(request, self._http11)
        return await super().download_request(request)

    async def _http11(self, request: Request) -> Response:
        return await super().download_request(request)

    async def close(self) -> None:
        if self._http2 is not None:
            await self._http2.close()
        await super().close()

    def _stopping(self, reason: str) -> None:
        from twisted.internet import reactor

        reactor.callLater(STOP_GRACE, self._give_up)  # type: ignore[attr-defined]

    def _give_up(self) -> None:
        self._given_up = True
        if self._downloads:
            self._crawler.stats.inc_value(statkeys.ABANDONED, len(self._downloads))
        for download in list(self._downloads):
            download.cancel()
