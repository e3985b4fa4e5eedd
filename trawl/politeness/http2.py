"""HTTP/2 where the origin offers it: one connection per origin, requests multiplexed on it.

The probe and the live crawl ask many pages of each origin. Over HTTP/1.1 each
request in flight to a host holds a connection (and a TLS handshake) of its
own; over HTTP/2 they are streams of one connection. Scrapy's HTTP/2 client
(``scrapy.core._http2``, on the ``h2`` package) does the framing; this module
decides which requests take it, and fixes what it lacks for a crawler of
other people's servers:

* **Which requests.** ``https://`` requests of a source that asks the
  target's own servers (``http2 = True`` on the source: the probe, the live
  crawl) while ``HTTP2_ENABLED`` is on, sent without a proxy. HTTP/2 needs TLS
  with ALPN in practice (no browser speaks it in clear), so ``http://`` stays
  HTTP/1.1; and Scrapy's HTTP/2 client cannot tunnel through a proxy (it
  raises ``NotImplementedError``), so a request with ``meta["proxy"]``
  (``PROXY_LIST``, ``https_proxy``) goes by HTTP/1.1 through the proxy, as
  before: never around it.
* **Origins that do not speak it.** Scrapy offers only ``h2`` in ALPN and
  fails against an HTTP/1.1-only server. Here the TLS handshake offers
  ``h2`` and ``http/1.1``; a server that chooses ``http/1.1`` (or no ALPN at
  all) has the connection dropped right after the handshake, before a byte of
  HTTP is sent, and the request (with any other waiting for that connection)
  goes by HTTP/1.1. The origin is remembered (:data:`REMEMBERED` of them):
  its later requests go by HTTP/1.1 at once. Cost: one TLS handshake per
  such origin.
* **A connection that fails.** Scrapy's pool never answers the requests
  waiting for a connection that could not be made (refused, DNS): they waited
  for their whole timeout and the origin's key stayed taken, so every later
  request to it waited too. Here they fail at once with the connection's error,
  as over HTTP/1.1.
* **A graceful GOAWAY.** nginx ends an HTTP/2 connection after 1,000 requests
  (``keepalive_requests``), and servers do on reload. The ``h2`` package
  closes its side on any GOAWAY, so Scrapy's client failed every stream in
  flight, answered or not, and each went through the retry middleware with its
  backoff. Here the streams up to the GOAWAY's last one are read to their end,
  and the ones the server did not take (RFC 9113 6.8: not processed, safe to
  send again whatever the method) are sent again at once on a new connection.

Everything else is the handler's (:mod:`trawl.politeness.handler`), whichever
protocol: the gate before it, the size bounds (Scrapy's HTTP/2 streams send
``headers_received`` / ``bytes_received`` and honour ``download_maxsize`` and
``StopDownload``), the decoding after it, the stop. Certificates are checked as
over HTTP/1.1: the same ``DOWNLOAD_VERIFY_CERTIFICATES`` context factory.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred
from twisted.web.client import ResponseFailed

from trawl.politeness.bounds import SCRAPY_SIZE_LINES
from trawl.settings_checks import Setting, scrapy_bool

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

#: HTTP/1.1-only origins remembered (about 100 bytes each): forgetting one costs one TLS handshake.
REMEMBERED = 100_000
#: What ``response.protocol`` says, as the probe records it.
PROTOCOL_NAMES = {"h2": "HTTP/2"}
#: Stats: requests sent over HTTP/2; origins found not to speak it; connections opened.
STAT_REQUESTS = "trawl/http2/requests"
STAT_HTTP11_ORIGINS = "trawl/http2/http11_origins"
STAT_CONNECTIONS = "trawl/http2/connections"
#: Stats: requests sent again because a graceful GOAWAY came before the server took them.
STAT_RESENT = "trawl/http2/goaway_resent"
#: Times one request is sent again after GOAWAYs before its failure goes to the retry middleware: a
#: server ending every connection at once is broken, not busy.
RESENDS = 3

SETTINGS = {
    "HTTP2_ENABLED": Setting(
        True,
        scrapy_bool,
        "the probe and the live crawl ask https:// origins that offer HTTP/2 over it (one connection,"
        " requests multiplexed); False: HTTP/1.1 only. Other sources, proxied requests and http:// are"
        " always HTTP/1.1",
    ),
}


def protocol_name(response: Response) -> str | None:
    """``HTTP/2`` or ``HTTP/1.1`` (what the answer came by), ``None`` if unknown."""
    protocol = getattr(response, "protocol", None)
    return PROTOCOL_NAMES.get(protocol, protocol) if protocol else None


class ServerWentAway(Exception):  # noqa: N818 - named for what happened
    """A graceful GOAWAY came before the server took this stream: it was not processed (RFC 9113 6.8)."""

    def __init__(self) -> None:
        super().__init__("the server ended the HTTP/2 connection (GOAWAY) before taking this request")


class NotHttp2(Exception):  # noqa: N818 - named for what happened
    """The origin's TLS handshake chose another protocol than ``h2`` (or none)."""

    def __init__(self, negotiated: bytes | None) -> None:
        self.negotiated = negotiated
        super().__init__(f"the server chose {negotiated.decode('latin-1') if negotiated else 'no protocol'}")


def _build() -> tuple[type, type]:
    """The pool and agent classes (built on first use: ``h2`` is imported by them)."""
    from h2.connection import H2Connection
    from h2.errors import ErrorCodes
    from h2.events import ConnectionTerminated
    from scrapy.core._http2.agent import H2Agent, H2ConnectionPool
    from scrapy.core._http2.protocol import H2ClientFactory, H2ClientProtocol
    from scrapy.core._http2.stream import StreamCloseReason
    from scrapy.core.downloader.contextfactory import _AcceptableProtocolsContextFactory
    from scrapy.core.downloader.handlers.http2 import _ScrapyH2Agent
    from twisted.web.client import _StandardEndpointFactory

    alpn = [b"h2", b"http/1.1"]

    class DrainingConnection(H2Connection):
        """h2 closes the whole connection on any GOAWAY, so the answers still coming on the streams
        up to the GOAWAY's last one fail with ``ProtocolError``. A graceful GOAWAY (``NO_ERROR``)
        leaves it open for them here; any other closes it as before."""

        def _receive_goaway_frame(self, frame: Any) -> tuple[list[Any], list[Any]]:
            if frame.error_code != ErrorCodes.NO_ERROR:
                return super()._receive_goaway_frame(frame)  # type: ignore[no-any-return]
            event = ConnectionTerminated()
            event.error_code = ErrorCodes.NO_ERROR
            event.last_stream_id = frame.last_stream_id
            event.additional_data = frame.additional_data or None
            return [], [event]

    class AlpnProtocol(H2ClientProtocol):
        #: ALPN chose h2: requests may go out behind the preface (RFC 9113 3.4), without waiting
        #: a round trip for the server to acknowledge the client's SETTINGS, as Scrapy does.
        h2_ready = False
        #: The last stream a graceful GOAWAY said the server answers; None until one came.
        goaway_last: int | None = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.conn = DrainingConnection(config=self.conn.config)

        def connection_terminated(self, event: Any) -> None:
            """A graceful GOAWAY (nginx after ``keepalive_requests``, a server reloading): no new
            stream here (the pool opens another connection), the streams up to its last one are
            read to their end, the others fail with :class:`ServerWentAway` and are sent again at
            once (:meth:`Http2Route.download`); the connection closes once drained."""
            if event.error_code != ErrorCodes.NO_ERROR or self.goaway_last is not None:
                super().connection_terminated(event)
                return
            self.goaway_last = int(event.last_stream_id)
            lost, self._conn_lost_deferred = self._conn_lost_deferred, Deferred()
            lost.callback(None)  # the pool forgets this connection
            self._pending_request_stream_pool.clear()
            for stream_id, stream in list(self.streams.items()):
                if stream_id <= self.goaway_last and stream.metadata["request_sent"]:
                    continue
                del self.streams[stream_id]
                if stream.metadata["request_sent"]:
                    self.metadata["active_streams"] -= 1
                stream.close(StreamCloseReason.CONNECTION_LOST, [ServerWentAway()], from_protocol=True)
            self._close_if_drained()

        def _send_pending_requests(self) -> None:
            if self.goaway_last is None:
                super()._send_pending_requests()

        def pop_stream(self, stream_id: int) -> Any:
            stream = super().pop_stream(stream_id)
            self._close_if_drained()
            return stream

        def _close_if_drained(self) -> None:
            if self.goaway_last is not None and not self.streams and self.transport is not None:
                self.transport.loseConnection()

        def connectionMade(self) -> None:  # noqa: N802 - Twisted's naming
            from twisted.internet.interfaces import ITCPTransport

            # Small frames (HEADERS of the next stream, WINDOW_UPDATEs) must not wait for the ACK of
            # the last segment (Nagle): Twisted's HTTP/1.1 client sets it too, Scrapy's HTTP/2 does not.
            if ITCPTransport.providedBy(self.transport):
                self.transport.setTcpNoDelay(True)
            super().connectionMade()

        @property
        def h2_connected(self) -> bool:
            connected = self.transport is not None and bool(self.transport.connected)
            return connected and (self.h2_ready or bool(self.metadata["settings_acknowledged"]))

        def handshakeCompleted(self) -> None:  # noqa: N802 - Twisted's naming
            from twisted.internet import reactor
            from twisted.internet.ssl import Certificate

            assert self.transport is not None
            negotiated = self.transport.negotiatedProtocol
            if negotiated != b"h2":
                # Aborted inside the handshake's callback: the HTTP/2 preface buffered behind the
                # handshake is never written, so the server sees no request at all.
                self._conn_lost_errors.append(NotHttp2(negotiated))
                self.transport.abortConnection()
                return
            super().handshakeCompleted()
            self.h2_ready = True
            self.metadata["certificate"] = Certificate(self.transport.getPeerCertificate())
            # Once this callback returns, TLS writes the preface it buffered; the requests follow it.
            reactor.callLater(0, self._send_pending_requests)  # type: ignore[attr-defined]

    class AlpnFactory(H2ClientFactory):
        def buildProtocol(self, addr: Any) -> H2ClientProtocol:  # noqa: N802
            return AlpnProtocol(
                self.uri, self.crawler, self.conn_lost_deferred, tls_verbose_logging=self.tls_verbose_logging
            )

        def acceptableProtocols(self) -> list[bytes]:  # noqa: N802
            return alpn

    class Pool(H2ConnectionPool):
        def _new_connection(self, key: Any, uri: Any, endpoint: Any) -> Deferred[Any]:
            self._pending_requests[key] = deque()
            lost: Deferred[None] = Deferred()
            lost.addCallback(self._remove_connection, key)
            factory = AlpnFactory(uri, self._crawler, lost, tls_verbose_logging=self._tls_verbose_logging)
            if self._crawler.stats is not None:
                self._crawler.stats.inc_value(STAT_CONNECTIONS)
            connecting = endpoint.connect(factory)
            connecting.addCallbacks(
                self.put_connection, self._connect_failed, callbackArgs=(key,), errbackArgs=(key,)
            )
            waiting: Deferred[Any] = Deferred()
            self._pending_requests[key].append(waiting)
            return waiting

        def _connect_failed(self, failure: Failure, key: Any) -> None:
            for waiting in self._pending_requests.pop(key, ()):
                waiting.errback(failure)

        def _remove_connection(self, _: None, key: Any) -> None:
            self._connections.pop(key, None)

    class Agent(H2Agent):
        """Scrapy's, offering ``h2`` and ``http/1.1`` (older Twisted sets ALPN from this wrapper's
        list, newer from the factory's: both say the same)."""

        def __init__(
            self,
            reactor: Any,
            pool: Any,
            context_factory: Any,
            connect_timeout: float | None,
            bind_address: Any,
        ) -> None:
            self._reactor = reactor
            self._pool = pool
            self._context_factory = _AcceptableProtocolsContextFactory(
                context_factory, acceptable_protocols=alpn
            )
            self.endpoint_factory = _StandardEndpointFactory(
                reactor, self._context_factory, connect_timeout, bind_address
            )

    class ScrapyAgent(_ScrapyH2Agent):
        def _get_agent(self, request: Request, timeout: float | None) -> H2Agent:
            from scrapy.utils._download_handlers import normalize_bind_address
            from twisted.internet import reactor

            bind_address = normalize_bind_address(request.meta.get("bindaddress") or self._bind_address)
            return Agent(
                reactor=reactor,
                pool=self._pool,
                context_factory=self._context_factory,
                connect_timeout=timeout,
                bind_address=bind_address,
            )

    return Pool, ScrapyAgent


class Http2Route:
    """Sends a crawler's eligible requests over HTTP/2, the others (and the refused) by HTTP/1.1."""

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("TWISTED_REACTOR_ENABLED", True):
            raise NotConfigured("Scrapy's HTTP/2 client needs a Twisted reactor")
        from scrapy.core.downloader._idna_patch import _install_twisted_idna_fallbacks
        from scrapy.core.downloader.contextfactory import _load_context_factory_from_settings

        pool_class, self._agent_class = _build()
        _install_twisted_idna_fallbacks()
        self._crawler = crawler
        self._pool = pool_class(crawler)
        # The HTTP/1.1 handler's TLS policy (DOWNLOAD_VERIFY_CERTIFICATES, TLS versions), as Scrapy reads it.
        self._context_factory = _load_context_factory_from_settings(crawler)
        self._bind_address = crawler.settings.get("DOWNLOAD_BIND_ADDRESS")
        self._http11_origins: dict[str, None] = {}
        logging.getLogger("scrapy.core._http2.stream").addFilter(SCRAPY_SIZE_LINES)

    @classmethod
    def for_crawler(cls, crawler: Crawler) -> Http2Route | None:
        """The route, or ``None``: the setting is off, the source does not ask targets, or no ``h2``."""
        if not crawler.settings.getbool("HTTP2_ENABLED"):
            return None
        spider_class = getattr(crawler, "spidercls", None)
        if not getattr(spider_class, "http2", False):
            return None
        try:
            return cls(crawler)
        except ImportError as exc:  # h2 is a dependency: a broken install, said once
            logger.warning("HTTP/2 is off: %s (pip install h2)", exc)
        except NotConfigured as exc:
            logger.warning("HTTP/2 is off: %s", exc)
        return None

    def takes(self, request: Request) -> bool:
        """An ``https://`` request without a proxy, to an origin not known to refuse HTTP/2."""
        parts = urlparse_cached(request)
        if parts.scheme != "https" or request.meta.get("proxy"):
            return False
        return _origin(request) not in self._http11_origins

    async def download(self, request: Request, http11: Callable[[Request], Awaitable[Response]]) -> Response:
        """The answer over HTTP/2, or over ``http11`` if the origin chose HTTP/1.1 at the handshake."""
        from scrapy.utils._download_handlers import wrap_twisted_exceptions

        agent = self._agent_class(
            context_factory=self._context_factory,
            pool=self._pool,
            bind_address=self._bind_address,
            crawler=self._crawler,
        )
        assert self._crawler.spider is not None
        for resend in range(RESENDS + 1):
            try:
                with wrap_twisted_exceptions():
                    try:
                        response = await maybe_deferred_to_future(
                            agent.download_request(request, self._crawler.spider)
                        )
                    except ResponseFailed as failed:
                        if resend < RESENDS and any(_is(ServerWentAway, r) for r in failed.reasons):
                            self._crawler.stats.inc_value(STAT_RESENT)
                            continue
                        if not any(_is(NotHttp2, reason) for reason in failed.reasons):
                            raise _as_http11(failed) from None
                        self._refused(request)
                        raise _Http11Instead from None
            except _Http11Instead:
                return await http11(request)
            self._crawler.stats.inc_value(STAT_REQUESTS)
            return response
        raise AssertionError("unreachable: the last resend raises or returns")

    def _refused(self, request: Request) -> None:
        origin = _origin(request)
        if origin in self._http11_origins:
            return
        if len(self._http11_origins) >= REMEMBERED:
            del self._http11_origins[next(iter(self._http11_origins))]
        self._http11_origins[origin] = None
        self._crawler.stats.inc_value(STAT_HTTP11_ORIGINS)

    async def close(self) -> None:
        self._pool.close_connections()


class _Http11Instead(Exception):  # noqa: N818 - a signal between two frames, never raised further
    pass


def _as_http11(failed: ResponseFailed) -> ResponseFailed:
    """The failure as HTTP/1.1 words it: the connection's own errors, without Scrapy's note that a
    stream waiting for the connection was never sent (a refused certificate reads the same)."""
    from scrapy.core._http2.stream import InactiveStreamClosed

    reasons = [reason for reason in failed.reasons if not isinstance(reason, InactiveStreamClosed)]
    return ResponseFailed(reasons or list(failed.reasons))


def _is(kind: type[Exception], reason: Any) -> bool:
    """Scrapy's streams fail with a list mixing exceptions and Failures."""
    return isinstance(getattr(reason, "value", reason), kind)


def _origin(request: Request) -> str:
    parts = urlparse_cached(request)
    return f"{parts.scheme}://{parts.netloc}".lower()
