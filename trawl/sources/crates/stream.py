"""An answer's body streamed to a reading thread as it arrives, through Scrapy's own download handler.

Scrapy hands a callback the whole body (2.13+ has no streaming callback): the
1.7 GiB db-dump would be in memory once, compressed. Scrapy's HTTP/1.1
handler writes every chunk it receives into a ``BytesIO`` (``_bodybuf``) of
its ``_ResponseReader``; for a request that carries a :class:`BodyStream` in
``meta[STREAM]`` and is answered 200 with something else than HTML,
:class:`StreamingDownloadHandler` puts the stream in that buffer's place. Every
chunk then goes to the thread that reads the dump, the response that reaches
the callback has an empty body, and everything else stays Scrapy's and
trawl's: the request passes the gate, the proxies and the downloader
middlewares; ``DOWNLOAD_MAXSIZE`` (the source's own, 8 GiB) and
``DOWNLOAD_TIMEOUT`` apply to the bytes received; ``bytes_received`` still
fires (the size warning, the progress line).

HTTP as for any page: a body a server, a mirror or a proxy compressed on the
fly (``Content-Encoding``) is decoded as the reader reads it, bounded by the
same ``DOWNLOAD_MAXSIZE`` once decoded (:mod:`trawl.politeness.decoding`; the
header is taken off the response, so Scrapy's middleware does not decode an
empty body); a redirect is followed by Scrapy's middleware (``REDIRECT_ENABLED``,
``REDIRECT_MAX_TIMES``), the next request streaming into the same
:class:`BodyStream`; a proxy (``PROXY_LIST``, ``HTTP(S)_PROXY``) is chosen and
applied by the downloader middlewares as for any request, and a streamed answer
is flagged :data:`STREAMED` so that its empty ``body`` is not taken for an empty
answer. The stream ends "not streamed" only when the answer reaches the
spider's callback or errback: a redirect or a proxy's retry of the request
streams into it again.

Back-pressure: when more than :data:`HIGH_WATER` bytes wait for the reader, the
connection is paused (``pauseProducing``: TCP's window closes, the server
waits), and resumed once the reader is under :data:`LOW_WATER`. So at most
about 32 MiB of the compressed dump is in memory, whatever its size.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.web.client import ResponseDone

from trawl.common.shallowstack import shallow_stack
from trawl.common.stopping import stopping
from trawl.politeness.decoding import Decoded, UnknownEncoding, encodings_of
from trawl.politeness.handler import GatedHTTPDownloadHandler
from trawl.politeness.proxies import NO_RESEND

with shallow_stack():  # its TLS modules' deprecated aliases: 0.15-0.2 s of CPU otherwise
    from scrapy.core.downloader.handlers import http11

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure

#: The request's meta key that holds its :class:`BodyStream`.
STREAM = "trawl_body_stream"
#: The flag of a response whose body went to its :class:`BodyStream` (its ``body`` is empty).
STREAMED = "streamed"
HIGH_WATER = 32 << 20
LOW_WATER = 8 << 20


class StreamBroken(OSError):
    """The transfer ended before the body did (cancelled, over the size limit, timed out, cut)."""


class BodyStream:
    """Chunks written on the reactor thread, read as a file (``read(n)``) on another.

    :attr:`started` fires on the reactor with True when the body begins to
    stream, False when the answer is not streamed (an error status, HTML, a
    failed request): the callback or errback has it then.
    """

    def __init__(self, high_water: int = HIGH_WATER, low_water: int = LOW_WATER) -> None:
        self.high_water = high_water
        self.low_water = low_water
        self.started: Deferred[bool] = Deferred()
        self.received = 0
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._condition = threading.Condition()
        self._ended = False
        self._error: str | None = None
        self._transport: Any = None
        self._paused = False
        #: The reader is done: what still arrives is dropped (see :meth:`close`).
        self.discarding = False
        #: The body began to stream (False: the answer went whole to the callback or errback).
        self.streaming = False
        self._decoded: Decoded | None = None
        self._refused: UnknownEncoding | None = None

    # --- the reactor's side ------------------------------------------------------------

    def decode(self, encodings: list[bytes] | None, limit: int) -> None:
        """The body comes with these ``Content-Encoding`` values: read it decoded, at most ``limit``
        bytes (0: no bound) once decoded; an encoding that cannot be decoded is raised at the
        first read."""
        try:
            names = encodings_of(encodings)
        except UnknownEncoding as exc:
            self._refused = exc
            return
        if names:
            self._decoded = Decoded(_Raw(self), names, limit, wire=lambda: self.received)

    def begin(self, transport: Any) -> None:
        self.streaming = True
        self._transport = transport
        if not self.started.called:
            self.started.callback(True)

    def write(self, data: bytes) -> None:
        """A chunk, as ``_ResponseReader`` writes it into its body buffer."""
        with self._condition:
            if self.discarding or self._ended:  # nothing after the end (never a second answer's bytes)
                return
            self._chunks.append(data)
            self._buffered += len(data)
            self.received += len(data)
            self._condition.notify_all()
            pause = self._buffered > self.high_water and not self._paused and self._transport is not None
            if pause:
                self._paused = True
        if pause:
            self._transport.pauseProducing()

    def getvalue(self) -> bytes:
        """What Scrapy puts in the response's body: nothing, the reader had it all."""
        return b""

    def truncate(self, size: int = 0) -> None:
        """Scrapy's reader drops its buffer when the answer passed ``DOWNLOAD_MAXSIZE``."""
        self.end("the answer passed the download size limit")

    def end(self, error: str | None = None) -> None:
        """The body is complete (``error`` None) or the transfer failed; idempotent."""
        with self._condition:
            if not self._ended:
                self._ended, self._error = True, error
            self._condition.notify_all()
        if not self.started.called:
            self.started.callback(False)

    def not_streamed(self) -> None:
        """The answer went to the callback or errback whole (an error, HTML)."""
        self.end("not streamed")

    @property
    def broken(self) -> bool:
        """Did the transfer fail (not the archive in it)?"""
        return self._ended and self._error is not None

    # --- the reading side --------------------------------------------------------------

    def close(self) -> None:
        """The reader is done (the archive's end, an error, the stop): drop what is buffered and
        what still comes, and let the connection go on so that the next chunk ends the download
        (the spider's ``bytes_received`` handler raises ``StopDownload``)."""
        with self._condition:
            self.discarding = True
            self._chunks.clear()
            self._buffered = 0
            paused, self._paused = self._paused, False
        self.end("the reading stopped")
        if paused:
            from twisted.internet import reactor

            reactor.callFromThread(self._resume)  # type: ignore[attr-defined]

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes of the body, decoded (at least one unless it ended); waits for them.

        Raises :class:`StreamBroken` when the transfer failed, and, for an encoded body,
        :class:`~trawl.politeness.bounds.ResponseTooLarge` past the bound once decoded,
        :class:`~trawl.politeness.decoding.UnknownEncoding`, or ``EOFError``
        (:class:`~trawl.politeness.decoding.CorruptBody`) for a compressed body cut short or corrupt."""
        if self._refused is not None:
            raise self._refused
        if self._decoded is not None:
            return self._decoded.read(size)
        return self.read_raw(size)

    def read_raw(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes as they came on the wire (at least one unless the body ended)."""
        with self._condition:
            while not self._chunks and not self._ended:
                self._condition.wait()
            if not self._chunks:
                if self._error is not None:
                    raise StreamBroken(self._error)
                return b""
            parts, got = [], 0
            while self._chunks and (size < 0 or got < size):
                chunk = self._chunks.popleft()
                if size >= 0 and got + len(chunk) > size:
                    keep = size - got
                    self._chunks.appendleft(chunk[keep:])
                    chunk = chunk[:keep]
                parts.append(chunk)
                got += len(chunk)
            self._buffered -= got
            resume = self._paused and self._buffered < self.low_water
            if resume:
                self._paused = False
        if resume:
            from twisted.internet import reactor

            reactor.callFromThread(self._resume)  # type: ignore[attr-defined]
        return b"".join(parts)

    def _resume(self) -> None:
        if self._transport is not None:
            try:
                self._transport.resumeProducing()
            except Exception:  # noqa: BLE001 - the connection went meanwhile: its loss ends the stream
                pass


class _Raw:
    """A stream's bytes as received, for its decoder."""

    def __init__(self, stream: BodyStream) -> None:
        self.read = stream.read_raw


def _streams(txresponse: Any, request: Request) -> BodyStream | None:
    stream = request.meta.get(STREAM)
    if not isinstance(stream, BodyStream) or txresponse.code != 200:
        return None
    types = txresponse.headers.getRawHeaders(b"content-type") or [b""]
    return None if b"html" in types[0].lower() else stream


class _StreamingAgent(http11._ScrapyAgent):
    """Scrapy's agent, with a streamed request's body buffer replaced by its :class:`BodyStream`."""

    def _cb_bodyready(self, txresponse: Any, request: Request) -> Any:
        stream = _streams(txresponse, request)
        if stream is not None and getattr(txresponse, "length", None) != 0:
            deliver = txresponse.deliverBody
            # Decoded by the reader, so not by Scrapy's middleware (which would see an empty body).
            encodings = txresponse.headers.getRawHeaders(b"content-encoding")
            txresponse.headers.removeHeader(b"content-encoding")
            stream.decode(encodings, int(request.meta.get("download_maxsize", self._maxsize)))
            request.meta[NO_RESEND] = True  # a reader is midway: no second answer under it

            def deliver_to_stream(protocol: Any) -> None:
                protocol._bodybuf = stream
                lost = protocol.connectionLost

                def connection_lost(reason: Failure) -> None:
                    done = reason.check(ResponseDone) or "PotentialDataLoss" in type(reason.value).__name__
                    stream.end(None if done else "the connection was lost before the end of the answer")
                    lost(reason)

                protocol.connectionLost = connection_lost
                deliver(protocol)
                stream.begin(protocol.transport)

            txresponse.deliverBody = deliver_to_stream
        return super()._cb_bodyready(txresponse, request)


class _StreamingHTTP11(http11.HTTP11DownloadHandler):
    """Scrapy's handler, making :class:`_StreamingAgent` for a streamed request (as its own
    ``download_request`` makes ``_ScrapyAgent``, spider-attribute limits aside: trawl sets settings)."""

    async def download_request(self, request: Request) -> Response:
        stream = request.meta.get(STREAM)
        if not isinstance(stream, BodyStream):
            return await super().download_request(request)
        agent = _StreamingAgent(
            contextFactory=self._contextFactory,
            bindAddress=self._bind_address,
            pool=self._pool,
            maxsize=self._default_maxsize,
            warnsize=self._default_warnsize,
            fail_on_dataloss=self._fail_on_dataloss,
            crawler=self._crawler,
            tls_verbose_logging=self._tls_verbose_logging,
        )
        with http11.wrap_twisted_exceptions():
            response = await maybe_deferred_to_future(agent.download_request(request))
        if stream.streaming and STREAMED not in response.flags:
            response.flags.append(STREAMED)
        return response


class StreamingDownloadHandler(GatedHTTPDownloadHandler, _StreamingHTTP11):
    """trawl's HTTP handler (the gate's bookkeeping, the stop, the size and time bounds said in
    trawl's words); a request with a :class:`BodyStream` in ``meta[STREAM]`` streams its body.

    A stream whose body has not begun when the crawl stops (its request waiting in the
    scheduler between two redirects, which a closing engine drops without an errback)
    is ended then, so that the spider waiting for it does not wait for ever."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._seen: weakref.WeakSet[BodyStream] = weakref.WeakSet()
        crawler.signals.connect(self._end_waiting, signal=stopping)

    async def download_request(self, request: Request) -> Response:
        stream = request.meta.get(STREAM)
        if isinstance(stream, BodyStream):
            self._seen.add(stream)
        return await super().download_request(request)

    def _end_waiting(self, reason: str = "", **_: Any) -> None:
        for stream in list(self._seen):
            if not stream.started.called:
                stream.end("the crawl stopped")
