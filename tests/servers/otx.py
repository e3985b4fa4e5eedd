"""A local stand-in for AlienVault OTX's ``url_list`` API, and a small JSON API server shell.

Why: the OTX spider must cope with what ``otx.alienvault.com`` really sends. No
recorded response is available, so the answer is built from the real
``url_list`` object documented in /work/shared/api-formats.md section d (the
Rapid7 plugin's sample): the same keys in the same order, ``httpcode`` an
integer that may be 0 (then ``urlworker`` is ``{}``), ``date`` without a zone,
``encoded`` = ``quote(url, safe='/')``, newest first, ``paged``, ``page_num``,
``limit``, ``full_size``, ``actual_size``. Bodies use Python's default JSON
separators (``", "``, ``": "``) like Django's ``JsonResponse``: waymore's test
for ``"error": "`` (with a space) implies them.

Not confirmed (handled both ways by the spider, switchable here): the 429 body
(a Django REST framework ``{"detail": "Request was throttled. Expected
available in N seconds."}`` with ``Retry-After`` is the guess), the bad-key
answer, the status of an ``{"error": ...}`` body, and whether ``actual_size``
differs from ``full_size`` on large lists (equal here, as in the sample).

:class:`LocalApiServer` (threaded HTTP/1.1 on 127.0.0.1, port 0, request log)
is shared with the urlscan fake.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import NamedTuple
from urllib.parse import parse_qsl, quote

from tests.servers.inflight import Span, SpanRecordingHandler, max_in_flight

__all__ = [
    "FakeOtxServer",
    "FaultResponse",
    "LocalApiServer",
    "OtxUrl",
    "RequestRecord",
    "Reply",
    "connection_reset",
    "corrupted_json",
    "html_error_page",
    "otx_throttled",
    "server_error",
    "spoil",
    "truncated_json",
]

#: ``(status, body, headers)`` served verbatim by the fault switches.
FaultResponse = tuple[int, bytes, dict[str, str]]

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class RequestRecord(NamedTuple):
    """What the server saw, so tests can assert on the client's exact wire behaviour."""

    path: str
    #: Query pairs as decoded by the server, in order.
    params: list[tuple[str, str]]
    raw_query: str
    headers: dict[str, str]
    time: float  # time.monotonic() at arrival

    def param(self, name: str) -> str | None:
        for key, value in self.params:
            if key == name:
                return value
        return None

    def header(self, name: str) -> str | None:
        """Case-insensitive, as HTTP header names are."""
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None


@dataclass
class Reply:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def html_error_page(status: int = 200) -> FaultResponse:
    """A CDN/maintenance HTML page: the failure a status-only client parses as JSON."""
    body = (
        b"<!DOCTYPE html>\n<html><head><title>Service maintenance</title></head>\n"
        b"<body><h1>We'll be back soon</h1><p>The service is under maintenance.</p></body></html>\n"
    )
    return (status, body, {"Content-Type": "text/html; charset=utf-8"})


def server_error(status: int = 502) -> FaultResponse:
    """What a CDN in front of the API answers when the origin fails (HTML, not JSON)."""
    reason = _REASONS.get(status, "Error")
    body = (
        f"<html><head><title>{status} {reason}</title></head><body><h1>{status} {reason}</h1></body></html>\n"
    )
    return (status, body.encode(), {"Content-Type": "text/html"})


#: Pseudo status of :func:`connection_reset`: no answer at all.
RESET = 0
#: Marker header of the faults that serve the real answer with a spoilt body.
_SPOIL_HEADER = "X-Fake-Spoil"


def connection_reset() -> FaultResponse:
    """The connection is reset before any answer (an overloaded or banning server)."""
    return (RESET, b"", {})


def truncated_json() -> FaultResponse:
    """Once: the real answer cut in the middle, in a complete HTTP message."""
    return (200, b"", {_SPOIL_HEADER: "truncate"})


def corrupted_json() -> FaultResponse:
    """Once: the real answer with one byte in the middle turned into a NUL: the length
    and the message are right, the JSON is not (a control character is never valid there)."""
    return (200, b"", {_SPOIL_HEADER: "corrupt"})


def spoil(fault: FaultResponse, body: bytes) -> bytes | None:
    """The real ``body`` as a spoiling fault leaves it, or ``None`` for any other fault."""
    how = fault[2].get(_SPOIL_HEADER)
    if how == "truncate":
        return body[: len(body) // 2]
    if how == "corrupt":
        middle = len(body) // 2
        return body[:middle] + b"\x00" + body[middle + 1 :]
    return None


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64
    fake: LocalApiServer


class _Handler(SpanRecordingHandler, BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    #: When the answer to the current request started out (``time.monotonic()``).
    answered: float = 0.0
    server: _HTTPServer

    def setup(self) -> None:
        self.timeout = 30
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: tests read the request log instead."""

    def span_log(self) -> list[Span]:
        return self.server.fake.spans

    def _answer(self) -> None:
        fake = self.server.fake
        try:
            reply = fake.dispatch(self.path, dict(self.headers.items()))
        except Exception as exc:  # a bug here must not look like a network failure
            reply = Reply(500, [("Content-Type", "text/plain")], f"fake server error: {exc!r}\n".encode())
        if reply.status == RESET:
            # RST instead of FIN: linger 0, then close without a byte.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        head = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Unknown')}"]
        head += [f"Server: {fake.server_header}", "Date: " + formatdate(usegmt=True)]
        head += [f"{k}: {v}" for k, v in reply.headers]
        head += [f"Content-Length: {len(reply.body)}", "Connection: keep-alive"]
        try:
            self.answered = time.monotonic()  # the client can send again from now on
            self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + reply.body)
        except OSError:
            self.close_connection = True


class LocalApiServer:
    """Threaded HTTP/1.1 server on 127.0.0.1 with a thread-safe request log.

    Subclasses implement :meth:`handle`; ``with Server(...) as srv:`` starts and stops it.
    """

    server_header = "nginx"
    #: Seconds each request waits before it is answered (outside the lock: requests
    #: overlap, as at a remote server); set it on the instance.
    latency: float = 0.0

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        #: Every request, in arrival order (read it after the client is done).
        self.requests: list[RequestRecord] = []
        #: ``(arrived, answered)`` monotonic times of every request: from the request head read
        #: to the answer starting out (see :meth:`max_in_flight`).
        self.spans: list[Span] = []
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def dispatch(self, path_qs: str, headers: Mapping[str, str]) -> Reply:
        path, _, raw_query = path_qs.partition("?")
        params = parse_qsl(raw_query, keep_blank_values=True)
        record = RequestRecord(path, params, raw_query, dict(headers), time.monotonic())
        if self.latency:
            time.sleep(self.latency)
        with self._lock:
            self.requests.append(record)
            return self.handle(record)

    def handle(self, request: RequestRecord) -> Reply:  # pragma: no cover - abstract
        raise NotImplementedError

    def max_in_flight(self) -> int:
        """The most requests this server was answering at one time (waiting for its lock included)."""
        return max_in_flight(list(self.spans))

    @staticmethod
    def fault(fault: FaultResponse) -> Reply:
        status, body, headers = fault
        return Reply(status, list(headers.items()), body)

    def start(self) -> LocalApiServer:
        if self._httpd is None:
            httpd = _HTTPServer((self.host, self.port), _Handler)
            httpd.fake = self
            self._httpd = httpd
            self.port = httpd.server_address[1]
            self._thread = threading.Thread(
                target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self):  # noqa: ANN204 - returns the subclass
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


# --------------------------------------------------------------------------------------
# OTX
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OtxUrl:
    """One URL OTX's URL worker saw."""

    url: str
    date: str  # "2019-02-06T02:40:30": no zone, as OTX writes it
    httpcode: int = 200
    ip: str = "93.184.215.14"

    @property
    def hostname(self) -> str:
        return self.url.split("://", 1)[-1].split("/", 1)[0].split("?", 1)[0].split(":", 1)[0].lower()


def _registered(host: str) -> str:
    """Good enough for the test hosts (``*.example.com``, ``*.example.co.uk``)."""
    labels = host.split(".")
    keep = 3 if len(labels) > 2 and labels[-2] == "co" else 2
    return ".".join(labels[-keep:])


def otx_entry(item: OtxUrl) -> dict[str, object]:
    """One ``url_list`` element, keys in the order of the real sample."""
    worker: dict[str, object] = {"ip": item.ip, "http_code": item.httpcode} if item.httpcode else {}
    return {
        "domain": _registered(item.hostname),
        "url": item.url,
        "hostname": item.hostname,
        "httpcode": item.httpcode,
        "gsb": [],
        "result": {"urlworker": worker, "safebrowsing": {"matches": []}},
        "date": item.date,
        "encoded": quote(item.url, safe="/"),
    }


def otx_throttled(seconds: int = 30) -> FaultResponse:
    """[GUESS] Django REST framework's throttle answer."""
    body = json.dumps({"detail": f"Request was throttled. Expected available in {seconds} seconds."})
    return (429, body.encode(), {"Content-Type": "application/json", "Retry-After": str(seconds)})


_OTX_HEADERS = (
    ("Content-Type", "application/json"),
    ("Vary", "Accept-Encoding"),
    ("X-Cache", "Miss from cloudfront"),
    ("Via", "1.1 0123456789abcdef.cloudfront.net (CloudFront)"),
)


@dataclass
class FakeOtxServer(LocalApiServer):
    """``/api/v1/indicators/{domain|hostname}/<x>/url_list?limit=&page=``.

    ``domain/<d>`` lists the URLs of ``d`` and its subdomains, ``hostname/<h>``
    those of exactly ``h``. All switches are plain attributes, changeable while
    the server runs.
    """

    urls: list[OtxUrl] = field(default_factory=list)
    #: The largest ``limit`` honoured (a bigger one is served at this size).
    max_limit: int = 500
    #: Keys accepted in ``X-OTX-API-KEY``; ``None``: any key (or none) works.
    valid_keys: set[str] | None = None
    #: A ``full_size`` that disagrees with the data (the pages served do not change).
    full_size_override: int | None = None
    #: Leave ``full_size`` out of every answer.
    omit_full_size: bool = False
    #: ``(status, error text)``: every answer is ``{"error": text}`` with that status.
    error_answer: tuple[int, str] | None = None
    #: page -> answers served, in order, before the real one.
    fail_pages: dict[int, list[FaultResponse]] = field(default_factory=dict)
    #: Pages answered with an HTML page and status 200.
    html_200_pages: set[int] = field(default_factory=set)
    #: Pages whose JSON is cut off in the middle.
    malformed_pages: set[int] = field(default_factory=set)
    #: Bodies rendered by :meth:`prerender_pages`: (kind, indicator, page, limit) -> body.
    _cache: dict[tuple[str, str, int, int], bytes] = field(default_factory=dict, repr=False)

    server_header = "gunicorn"

    def __post_init__(self) -> None:
        LocalApiServer.__init__(self)

    def handle(self, request: RequestRecord) -> Reply:
        parts = request.path.strip("/").split("/")
        if len(parts) != 6 or parts[:3] != ["api", "v1", "indicators"] or parts[5] != "url_list":
            return self.fault(server_error(404))
        kind, indicator = parts[3], parts[4].lower()
        if kind not in ("domain", "hostname"):
            return self._json(400, {"detail": f"Invalid indicator type {kind}"})
        key = request.header("X-OTX-API-KEY")
        if key is not None and self.valid_keys is not None and key not in self.valid_keys:
            return self._json(403, {"detail": "Invalid API key"})  # [GUESS]
        page = _int(request.param("page"), 1)
        limit = min(max(_int(request.param("limit"), 10), 1), self.max_limit)
        faults = self.fail_pages.get(page)
        fault = faults.pop(0) if faults else None
        if fault is not None and spoil(fault, b"") is None:
            return self.fault(fault)
        if page in self.html_200_pages:
            return self.fault(html_error_page(200))
        if self.error_answer is not None:
            status, text = self.error_answer
            return self._json(status, {"error": text})
        body = self._cache.get((kind, indicator, page, limit))
        if body is None:
            body = self._page(self._matching(kind, indicator), page, limit)
        if fault is not None:
            return Reply(200, list(_OTX_HEADERS), spoil(fault, body) or b"")
        if page in self.malformed_pages:
            return Reply(200, list(_OTX_HEADERS), body[: len(body) // 2])
        return Reply(200, list(_OTX_HEADERS), body)

    def _matching(self, kind: str, indicator: str) -> list[OtxUrl]:
        if kind == "hostname":
            found = [u for u in self.urls if u.hostname == indicator]
        else:
            found = [u for u in self.urls if u.hostname == indicator or u.hostname.endswith("." + indicator)]
        return sorted(found, key=lambda u: u.date, reverse=True)  # newest first

    def prerender_pages(self, kind: str, indicator: str, limit: int = 500) -> int:
        """Render every page of ``kind/indicator`` at ``limit`` ahead of time (for benchmarks:
        a page then costs a dict lookup, not a scan, a sort and a JSON dump). The fault
        switches still come first. Returns the number of pages; render again after
        changing ``urls``."""
        indicator = indicator.lower()
        limit = min(max(limit, 1), self.max_limit)
        found = self._matching(kind, indicator)
        pages = max(1, -(-len(found) // limit))
        for page in range(1, pages + 1):
            self._cache[(kind, indicator, page, limit)] = self._page(found, page, limit)
        return pages

    def _page(self, found: list[OtxUrl], page: int, limit: int) -> bytes:
        start = (page - 1) * limit if page >= 1 else len(found)
        chunk = found[start : start + limit]
        full_size = len(found)
        answer: dict[str, object] = {
            "has_next": start + limit < full_size,
            "actual_size": full_size,
            "url_list": [otx_entry(u) for u in chunk],
            "page_num": page,
            "limit": limit,
            "full_size": full_size if self.full_size_override is None else self.full_size_override,
            "paged": True,
        }
        if self.omit_full_size:
            del answer["full_size"]
        return json.dumps(answer).encode()

    def _json(self, status: int, data: object) -> Reply:
        return Reply(status, list(_OTX_HEADERS), json.dumps(data).encode())

    def pages_requested(self) -> list[int]:
        return [_int(r.param("page"), 1) for r in self.requests]


def _int(raw: str | None, default: int) -> int:
    try:
        return int(raw) if raw not in (None, "") else default
    except ValueError:
        return default


def make_urls(host: str, count: int, *, start_day: int = 0) -> Iterable[OtxUrl]:
    """``count`` distinct URLs on ``host``, one a day going back from 2024-12-31 minus ``start_day``."""
    import datetime as dt

    newest = dt.datetime(2024, 12, 31, 12, 0, 0)
    for i in range(count):
        moment = newest - dt.timedelta(days=start_day + i, seconds=i)
        yield OtxUrl(f"https://{host}/page/{i}?ref={start_day}", moment.strftime("%Y-%m-%dT%H:%M:%S"))
