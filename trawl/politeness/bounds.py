"""How big and how slow an answer may be: each source's size limit, and a page still arriving.

Scrapy's 1 GiB ``DOWNLOAD_MAXSIZE`` alone is too loose a bound for an answer.
One endless chunked CDX page took a crawl to 1.17 GB of RSS, a gzip bomb the
same, and with every source hostile at once the bound was about 16 GB. Each
source now declares a limit that fits its API (``default_download_maxsize``,
:mod:`trawl.sources.limits`), which becomes its crawler's ``DOWNLOAD_MAXSIZE``.
Scrapy enforces it on the bytes received (``HTTP11DownloadHandler``) and, since
2.11, on the bytes a compressed body inflates to (``HttpCompressionMiddleware``,
64 KiB at a time, so a bomb stops at the limit, not at its full size); both are
verified by ``tests/test_bounds.py``. What this module adds is the saying:

* :class:`ResponseTooLarge`: the one exception a page over its limit fails
  with, raw or decompressed, which the source reports in one line naming
  itself, the page and the limit (:meth:`trawl.sources.base.Source.on_request_error`),
  counted as an error: the run is partial, not complete. It is not retried: the
  same page would be as large again. Scrapy's own lines about it (the whole
  request URL, twice) are dropped by :data:`SCRAPY_SIZE_LINES`;
* :class:`StillArriving`: a timeout on a page whose answer began and was
  still coming (``answer still arriving after 120 s (3,412 bytes received)``),
  told apart from a server that never answered. Retried once at most
  (:data:`SLOW_ANSWER_RETRIES`): a fresh connection cures a transfer stuck
  midway, but a server that dribbles does so every time, and four tries of
  120 s each was eight minutes spent on one page;
* the warning when a page passes the source's ``DOWNLOAD_WARNSIZE``, once, in
  trawl's words;
* a bound on the decompressed size of the answers of a source that reads a
  capped part of a body (the live crawl, the probe). Their requests set
  ``download_maxsize: 0`` in their meta, so that Scrapy does not fail a 2 GB
  ISO on its ``Content-Length`` but lets them cut it; Scrapy reads the same
  0 as "inflate without limit", and ``LIVE_MAX_BYTES`` counted the bytes on
  the wire only: a 1 MB page inflating to 1 GiB took a live crawl to 4.36 GB
  of RSS and was stored as ``page 200 text/html``, nothing said.
  Here 0 turns off the limit on the wire only: a compressed body
  still inflates at most to the setting the request names in
  ``meta[INFLATE_LIMIT]`` (``LIVE_MAX_BYTES``), else to the source's
  ``DOWNLOAD_MAXSIZE``, and fails with :class:`ResponseTooLarge` past it;
  or, for a request that also sets ``meta[INFLATE_CUT]`` (the probe, which
  keeps the first ``PROBE_MAX_BYTES`` of any body), is cut there: the response
  goes on with the first bytes it inflates to, flagged ``download_stopped``
  as a body cut on the wire is. A gzip bomb answered to the probe inflated to
  64 MiB (``DOWNLOAD_MAXSIZE``) to keep 64 KiB, and its record lost its status.

The download handler (:mod:`trawl.politeness.handler`) feeds :class:`BodyWatch`
from Scrapy's ``headers_received`` and ``bytes_received`` signals.
"""

from __future__ import annotations

import logging
import time
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import DownloadTimeoutError
from scrapy.utils._compression import _DecompressionMaxSizeExceeded

from trawl.common.counts import counted
from trawl.common.secrets import redact

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Tries after the first for a page whose answer was still arriving at the timeout.
SLOW_ANSWER_RETRIES = 1
#: request.meta key: the setting (``"LIVE_MAX_BYTES"``) that bounds what a compressed answer to
#: a request with ``download_maxsize: 0`` may inflate to (a name: the meta of a spread request
#: is pickled, and the line that says the page was cut names the setting).
INFLATE_LIMIT = "trawl_inflate_limit"
#: request.meta key: past ``INFLATE_LIMIT``, keep the first bytes (flagged ``download_stopped``)
#: rather than fail (gzip and deflate; a body in another encoding still fails).
INFLATE_CUT = "trawl_inflate_cut"
#: The setting that sets a source's limit unless the request names another.
MAXSIZE = "DOWNLOAD_MAXSIZE"


def size_text(size: int, exact: bool = False) -> str:
    """``64 MiB``, ``1.9 MiB``, ``512 bytes``: a size as a log line gives it; ``exact``: a limit
    that is no whole number of KiB or MiB in bytes (``2,000,000 bytes``), as the user set it."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            if size % (1 << shift) == 0:
                return f"{size >> shift} {unit}"
            if exact:
                break
            value = size / (1 << shift)
            return f"{value:.0f} {unit}" if value >= 10 else f"{value:.1f} {unit}"
    return f"{size:,} bytes"


def what_request(request: Request) -> str:
    """``page 3 from web.archive.org``, else the request's URL (keys masked)."""
    page = request.meta.get("page")
    if page is not None:
        return f"page {page} from {urlsplit(request.url).netloc}"
    return redact(request.url)


class ResponseTooLarge(Exception):  # noqa: N818 - named for what the user is told
    """An answer over this source's ``DOWNLOAD_MAXSIZE``: cut off, the page not read."""

    def __init__(
        self,
        limit: int,
        received: int,
        *,
        wire: int | None = None,
        expected: bool = False,
        setting: str = MAXSIZE,
    ) -> None:
        self.limit = limit
        self.received = received
        #: Bytes on the wire when the limit was passed while inflating a compressed body.
        self.wire = wire
        #: The server's Content-Length said so before any of the body came.
        self.expected = expected
        #: The setting the limit is (``DOWNLOAD_MAXSIZE``, ``LIVE_MAX_BYTES``).
        self.setting = setting
        super().__init__(self.describe())

    def describe(self) -> str:
        limit = size_text(self.limit, exact=True)
        if self.wire is not None:
            how = f"{size_text(self.received)} once decompressed, from {size_text(self.wire)} on the wire"
        elif self.expected:
            how = f"announced as {size_text(self.received)}; not downloaded"
        else:
            how = f"cut off after {size_text(self.received)}"
        return f"answer over the size limit of {limit} ({self.setting}): {how}"


class StillArriving(DownloadTimeoutError):
    """A timeout on an answer that had begun: the page was still coming, slowly."""

    def __init__(self, timeout: float, received: int) -> None:
        self.timeout = timeout
        self.received = received
        super().__init__(f"answer still arriving after {timeout:g} s ({received:,} bytes received)")


def bounded_failure(request: Request, error: BaseException) -> tuple[str, str] | None:
    """The error kind and line a source reports for a page over its limit or still arriving
    at its timeout (after its one retry), or ``None`` for any other failure."""
    what = what_request(request)
    if isinstance(error, ResponseTooLarge):
        why = " (SOURCE_DOWNLOAD_MAXSIZE sets this source's limit)" if error.setting == MAXSIZE else ""
        return "too_large", f"{what}: {error.describe()}; the page is not read{why}"
    if isinstance(error, StillArriving):
        tries = request.meta.get("retry_times", 0)
        return "slow", f"{what}: {error}; gave up after {counted(tries, 'retry')}"
    return None


@dataclass
class Watch:
    """One request on the wire: when it went out, whether its answer began, bytes so far."""

    started: float
    answered: bool = False
    expected: int = -1
    received: int = 0
    warned: bool = False


class BodyWatch:
    """Bytes received per request of one crawler (one source), from Scrapy's signals."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.maxsize = crawler.settings.getint("DOWNLOAD_MAXSIZE")
        self.warnsize = crawler.settings.getint("DOWNLOAD_WARNSIZE")
        self._watches: dict[int, Watch] = {}
        crawler.signals.connect(self._headers, signal=signals.headers_received)
        crawler.signals.connect(self._bytes, signal=signals.bytes_received)
        for name in SCRAPY_SIZE_LOGGERS:
            logging.getLogger(name).addFilter(SCRAPY_SIZE_LINES)

    def start(self, request: Request) -> Watch:
        watch = self._watches[id(request)] = Watch(time.monotonic())
        return watch

    def end(self, request: Request) -> None:
        self._watches.pop(id(request), None)

    def limit(self, request: Request) -> int:
        return int(request.meta.get("download_maxsize", self.maxsize))

    def _headers(self, headers: Any, body_length: int, request: Request, **_: Any) -> None:
        watch = self._watches.get(id(request))
        if watch is not None:
            watch.answered = True
            watch.expected = body_length if isinstance(body_length, int) else -1

    def _bytes(self, data: bytes, request: Request, **_: Any) -> None:
        watch = self._watches.get(id(request))
        if watch is None:
            return
        watch.received += len(data)
        warnsize = int(request.meta.get("download_warnsize", self.warnsize))
        if warnsize and not watch.warned and watch.received > warnsize:
            watch.warned = True
            warn_large(self.crawler, request, watch.received, warnsize, self.limit(request))

    def too_large(self, request: Request, watch: Watch) -> ResponseTooLarge | None:
        """Why a download was cancelled, if it was the size limit (Scrapy says only "cancelled")."""
        limit = self.limit(request)
        if not limit:
            return None
        if watch.received > limit:
            return ResponseTooLarge(limit, watch.received)
        if watch.expected > limit:
            return ResponseTooLarge(limit, watch.expected, expected=True)
        return None

    @staticmethod
    def timed_out(error: DownloadTimeoutError, request: Request, watch: Watch) -> DownloadTimeoutError:
        """A timeout, told apart: :class:`StillArriving` if the answer had begun."""
        if not watch.answered:
            return error
        timeout = float(request.meta.get("download_timeout") or 0)
        return StillArriving(timeout, watch.received)


class BoundedCompressionMiddleware(HttpCompressionMiddleware):
    """Scrapy's, failing a body that inflates past the limit with :class:`ResponseTooLarge`.

    Scrapy's raises ``IgnoreRequest`` with a message naming the whole request;
    the source could not tell it from any other ignored request and would have
    said ``cannot reach`` a server that answered. Decompression itself, and its
    64 KiB steps, are Scrapy's. The limit is the request's ``download_maxsize``
    (the crawler's ``DOWNLOAD_MAXSIZE`` without it) unless that is 0: then the
    setting ``meta[INFLATE_LIMIT]`` names, else ``DOWNLOAD_MAXSIZE`` (:func:`inflate_limit`).
    """

    def __init__(self, stats: Any = None, *, crawler: Crawler | None = None) -> None:
        super().__init__(stats, crawler=crawler)
        self.crawler = crawler
        self._request: Request | None = None
        self._limit: tuple[int, str] | None = None
        self._cut = False

    def process_response(self, request: Request, response: Any, spider: Any = None) -> Any:
        self._request = request
        self._limit = self.inflate_limit(request)
        self._cut = False
        try:
            response = super().process_response(request, response)
        finally:
            self._request = None
            self._limit = None
        if self._cut and "download_stopped" not in response.flags:
            response = response.replace(flags=[*response.flags, "download_stopped"])
        return response

    def inflate_limit(self, request: Request) -> tuple[int, str]:
        """The bytes a compressed answer to ``request`` may inflate to, and the setting that says so."""
        given = request.meta.get("download_maxsize")
        if given is None:
            return self._max_size, MAXSIZE
        if given:
            return int(given), MAXSIZE
        setting = request.meta.get(INFLATE_LIMIT)
        if setting and self.crawler is not None:
            return self.crawler.settings.getint(setting), str(setting)
        return self._max_size, MAXSIZE  # 0 turns off the limit on the wire, not this one

    def _handle_encoding(self, body: bytes, content_encoding: list[bytes], max_size: int) -> Any:
        setting = MAXSIZE
        if self._limit is not None:
            max_size, setting = self._limit
        try:
            decoded, kept = super()._handle_encoding(body, content_encoding, max_size)
        except _DecompressionMaxSizeExceeded as exc:
            inflated = exc.decompressed_size
        else:
            inflated = None
        if inflated is not None and self._request is not None and self._request.meta.get(INFLATE_CUT):
            to_decode, kept = self._split_encodings(content_encoding)
            head = inflate_head(body, to_decode, max_size)
            if head is not None:
                self._cut = True
                return head, kept
        if inflated is not None:
            # Raised out of the except block: as the context of ours, Scrapy's exception would
            # keep its traceback, and so gunzip's buffer (the limit's worth of bytes), alive
            # as long as the failure: measured, 1.5 GB of RSS with every source a gzip bomb.
            raise ResponseTooLarge(max_size, inflated, wire=len(body), setting=setting)
        request = self._request
        if request is not None and self.crawler is not None:
            warn_size = int(request.meta.get("download_warnsize", self._warn_size))
            if len(body) < warn_size <= len(decoded):
                warn_large(self.crawler, request, len(decoded), warn_size, max_size, decompressed=True)
        return decoded, kept


def inflate_head(body: bytes, encodings: list[bytes], limit: int) -> bytes | None:
    """The first ``limit`` bytes a gzip or deflate body inflates to, never more in memory
    (a body cut short on the wire gives what it holds); ``None`` for any other encoding."""
    if len(encodings) != 1 or encodings[0] not in (b"gzip", b"x-gzip", b"deflate"):
        return None
    gzipped = encodings[0] != b"deflate"
    out = bytearray()
    data = body
    for wbits in (31,) if gzipped else (15, -15):  # deflate: zlib-wrapped, else raw, as servers send it
        try:
            while data and len(out) < limit:
                inflater = zlib.decompressobj(wbits)
                out += inflater.decompress(data, limit - len(out))
                if not (gzipped and inflater.eof):
                    break
                data = inflater.unused_data  # gzip members follow one another (RFC 1952 2.2)
            return bytes(out)
        except zlib.error:
            if out:
                return bytes(out)
    return None


def warn_large(
    crawler: Crawler, request: Request, size: int, warnsize: int, limit: int, decompressed: bool = False
) -> None:
    """One WARNING, once per page, when an answer passes the source's ``DOWNLOAD_WARNSIZE``."""
    logger.warning(
        "%s: %s: a large answer, %s%s, over DOWNLOAD_WARNSIZE (%s)%s",
        getattr(crawler.spider, "name", "?"),
        what_request(request),
        size_text(size),
        " once decompressed" if decompressed else " so far",
        size_text(warnsize, exact=True),
        f"; it is cut off at {size_text(limit, exact=True)}" if limit else "",
    )


class _ScrapySizeLines(logging.Filter):
    """Drops Scrapy's lines about sizes: trawl says it once, in its own words (above)."""

    MARKS = (
        "larger than download max size",
        "larger than download warn size",
        "during decompression",
        "body size after decompression",
    )

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.msg if isinstance(record.msg, str) else ""
        return not any(mark in message for mark in self.MARKS)


SCRAPY_SIZE_LINES = _ScrapySizeLines()
SCRAPY_SIZE_LOGGERS = (
    "scrapy.core.downloader.handlers.http11",
    "scrapy.downloadermiddlewares.httpcompression",
)
