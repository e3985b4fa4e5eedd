"""A local stand-in for the Internet Archive Wayback CDX server (``/cdx/search/cdx``).

Why this exists: trawl's IA spider must cope with the *exact* bytes web.archive.org sends
(compact JSON rows separated by ``",\\n"``, a header row that follows ``fl``, ``[]`` for
empty results, a bare integer for ``showNumPages``, Java full-match regex filters, the
``from``/``to`` prefix quirk, filter-blind page counts, 403 "Blocked Site Error", flaky
400 on ``showNumPages``, 429/503 bursts ...).  Mocking the HTTP layer would only encode our
own assumptions, so this module re-implements the server side from the recorded samples in
``/work/shared/api-samples/ia_cdx_*.txt`` and the OSS ``CDXServer.java`` /
``FieldRegexFilter.java`` logic, and serves it over real HTTP/1.1 (keep-alive, gzip).

It is also the data source of the crawl benchmark (>= 1M captures on a 2-core box shared
with the crawler), hence the cheap paths: captures live in one sorted list, URL matching is
a bisect, page slices are list slices, rendering is a couple of C-level ``str.join`` calls,
and every rendered body is cached (``prerender``) so a repeated or pre-warmed page costs the
server little more than a ``sendall``.

Public API: :class:`Capture`, :func:`make_capture`, :func:`urlkey_for`, :func:`fake_digest`,
:func:`generate_dataset`, :class:`FakeCdxServer`, :class:`RequestRecord`, the fault helpers
:func:`rate_limited`, :func:`service_unavailable`, :func:`bad_gateway`,
:func:`gateway_timeout`, and the constants below.
"""

from __future__ import annotations

import base64
import bisect
import datetime as _dt
import gc
import gzip
import hashlib
import json
import operator
import random
import re
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from operator import itemgetter
from types import TracebackType
from typing import Literal, NamedTuple
from urllib.parse import parse_qsl, quote_plus, unquote_plus

import surt as _surt

from tests.servers.inflight import Span, SpanRecordingHandler, max_in_flight

__all__ = [
    "BLOCKED_SITE_ERROR",
    "CDX_FIELDS",
    "NO_PAGE",
    "PAGED_QUERY_UNSUPPORTED",
    "Capture",
    "FakeCdxServer",
    "FaultResponse",
    "RequestRecord",
    "bad_gateway",
    "connection_reset",
    "corrupted_body",
    "cut_transfer",
    "fake_digest",
    "gateway_timeout",
    "generate_dataset",
    "make_capture",
    "rate_limited",
    "service_unavailable",
    "truncated_body",
    "urlkey_for",
]

# --------------------------------------------------------------------------------------
# Wire constants (recorded or from the OSS server source; see api-formats.md section a)
# --------------------------------------------------------------------------------------

#: Default ``fl`` of web.archive.org, in output order.
CDX_FIELDS: tuple[str, ...] = (
    "urlkey",
    "timestamp",
    "original",
    "mimetype",
    "statuscode",
    "digest",
    "length",
)
_FIELD_INDEX: dict[str, int] = {name: i for i, name in enumerate(CDX_FIELDS)}

#: Header *and* body of the recorded 403 for an excluded site (edgi cassette, 2020).
BLOCKED_SITE_ERROR = (
    "org.archive.util.io.RuntimeIOException: "
    "org.archive.wayback.exception.AdministrativeAccessControlException: Blocked Site Error"
)
#: ``printError`` text of CDXServer.java when paging is unavailable; used as the default body
#: of the ``num_pages_status``/``page_status`` faults (the live 400 body is not recorded).
PAGED_QUERY_UNSUPPORTED = (
    "Sorry, this server is not configured to support paged query. Remove page= param and try again."
)
#: Key of ``fail_pages``/``html_200_pages``/... for a request without ``page=``.
NO_PAGE = -1

_CT_JSON = "application/json"
_CT_TEXT = "text/plain;charset=UTF-8"
_CT_HTML = "text/html"

# edgi's mock "based on an actual rate-limited response"; IA sends no Retry-After.
_RATE_LIMIT_BODY = (
    b"<html><body><h1>429 Too Many Requests</h1>\n"
    b"You have sent too many requests in a given amount of time.\n</body></html>"
)


def _nginx_page(status: int, reason: str) -> bytes:
    """nginx's stock error page, what IA's front end returns for 502/503/504 under load."""
    return (
        f"<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n"
        f"<center><h1>{status} {reason}</h1></center>\r\n<hr><center>nginx</center>\r\n"
        "</body>\r\n</html>\r\n"
    ).encode()


# A Wayback-branded HTML error page served with *status 200*: the nastiest failure mode
# for a client that only checks the status code before parsing JSON.
_HTML_200_BODY = (
    b'<!DOCTYPE html>\n<html lang="en">\n<head>\n<title>Wayback Machine</title>\n'
    b'</head>\n<body>\n<div id="error">\n<h2>Hrm.</h2>\n'
    b"<p>The Wayback Machine has not archived that URL.</p>\n"
    b"<p>Sorry, the server encountered an error. Please try again later.</p>\n"
    b"</div>\n</body>\n</html>\n"
)

_REASONS: dict[int, str] = {
    200: "OK",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Temporarily Unavailable",
    504: "Gateway Time-out",
}

#: ``(status, body, headers)`` served verbatim by the fault switches.
FaultResponse = tuple[int, bytes, dict[str, str]]


def rate_limited() -> FaultResponse:
    """IA's 429 as far as it is known: ``text/html``, no ``Retry-After``."""
    return (429, _RATE_LIMIT_BODY, {"Content-Type": _CT_HTML})


def service_unavailable() -> FaultResponse:
    """The nginx 503 IA answers when its CDX backends are overloaded."""
    return (503, _nginx_page(503, "Service Temporarily Unavailable"), {"Content-Type": _CT_HTML})


def bad_gateway() -> FaultResponse:
    """nginx 502, seen alongside 503/504 under load (waymore retries all three)."""
    return (502, _nginx_page(502, "Bad Gateway"), {"Content-Type": _CT_HTML})


def gateway_timeout() -> FaultResponse:
    """nginx 504: the CDX backend took too long (typical for huge domain queries)."""
    return (504, _nginx_page(504, "Gateway Time-out"), {"Content-Type": _CT_HTML})


#: Pseudo status of :func:`connection_reset`: no answer at all.
RESET = 0
_CUT_HEADER = "X-Fake-Cut-Transfer"


def connection_reset() -> FaultResponse:
    """The connection is reset before any answer (an overloaded or banning server)."""
    return (RESET, b"", {})


def cut_transfer() -> FaultResponse:
    """A 200 whose body stops half-way, the connection closed under it."""
    return (
        200,
        b"com,example)/ 20200101000000 http://example.com/ text/html 200 X 1\n" * 40,
        {"Content-Type": _CT_TEXT, _CUT_HEADER: "1"},
    )


#: Marker header of the faults below: serve the real page, then spoil its body.
_SPOIL_HEADER = "X-Fake-Spoil"


def truncated_body() -> FaultResponse:
    """Once: the real page, its body cut inside the last row, in a complete HTTP message
    (what a proxy or a server that stops writing leaves): lines that do not split."""
    return (200, b"", {_SPOIL_HEADER: "truncate"})


def corrupted_body() -> FaultResponse:
    """Once: the real page with a field lost in its first row (JSON: a comma), the
    message itself intact: the bytes went wrong, not the transfer."""
    return (200, b"", {_SPOIL_HEADER: "corrupt"})


# --------------------------------------------------------------------------------------
# Captures
# --------------------------------------------------------------------------------------


class Capture(NamedTuple):
    """One CDX line in IA's default field order; every field is the exact output string."""

    urlkey: str
    timestamp: str
    original: str
    mimetype: str
    statuscode: str
    digest: str
    length: str


def urlkey_for(url: str) -> str:
    """IA's SURT ``urlkey`` (``surt`` is a port of IA's own canonicalizer)."""
    return _surt.surt(url)


def fake_digest(*parts: str) -> str:
    """A deterministic 32-char base32 string shaped like IA's SHA-1 payload digest."""
    raw = hashlib.sha1("\x00".join(parts).encode("utf-8")).digest()
    return base64.b32encode(raw).decode("ascii")


def make_capture(
    original: str,
    timestamp: str,
    mimetype: str = "text/html",
    statuscode: str = "200",
    digest: str | None = None,
    length: str = "1234",
) -> Capture:
    """Build a capture whose ``urlkey`` is computed exactly as IA would (SURT)."""
    if len(timestamp) != 14 or not timestamp.isdigit():
        raise ValueError(f"timestamp must be 14 digits: {timestamp!r}")
    return Capture(
        urlkey_for(original),
        timestamp,
        original,
        mimetype,
        statuscode,
        digest if digest is not None else fake_digest(original, timestamp),
        length,
    )


class RequestRecord(NamedTuple):
    """What the server saw, so tests can assert on the client's exact wire behaviour."""

    path: str
    #: Query pairs as decoded by the server (``+`` -> space, ``%2B`` -> ``+``), in order.
    params: list[tuple[str, str]]
    raw_query: str
    headers: dict[str, str]
    time: float  # time.monotonic() at arrival


# --------------------------------------------------------------------------------------
# Query parsing (semantics of CDXServer.getCdx / writeCdxResponse)
# --------------------------------------------------------------------------------------


class _BadRequest(Exception):
    """Rendered as the ``printError`` path: HTTP 400, the message as plain text."""


_MATCH_TYPES = ("exact", "prefix", "host", "domain")
_TRUE = ("true", "1", "on", "yes")
# Fields with few distinct values: memoising their regex result is a large win per page.
_MEMO_FIELDS = (_FIELD_INDEX["mimetype"], _FIELD_INDEX["statuscode"])


@dataclass(frozen=True)
class _Filter:
    """One ``filter=`` term, as FieldRegexFilter.RegexMatch parses it."""

    inverted: bool
    field: int  # -1: whole line (no ``:``, or an unknown field name)
    regex: re.Pattern[str] | None
    contains: str | None


@dataclass
class _Query:
    url: str
    match_type: str
    output_json: bool
    fl: tuple[int, ...]
    filters: list[_Filter]
    collapse: list[tuple[int, int | None]]
    from_: str
    to: str
    limit: int
    offset: int
    page: int | None
    page_size: int  # 0 = server default
    show_num_pages: bool
    show_resume_key: bool
    resume_key: str
    gzip: bool | None


def _first(params: Sequence[tuple[str, str]], name: str) -> str | None:
    """Servlet ``getParameter``: the first value wins."""
    for k, v in params:
        if k == name:
            return v
    return None


def _int_param(params: Sequence[tuple[str, str]], name: str, default: int) -> int:
    raw = _first(params, name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw.strip())
    except ValueError:
        raise _BadRequest(f"Invalid value for {name}: {raw}") from None


def _parse_filter(text: str) -> _Filter:
    """``[~][!]field:regex``; ``~`` = contains; unknown field name = whole line.

    Mirrors FieldRegexFilter.java (the version with ``~``, which does not URL-decode again):
    Java ``matcher.matches()`` is a *full* match, so ``re.fullmatch`` is used.
    """
    contains = False
    if text.startswith("~"):
        text, contains = text[1:], True
    inverted = False
    if text.startswith("!"):
        text, inverted = text[1:], True
    field = -1
    pattern = text
    sep = text.find(":")
    if sep >= 0:
        name, pattern = text[:sep], text[sep + 1 :]
        try:
            field = int(name)
        except ValueError:
            field = _FIELD_INDEX.get(name, -1)
        if field >= len(CDX_FIELDS):
            field = -1
    if contains:
        return _Filter(inverted, field, None, pattern)
    try:
        return _Filter(inverted, field, re.compile(pattern), None)
    except re.error as exc:
        raise _BadRequest(f"java.util.regex.PatternSyntaxException: {exc}") from None


def _parse_query(params: Sequence[tuple[str, str]]) -> _Query:
    url = _first(params, "url")
    if url is None or url == "":
        raise _BadRequest("url parameter is required")

    match_type = _first(params, "matchType")
    if match_type:
        if match_type not in _MATCH_TYPES:
            raise _BadRequest(f"Sorry, matchType={match_type} is not supported by this server")
        # The Java code only strips wildcards when inferring; strip anyway so an explicit
        # matchType plus a wildcard URL (which some clients send) still means the obvious.
        if match_type == "domain" and url.startswith("*."):
            url = url[2:]
        elif match_type == "prefix" and url.endswith("*"):
            url = url[:-1]
    elif url.startswith("*."):  # checked first: "*.example.com/*" is a domain query
        match_type, url = "domain", url[2:]
    elif url.endswith("*"):
        match_type, url = "prefix", url[:-1]
    else:
        match_type = "exact"

    output_json = (_first(params, "output") or "").lower() == "json"

    fl_raw = _first(params, "fl") or ""
    if fl_raw.strip():
        fl_list: list[int] = []
        for name in fl_raw.split(","):
            name = name.strip()
            if name not in _FIELD_INDEX:
                raise _BadRequest(f"Invalid field name in fl: {name}")
            fl_list.append(_FIELD_INDEX[name])
        fl = tuple(fl_list)
    else:
        fl = tuple(range(len(CDX_FIELDS)))

    filters = [_parse_filter(v) for k, v in params if k == "filter" and v != ""]

    collapse: list[tuple[int, int | None]] = []
    for k, v in params:
        if k != "collapse" or v == "":  # waymore sends an empty ``collapse=``
            continue
        name, _, n = v.partition(":")
        if name not in _FIELD_INDEX:
            raise _BadRequest(f"Invalid collapse field: {name}")
        try:
            collapse.append((_FIELD_INDEX[name], int(n) if n else None))
        except ValueError:
            raise _BadRequest(f"Invalid collapse length: {v}") from None

    page_raw = _first(params, "page")
    page: int | None = None
    if page_raw is not None and page_raw.strip() != "":
        page = _int_param(params, "page", 0)
        if page < 0:
            page = None  # CDXServer: "page >= 0" means paged

    gzip_raw = _first(params, "gzip")
    return _Query(
        url=url,
        match_type=match_type,
        output_json=output_json,
        fl=fl,
        filters=filters,
        collapse=collapse,
        from_=(_first(params, "from") or "").strip(),
        to=(_first(params, "to") or "").strip(),
        limit=_int_param(params, "limit", 0),
        offset=max(0, _int_param(params, "offset", 0)),
        page=page,
        page_size=_int_param(params, "pageSize", 0),
        show_num_pages=(_first(params, "showNumPages") or "").lower() in _TRUE,
        show_resume_key=(_first(params, "showResumeKey") or "").lower() in _TRUE,
        # The recorded client double-encodes the key it got back; the server decodes once
        # more (edgi cassette: resumeKey=com%252Ccnn%2529... resumes correctly).
        resume_key=unquote_plus(_first(params, "resumeKey") or ""),
        gzip=None if gzip_raw is None else gzip_raw.lower() in _TRUE,
    )


def _java_urlencode(text: str) -> str:
    """``java.net.URLEncoder.encode(s, "UTF-8")``: space -> ``+``, only ``.-*_`` kept."""
    return quote_plus(text, safe="*").replace("~", "%7E")


def _inc_last_char(text: str) -> str:
    """UrlSurtRangeComputer.incLastChar: ``...5939`` -> ``...593:`` (a real IA quirk)."""
    return text[:-1] + chr(ord(text[-1]) + 1) if text else text


def _line_key(c: Sequence[str]) -> str:
    return c[0] + " " + c[1]


# --------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------

_NEEDS_JSON_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _render_json(rows: Sequence[Sequence[str]], names: Sequence[str], resume: str | None) -> bytes:
    """IA's live JSON: compact rows, ``",\\n"`` between rows, ``]]\\n`` at the end.

    The common case (no quote/backslash/control char anywhere) is two ``str.join`` calls;
    otherwise each row goes through ``json.dumps`` (UTF-8 kept raw, like the Java writer).
    """
    if not rows:
        return b"[]\n"
    header = '["' + '","'.join(names) + '"]'
    if _NEEDS_JSON_ESCAPE.search("".join(map("".join, rows))) is None:
        body = '["' + '"],\n["'.join(map('","'.join, rows)) + '"]'
    else:
        body = ",\n".join(json.dumps(list(r), ensure_ascii=False, separators=(",", ":")) for r in rows)
    tail = ""
    if resume is not None:
        tail = ",\n[],\n[" + json.dumps(resume) + "]"
    return ("[" + header + ",\n" + body + tail + "]\n").encode("utf-8")


def _render_text(rows: Sequence[Sequence[str]], resume: str | None) -> bytes:
    """Space separated lines; empty result = empty body; resume key after a blank line."""
    out = "\n".join(map(" ".join, rows)) + "\n" if rows else ""
    if resume is not None:
        out += "\n" + resume + "\n"
    return out.encode("utf-8")


def _truncate_mid_row(body: bytes, is_json: bool) -> bytes:
    """Cut inside the last row, as a connection dropped mid-transfer would leave it."""
    if is_json:
        start = body.rfind(b",\n[")
        start = start + 2 if start >= 0 else 0
        end = len(body) - 3 if body.endswith(b"]]\n") else len(body)
    else:
        stripped = body.rstrip(b"\n")
        start = stripped.rfind(b"\n") + 1
        end = len(stripped)
    if end <= start:
        return body[: len(body) // 2]
    return body[: start + max(1, (end - start) // 2)]


def _malform(body: bytes, is_json: bool) -> bytes:
    """Syntactically broken but plausible output (a comma lost inside the first data row)."""
    if is_json:
        first = body.find(b"\n[")
        if first < 0:
            return b"[[\n"
        sep = body.find(b'","', first)
        if sep < 0:
            return body[:-2] + b",,]\n"
        return body[:sep] + b'" "' + body[sep + 3 :]
    nl = body.find(b"\n")
    if nl <= 0:
        return b"<<garbage>>\n"
    return body[: body.rfind(b" ", 0, nl)] + body[nl:]  # first line loses its last field


@dataclass
class _Rendered:
    body: bytes
    content_type: str
    gz: bytes | None = None


@dataclass
class _Response:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    drop_connection: bool = False  # send Content-Length of the full body, then close early


# --------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    fake: FakeCdxServer

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that goes away (a killed crawler, a reset) is not a server error."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(SpanRecordingHandler, BaseHTTPRequestHandler):
    """Thin HTTP/1.1 shell; all CDX logic lives in :meth:`FakeCdxServer.handle`."""

    protocol_version = "HTTP/1.1"
    #: When the answer to the current request started out (``time.monotonic()``).
    answered: float = 0.0
    server: _HTTPServer

    def setup(self) -> None:
        self.timeout = self.server.fake.keepalive_timeout
        super().setup()
        # Head and body go out in one write, but NODELAY also guards against the
        # Nagle/delayed-ACK 40 ms stall on keep-alive connections.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: object) -> None:
        """Silence per-request stderr logging (it would dominate benchmark CPU)."""

    def span_log(self) -> list[Span]:
        return self.server.fake.spans

    def _answer(self) -> None:
        try:
            resp = self.server.fake.handle(self.path, dict(self.headers.items()))
        except Exception as exc:  # a bug here must not look like a network failure
            resp = _Response(500, [("Content-Type", _CT_TEXT)], f"fake server error: {exc!r}\n".encode())
        if resp.status == RESET:
            # RST instead of FIN: linger 0, then close without a byte.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        body = resp.body
        head = [f"HTTP/1.1 {resp.status} {_REASONS.get(resp.status, 'Unknown')}"]
        head.append("Server: nginx")
        head.append("Date: " + formatdate(usegmt=True))
        head.extend(f"{k}: {v}" for k, v in resp.headers)
        head.append(f"Content-Length: {len(body)}")
        if resp.drop_connection:
            body = body[: len(body) // 2]
            self.close_connection = True
        head.append("Connection: " + ("close" if self.close_connection else "keep-alive"))
        payload = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        try:
            self.answered = time.monotonic()  # the client can send again from now on
            self.wfile.write(payload)
            if resp.drop_connection:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            self.close_connection = True


class FakeCdxServer:
    """Threaded local IA CDX server.  Use as a context manager::

        with FakeCdxServer(captures, lines_per_page=5) as srv:
            urlopen(srv.endpoint + "?url=*.example.com/*&output=json&page=0")

    Paging model: ``lines_per_page`` index lines form one page at the default (and
    maximum) ``pageSize`` of ``max_page_size`` blocks; a smaller ``pageSize=P`` gives
    ``ceil(lines_per_page * P / max_page_size)`` lines.  Pages cut the URL-matched index
    range *before* ``from``/``to``/``filter``/``collapse``, so filtered pages may be
    short or empty and ``showNumPages`` ignores filters -- like zipnum on archive.org.

    All fault switches are plain attributes and may be changed while the server runs.
    """

    def __init__(
        self,
        captures: Iterable[Capture] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        prefix: str = "/web.archive.org",
        lines_per_page: int = 150_000,
        max_page_size: int = 50,
        gzip_enabled: bool = True,
        gzip_level: int = 1,
        prerender: bool = True,
        log_requests: bool = True,
        keepalive_timeout: float | None = 75.0,
        latency: float = 0.0,
        send_num_pages_header: bool = False,
        blocked: bool = False,
        num_pages_status: int | None = None,
        num_pages_body: bytes = PAGED_QUERY_UNSUPPORTED.encode() + b"\n",
        num_pages_override: int | None = None,
        page_status: int | None = None,
        fail_num_pages: list[FaultResponse] | None = None,
        fail_pages: dict[int, list[FaultResponse]] | None = None,
        html_200_pages: set[int] | None = None,
        truncate_pages: set[int] | None = None,
        truncate_mode: Literal["body", "connection"] = "body",
        malformed_json_pages: set[int] | None = None,
    ) -> None:
        if lines_per_page < 1 or max_page_size < 1:
            raise ValueError("lines_per_page and max_page_size must be >= 1")
        self.host = host
        self.port = port
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        #: Index lines per page at the default ``pageSize``.
        self.lines_per_page = lines_per_page
        self.max_page_size = max_page_size
        #: Honour ``Accept-Encoding: gzip`` (and ``gzip=false``) like the live server.
        self.gzip_enabled = gzip_enabled
        self.gzip_level = gzip_level
        #: Cache every rendered 200 body by (path, sorted query pairs).
        self.prerender = prerender
        self.log_requests = log_requests
        self.keepalive_timeout = keepalive_timeout
        #: Seconds to sleep per request (wall-clock realism without CPU cost).
        self.latency = latency
        #: Add ``X-CDX-Num-Pages`` to paged answers (OSS behaviour, unconfirmed live).
        self.send_num_pages_header = send_num_pages_header
        #: Every request -> 403 "Blocked Site Error".
        self.blocked = blocked
        #: ``showNumPages`` answers this status with ``num_pages_body`` (IA issue #270).
        self.num_pages_status = num_pages_status
        self.num_pages_body = num_pages_body
        #: A wrong page-count hint (the real count is still used to serve pages).
        self.num_pages_override = num_pages_override
        #: Every ``page=`` request answers this status with the printError body.
        self.page_status = page_status
        #: Served in order to ``showNumPages`` requests before the real answer.
        self.fail_num_pages: list[FaultResponse] = list(fail_num_pages or [])
        #: page -> responses served in order before the real page (``NO_PAGE``: unpaged).
        self.fail_pages: dict[int, list[FaultResponse]] = {k: list(v) for k, v in (fail_pages or {}).items()}
        #: Pages answered by a Wayback HTML error page with status 200.
        self.html_200_pages: set[int] = set(html_200_pages or ())
        #: Pages whose body is cut in the middle of the last row.
        self.truncate_pages: set[int] = set(truncate_pages or ())
        #: ``"body"``: short but complete HTTP message; ``"connection"``: full
        #: Content-Length announced, half the bytes sent, socket closed.
        self.truncate_mode: Literal["body", "connection"] = truncate_mode
        #: Pages whose body is syntactically broken (JSON: a lost comma in the first row).
        self.malformed_json_pages: set[int] = set(malformed_json_pages or ())

        #: Thread-safe log of every request (append-only; read it after the calls return).
        self.requests: list[RequestRecord] = []
        #: ``(arrived, answered)`` monotonic times of every request: from the request head read
        #: to the answer starting out (see :meth:`max_in_flight`).
        self.spans: list[Span] = []
        #: Number of bodies actually rendered (cache misses), for cache assertions.
        self.render_count = 0

        self._lock = threading.Lock()
        self._cache: dict[tuple[str, tuple[tuple[str, str], ...]], _Rendered] = {}
        self._captures: list[Capture] = []
        self._keys: list[str] = []
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.set_captures(captures)

    # ---- data -------------------------------------------------------------------------

    def set_captures(self, captures: Iterable[Capture]) -> None:
        """Replace the index (sorted by urlkey, timestamp) and drop the render cache."""
        caps = list(captures)
        # "urlkey timestamp" orders exactly like (urlkey, timestamp) because urlkeys hold no
        # character below " "; a stable sort keeps the given order of equal keys (duplicates).
        line_keys = [c[0] + " " + c[1] for c in caps]
        if not all(map(operator.le, line_keys, line_keys[1:])):
            caps.sort(key=_line_key)
        self._captures = caps
        self._keys = [c[0] for c in caps]
        self.clear_cache()

    @property
    def captures(self) -> list[Capture]:
        """The sorted index (do not mutate; use :meth:`set_captures`)."""
        return self._captures

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()
            self.spans.clear()

    def max_in_flight(self) -> int:
        """The most requests this server was answering at one time."""
        return max_in_flight(list(self.spans))

    def pages_requested(self) -> list[int | None]:
        """``page`` of each logged CDX request, in arrival order (None = unpaged)."""
        out: list[int | None] = []
        for rec in list(self.requests):
            raw = _first(rec.params, "page")
            out.append(int(raw) if raw not in (None, "") and raw.lstrip("-").isdigit() else None)
        return out

    # ---- lifecycle --------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/web.archive.org`` (prefix included)."""
        return f"http://{self.host}:{self.port}{self.prefix}"

    @property
    def endpoint(self) -> str:
        return self.base_url + "/cdx/search/cdx"

    @property
    def endpoint_path(self) -> str:
        return self.prefix + "/cdx/search/cdx"

    def start(self) -> FakeCdxServer:
        if self._httpd is not None:
            return self
        httpd = _HTTPServer((self.host, self.port), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name=f"FakeCdxServer:{self.port}",
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
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeCdxServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ---- query engine -----------------------------------------------------------------

    def _ranges(self, q: _Query) -> list[tuple[int, int]]:
        """Index ranges of the URL match, in index order (bisect: O(log n))."""
        keys = self._keys
        if q.match_type == "exact":
            key = urlkey_for(q.url)
            return [(bisect.bisect_left(keys, key), bisect.bisect_right(keys, key))]
        if q.match_type == "prefix":
            return [self._prefix_range(urlkey_for(q.url))]
        host_key = urlkey_for(q.url).split(")", 1)[0]
        if q.match_type == "host":
            return [self._prefix_range(host_key + ")/")]
        # domain: the host itself or any sub-host (",": "com,example,blog)")
        return [self._prefix_range(host_key + ")"), self._prefix_range(host_key + ",")]

    def _prefix_range(self, prefix: str) -> tuple[int, int]:
        keys = self._keys
        lo = bisect.bisect_left(keys, prefix)
        hi = bisect.bisect_left(keys, prefix[:-1] + chr(ord(prefix[-1]) + 1), lo)
        return lo, hi

    def _page_lines(self, page_size: int) -> int:
        ps = page_size if 0 < page_size <= self.max_page_size else self.max_page_size
        return max(1, -(-self.lines_per_page * ps // self.max_page_size))

    def num_pages(self, params: Sequence[tuple[str, str]] | Mapping[str, str]) -> int:
        """The true page count for a query (filters ignored), without any override."""
        pairs = list(params.items()) if isinstance(params, Mapping) else list(params)
        return self._num_pages(_parse_query(pairs))

    def _num_pages(self, q: _Query) -> int:
        total = sum(hi - lo for lo, hi in self._ranges(q))
        # zipnum always touches the block holding the start key: >= 1 page.
        return max(1, -(-total // self._page_lines(q.page_size)))

    def _select(self, q: _Query) -> tuple[list[Sequence[str]], str | None]:
        """Run the query: rows in output (fl) form and the resume key, if one is printed."""
        caps = self._captures
        ranges = self._ranges(q)
        if q.page is not None:
            per = self._page_lines(q.page_size)
            ranges = _slice_ranges(ranges, q.page * per, (q.page + 1) * per)
        if q.resume_key:
            rk = q.resume_key
            ranges = [(bisect.bisect_left(caps, rk, lo, hi, key=_line_key), hi) for lo, hi in ranges]

        rows: list[Sequence[str]]
        resume: str | None = None
        if not (q.filters or q.collapse or q.from_ or q.to or q.limit or q.offset):
            # Fast path: the page is a list slice.
            if len(ranges) == 1:
                rows = caps[ranges[0][0] : ranges[0][1]]
            else:
                rows = [c for lo, hi in ranges for c in caps[lo:hi]]
        else:
            rows, resume = self._scan(q, ranges)

        if q.fl != tuple(range(len(CDX_FIELDS))):
            if len(q.fl) == 1:
                i = q.fl[0]
                rows = [(c[i],) for c in rows]
            else:
                get = itemgetter(*q.fl)
                rows = [get(c) for c in rows]
        return rows, resume

    def _scan(self, q: _Query, ranges: list[tuple[int, int]]) -> tuple[list[Sequence[str]], str | None]:
        """The writeCdxResponse loop: offset, from/to, filters, collapse, limit, resume key."""
        caps = self._captures
        frm, to = q.from_, q.to
        tests = [_compile_filter(f) for f in q.filters]
        collapse = q.collapse
        last_collapse: tuple[str, ...] | None = None
        write_limit = q.limit if q.limit > 0 else 0
        tail: deque[Capture] | None = deque(maxlen=-q.limit) if q.limit < 0 else None
        offset = q.offset
        out: list[Sequence[str]] = []
        last_read: Capture | None = None
        done = False
        for lo, hi in ranges:
            if done:
                break
            for i in range(lo, hi):
                if write_limit and len(out) >= write_limit:
                    done = True
                    break
                c = caps[i]
                last_read = c
                if offset:
                    offset -= 1
                    continue
                ts = c[1]
                if frm and ts < frm:
                    continue
                if to and ts > to and not ts.startswith(to):
                    continue
                if tests and not all(t(c) for t in tests):
                    continue
                if collapse:
                    ck = tuple(c[f][:n] if n is not None else c[f] for f, n in collapse)
                    if ck == last_collapse:
                        continue
                    last_collapse = ck
                if tail is not None:
                    tail.append(c)
                else:
                    out.append(c)
        if tail is not None:
            return list(tail), None
        resume = None
        if q.show_resume_key and last_read is not None and write_limit and len(out) >= write_limit:
            resume = _java_urlencode(last_read[0] + " " + _inc_last_char(last_read[1]))
        return out, resume

    # ---- HTTP -------------------------------------------------------------------------

    def handle(self, path_qs: str, headers: Mapping[str, str]) -> _Response:
        """Answer one GET (called from the handler thread; also usable without sockets)."""
        path, _, raw_query = path_qs.partition("?")
        params = parse_qsl(raw_query, keep_blank_values=True, errors="replace")
        if self.log_requests:
            rec = RequestRecord(path, params, raw_query, dict(headers), time.monotonic())
            with self._lock:
                self.requests.append(rec)
        if self.latency:
            time.sleep(self.latency)

        if path != self.endpoint_path:
            return _Response(404, [("Content-Type", _CT_HTML)], _nginx_page(404, "Not Found"))
        if self.blocked:
            return _Response(
                403,
                [
                    ("Content-Type", _CT_TEXT),
                    ("X-Archive-Wayback-Runtime-Error", BLOCKED_SITE_ERROR),
                    ("X-ts", "403"),
                ],
                BLOCKED_SITE_ERROR.encode(),
            )
        try:
            q = _parse_query(params)
        except _BadRequest as exc:
            return self._plain(400, (str(exc) + "\n").encode())

        accept = _header(headers, "accept-encoding").lower()
        use_gzip = self.gzip_enabled and (q.gzip if q.gzip is not None else "gzip" in accept)

        if q.show_num_pages:
            fault = self._pop(self.fail_num_pages)
            if fault is not None:
                return self._fault(fault)
            if self.num_pages_status is not None:
                return self._plain(self.num_pages_status, self.num_pages_body)
            n = self.num_pages_override
            if n is None:
                n = self._num_pages(q)
            return self._finish(200, _CT_TEXT, f"{n}\n".encode(), None, use_gzip, [])

        page_key = q.page if q.page is not None else NO_PAGE
        queue = self.fail_pages.get(page_key)
        spoil = ""
        if queue:
            fault = self._pop(queue)
            if fault is not None:
                spoil = fault[2].get(_SPOIL_HEADER, "")
                if not spoil:
                    return self._fault(fault)
        if q.page is not None and self.page_status is not None:
            return self._plain(self.page_status, PAGED_QUERY_UNSUPPORTED.encode() + b"\n")
        if page_key in self.html_200_pages:
            return _Response(
                200, [("Content-Type", "text/html; charset=utf-8"), *_IA_HEADERS], _HTML_200_BODY
            )

        extra: list[tuple[str, str]] = []
        if q.page is not None and self.send_num_pages_header:
            extra.append(("X-CDX-Num-Pages", str(self._num_pages(q))))

        truncate = page_key in self.truncate_pages or spoil == "truncate"
        malformed = page_key in self.malformed_json_pages or spoil == "corrupt"
        if truncate or malformed:  # faults are never cached
            rendered = self._render(q)
            body = rendered.body
            if malformed:
                body = _malform(body, q.output_json)
            if truncate and (self.truncate_mode == "body" or spoil):
                body = _truncate_mid_row(body, q.output_json)
            resp = self._finish(200, rendered.content_type, body, None, use_gzip, extra)
            resp.drop_connection = truncate and self.truncate_mode == "connection" and not spoil
            return resp

        if not self.prerender:
            rendered = self._render(q)
            return self._finish(200, rendered.content_type, rendered.body, None, use_gzip, extra)
        key = (path, tuple(sorted(params)))
        rendered_or_none = self._cache.get(key)
        if rendered_or_none is None:
            rendered_or_none = self._render(q)
            self._cache[key] = rendered_or_none
        return self._finish_cached(rendered_or_none, use_gzip, extra)

    def _render(self, q: _Query) -> _Rendered:
        rows, resume = self._select(q)
        with self._lock:
            self.render_count += 1
        if q.output_json:
            names = [CDX_FIELDS[i] for i in q.fl]
            return _Rendered(_render_json(rows, names, resume), _CT_JSON)
        return _Rendered(_render_text(rows, resume), _CT_TEXT)

    def prerender_pages(
        self, params: Sequence[tuple[str, str]] | Mapping[str, str], gzip_too: bool = True
    ) -> int:
        """Render every page ``0..numPages-1`` of ``params`` (without ``page``) into the cache.

        The cache key is the *sorted* query pairs, so the crawler may send the parameters in
        any order and still hit it; ``gzip_too`` also pre-compresses for Accept-Encoding:
        gzip.  Returns the number of pages rendered.
        """
        pairs = list(params.items()) if isinstance(params, Mapping) else list(params)
        pairs = [(k, v) for k, v in pairs if k != "page"]
        n = self._num_pages(_parse_query(pairs))
        for page in range(n):
            page_pairs = pairs + [("page", str(page))]
            q = _parse_query(page_pairs)
            key = (self.endpoint_path, tuple(sorted(page_pairs)))
            rendered = self._cache.get(key) or self._render(q)
            if gzip_too and rendered.gz is None:
                rendered.gz = gzip.compress(rendered.body, self.gzip_level, mtime=0)
            self._cache[key] = rendered
        return n

    def _finish_cached(self, r: _Rendered, use_gzip: bool, extra: list[tuple[str, str]]) -> _Response:
        if use_gzip and r.gz is None:
            r.gz = gzip.compress(r.body, self.gzip_level, mtime=0)
        return self._finish(200, r.content_type, r.body, r.gz, use_gzip, extra)

    def _finish(
        self,
        status: int,
        content_type: str,
        body: bytes,
        gz: bytes | None,
        use_gzip: bool,
        extra: list[tuple[str, str]],
    ) -> _Response:
        headers = [("Content-Type", content_type), *_IA_HEADERS, ("x-ts", str(status)), *extra]
        if use_gzip:
            body = gz if gz is not None else gzip.compress(body, self.gzip_level, mtime=0)
            headers.append(("Content-Encoding", "gzip"))
        return _Response(status, headers, body)

    def _plain(self, status: int, body: bytes) -> _Response:
        """The printError path: plain text, no gzip."""
        return _Response(status, [("Content-Type", _CT_TEXT), *_IA_HEADERS, ("x-ts", str(status))], body)

    def _fault(self, fault: FaultResponse) -> _Response:
        status, body, hdrs = fault
        cut = _CUT_HEADER in hdrs
        hdrs = {k: v for k, v in hdrs.items() if k != _CUT_HEADER}
        headers = list(hdrs.items())
        if not any(k.lower() == "content-type" for k, _ in headers):
            headers.insert(0, ("Content-Type", _CT_HTML))
        return _Response(status, headers, body, drop_connection=cut)

    def _pop(self, queue: list[FaultResponse]) -> FaultResponse | None:
        with self._lock:
            return queue.pop(0) if queue else None


_IA_HEADERS: tuple[tuple[str, str], ...] = (
    ("x-app-server", "wwwb-app240"),
    ("X-location", "cdx"),
    ("X-RL", "0"),
    ("X-NA", "0"),
    ("X-Page-Cache", "BYPASS"),
    ("X-NID", "-"),
    ("Referrer-Policy", "no-referrer-when-downgrade"),
    ("Permissions-Policy", "interest-cohort=()"),
)


def _header(headers: Mapping[str, str], name: str) -> str:
    for k, v in headers.items():
        if k.lower() == name:
            return v
    return ""


def _slice_ranges(ranges: list[tuple[int, int]], start: int, stop: int) -> list[tuple[int, int]]:
    """Lines ``[start, stop)`` of the concatenation of ``ranges``."""
    out: list[tuple[int, int]] = []
    pos = 0
    for lo, hi in ranges:
        n = hi - lo
        a, b = max(start - pos, 0), min(stop - pos, n)
        if a < b:
            out.append((lo + a, lo + b))
        pos += n
        if pos >= stop:
            break
    return out


def _compile_filter(f: _Filter) -> Callable[[Capture], bool]:
    """A fast predicate for one filter; low-cardinality fields memoise the regex result."""
    inv = f.inverted
    if f.contains is not None:
        needle = f.contains
        if f.field < 0:
            return lambda c: (needle in " ".join(c)) != inv
        idx = f.field
        return lambda c: (needle in c[idx]) != inv
    assert f.regex is not None
    full = f.regex.fullmatch
    if f.field < 0:
        return lambda c: (full(" ".join(c)) is not None) != inv
    idx = f.field
    if idx in _MEMO_FIELDS:
        memo: dict[str, bool] = {}

        def test(c: Capture) -> bool:
            v = c[idx]
            r = memo.get(v)
            if r is None:
                r = memo[v] = (full(v) is not None) != inv
            return r

        return test
    return lambda c: (full(c[idx]) is not None) != inv


# --------------------------------------------------------------------------------------
# Synthetic data for tests and the benchmark
# --------------------------------------------------------------------------------------

_SECTIONS = ("news", "blog", "products", "about", "support", "docs", "en/us", "static")
_SLUGS = ("index", "welcome", "contact", "pricing", "release-notes", "faq", "team", "careers")
# (path template, base mimetype); weighted by repetition, most of a site is HTML.
_KINDS: tuple[tuple[str, str], ...] = (
    ("/{sec}/{slug}-{i}.html", "text/html"),
    ("/{sec}/{slug}-{i}.html", "text/html"),
    ("/{sec}/{slug}-{i}.html", "text/html"),
    ("/{sec}/{i}/", "text/html"),
    ("/{sec}/{i}/", "text/html"),
    ("/{sec}/{slug}-{i}", "text/html"),
    ("/{sec}/{slug}-{i}", "text/html"),
    ("/assets/js/app.{x}.js", "application/javascript"),
    ("/assets/css/style-{i}.css", "text/css"),
    ("/img/{sec}/photo_{i}.jpg", "image/jpeg"),
    ("/img/icon-{i}.png", "image/png"),
    ("/img/logo-{i}.svg", "image/svg+xml"),
    ("/api/v1/items?id={i}", "application/json"),
    ("/search?q=term{i}&page=2", "text/html"),  # unsorted query: urlkey sorts it
    ("/Downloads/Guide-{i}.PDF", "application/pdf"),  # upper case: urlkey lower-cases
    ("/feeds/{i}.xml", "text/xml"),
)


# Random byte -> base32 letter (256 % 32 == 0, so uniform): 32 random bytes give a valid
# 32-char base32 digest at C speed (base64.b32encode is pure Python, ~5 us a call).
_B32_TABLE = bytes(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"[i % 32] for i in range(256))


def _host_key(host: str) -> str:
    """SURT host part, as ``surt`` computes it for the hosts generated below."""
    if host.startswith("www."):
        host = host[4:]
    return ",".join(reversed(host.split(".")))


def _path_key(path: str) -> str:
    """SURT path+query for the generated paths: lower-case, trailing ``/`` dropped
    (root keeps it), query arguments sorted."""
    p, _, q = path.partition("?")
    p = p.lower()
    if len(p) > 1 and p.endswith("/"):
        p = p[:-1]
    if q:
        return p + "?" + "&".join(sorted(q.lower().split("&")))
    return p


def generate_dataset(
    n_captures: int, n_distinct: int, domain: str = "example.com", seed: int = 0
) -> list[Capture]:
    """Deterministic synthetic index: ``n_captures`` lines over ``n_distinct`` urlkeys.

    Why synthetic and shaped like this: the crawler's dedup/normalisation/scope code must be
    exercised by what IA really returns for a domain -- many captures per URL (skewed: a few
    URLs have hundreds), ``http``/``https`` and explicit ``:80``/``:443`` variants and
    ``www.`` of the same urlkey, several sub-domains, redirects/404s/revisits (``-`` status,
    ``warc/revisit``), exact duplicate lines (seen in recordings), upper-case paths and
    unsorted queries whose urlkey differs from the original, and ~1% out-of-scope hosts
    (``not<domain>``, ``<domain>.evil.net``) that a domain query must not return.

    Returns the captures sorted by (urlkey, timestamp).  urlkeys are computed by a fast
    equivalent of :func:`urlkey_for` valid for these generated URLs (``surt`` itself would
    take ~20 us per URL); the test-suite cross-checks the two.  1M captures take a few s.
    """
    if n_distinct < 1 or n_captures < n_distinct:
        raise ValueError("need 1 <= n_distinct <= n_captures")
    # Millions of new tuples would trigger ~2 s of pointless cyclic-GC passes.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _generate(n_captures, n_distinct, domain, seed)
    finally:
        if was_enabled:
            gc.enable()


def _generate(n_captures: int, n_distinct: int, domain: str, seed: int) -> list[Capture]:
    rng = random.Random(seed)
    rand = rng.random
    bits = rng.getrandbits
    randbytes = rng.randbytes
    pool, pos = "", 0  # base32 digests are sliced from a big pre-translated random string

    subs = ("", "", "", "", "", "blog.", "shop.", "api.", "m.", "docs.", "static.cdn.")
    hosts_in: list[tuple[tuple[str, ...], str]] = []
    for sub in (*subs, "dev.staging."):
        names = (domain, "www." + domain) if sub == "" else (sub + domain,)
        hosts_in.append((names, _host_key(names[0])))
    hosts_out: list[tuple[tuple[str, ...], str]] = [
        (("not" + domain,), _host_key("not" + domain)),
        ((domain + ".evil.net",), _host_key(domain + ".evil.net")),
    ]
    # The SURT of a generated path is the same template with the SURT rules applied,
    # because every substituted value is lower-case and free of "/", "?" and "&".
    kinds = [(tpl, _path_key(tpl), mime) for tpl, mime in _KINDS]

    # Which URLs get the extra captures: skewed toward a few popular URLs.
    counts = [1] * n_distinct
    for _ in range(n_captures - n_distinct):
        counts[int(n_distinct * rand() ** 3)] += 1

    # URL specs, sorted by urlkey so captures come out sorted without a 1M-element sort.
    specs: list[tuple[str, tuple[str, ...], str, str, int]] = []
    n_kinds, n_in, n_sec, n_slug = len(kinds), len(hosts_in), len(_SECTIONS), len(_SLUGS)
    for i in range(n_distinct):
        r = bits(32)
        names, hkey = hosts_out[r & 1] if (r >> 1) % 100 == 0 else hosts_in[(r >> 8) % n_in]
        tpl, key_tpl, mime = kinds[(r >> 12) % n_kinds]
        sec, slug = _SECTIONS[(r >> 16) % n_sec], _SLUGS[(r >> 20) % n_slug]
        x = f"{i:x}"
        specs.append(
            (
                hkey + ")" + key_tpl.format(sec=sec, slug=slug, i=i, x=x),
                names,
                tpl.format(sec=sec, slug=slug, i=i, x=x),
                mime,
                counts[i],
            )
        )
    specs.sort(key=itemgetter(0))

    start = _dt.date(1996, 1, 1)
    days = [
        (start + _dt.timedelta(days=d)).strftime("%Y%m%d")
        for d in range((_dt.date(2024, 12, 31) - start).days + 1)
    ]
    secs = [f"{h:02d}{m:02d}{s:02d}" for h in range(24) for m in range(60) for s in range(60)]
    n_days, n_secs = len(days), len(secs)
    lengths = [str(int(200 + 150_000 * rand() ** 4)) for _ in range(2048)]
    # (scheme, host index, port) by 5 random bits: https 7/16, http 6/16, :80 2/16, :443 1/16;
    # host index 1 (www.) only exists for the bare domain.
    schemes = ["https://"] * 7 + ["http://"] * 5 + ["http://"] * 2 + ["https://", "http://"]
    ports = [""] * 12 + [":80", ":80", ":443", ""]
    b32 = _B32_TABLE
    new = tuple.__new__
    out: list[Capture] = []
    append = out.append

    for urlkey, names, path, mime, k in specs:
        if k == 1:
            b = bits(64)
            draws: Iterable[tuple[str, int]] = ((days[b % n_days] + secs[(b >> 16) % n_secs], b),)
        else:
            draws = sorted([(days[(b := bits(64)) % n_days] + secs[(b >> 16) % n_secs], b) for _ in range(k)])
        if pos >= len(pool):
            pool, pos = randbytes(1 << 21).translate(b32).decode(), 0
        digest, pos = pool[pos : pos + 32], pos + 32
        length = lengths[(b >> 49) & 2047]
        www = len(names) > 1
        originals: dict[int, str] = {}
        prev: Capture | None = None
        for ts, b in draws:
            s = (b >> 41) & 0xFF
            if s == 255 and prev is not None:  # an exact duplicate line
                append(prev)
                continue
            v = (b >> 33) & (31 if www else 15)
            orig = originals.get(v)
            if orig is None:
                sch = v & 15
                orig = originals[v] = schemes[sch] + names[v >> 4] + ports[sch] + path
            if (b >> 60) < 5:  # content changed since the previous capture
                if pos >= len(pool):
                    pool, pos = randbytes(1 << 21).translate(b32).decode(), 0
                digest, pos = pool[pos : pos + 32], pos + 32
                length = lengths[(b >> 49) & 2047]
            if s < 220:
                cap = new(Capture, (urlkey, ts, orig, mime, "200", digest, length))
            elif s < 230:
                cap = new(Capture, (urlkey, ts, orig, "text/html", "301", digest, "412"))
            elif s < 236:
                cap = new(Capture, (urlkey, ts, orig, "text/html", "302", digest, "398"))
            elif s < 244:
                cap = new(Capture, (urlkey, ts, orig, "text/html", "404", digest, "1043"))
            elif s < 250:
                cap = new(Capture, (urlkey, ts, orig, "warc/revisit", "-", digest, "532"))
            elif s < 253:
                cap = new(Capture, (urlkey, ts, orig, "text/html", "503", digest, "611"))
            else:
                cap = new(Capture, (urlkey, ts, orig, "unk", "200", digest, length))
            append(cap)
            prev = cap
    return out
