"""A local stand-in for Common Crawl's index server (index.commoncrawl.org).

Why this exists: the commoncrawl spider must cope with the exact bytes Common
Crawl sends, and tests never touch the real host. The server side is rebuilt
here from the recorded samples (``tests/data/cc_*.txt``, copied verbatim from
the cdx_toolkit recordings of September 2025) and from pywb itself, which is
what the index server runs (``commoncrawl/cc-index-server``: pywb, ZipNum
indexes, ``max_blocks: 5``):

* ``GET /collinfo.json``: the crawl list, pretty-printed (2-space indent,
  ``application/json``), newest first; by default the recorded file verbatim
  (115 crawls), whose ``cdx-api`` URLs name the real host.
* ``GET /<crawl id>-index?url=...``: one CDX endpoint per crawl, with pywb's
  semantics: ``url`` shapes and ``matchType`` through pywb's own
  ``calc_search_range`` (SURT, ``www.`` folded), ``output=json`` NDJSON with
  Python ``json.dumps`` separators (``text/x-ndjson``), CDXJ otherwise
  (``text/x-cdxj``), ``fl``, ``filter=[!][=|~]field:value`` (``=`` exact,
  ``~`` ``re.match``, none: substring; IA field names as aliases), ``from`` /
  ``to`` padded like pywb, ``limit``.
* Paging exactly as pywb's ZipNum source computes it (``compute_page_range``):
  the index is cut into blocks of ``lines_per_block`` lines, a page is
  ``pageSize`` blocks (default ``max_blocks`` = 5), ``showNumPages=true`` is
  ``{"pages": N, "pageSize": 5, "blocks": B}`` (no newline, ``text/x-cdxj``), a
  request without ``page`` is page 0, a page out of range is ``400
  {"message": "Page N invalid: First Page is 0, Last Page is M"}``.
* Nothing left (no match, or filters / ``from`` / ``to`` emptied the page):
  ``404 {"message": "No Captures found for: ..."}`` (``application/json;
  charset=utf-8``), where pywb 2.10 answers 200 with an empty body.

Fault switches (plain attributes, changeable while the server runs):
``collinfo_faults`` and ``index_faults`` serve canned answers in order before
the real one; helpers build the real shapes: :func:`service_unavailable`
(503, how the server says "slow down"), :func:`gateway_timeout` (the recorded
nginx 504), :func:`html_200`, :func:`malformed_ndjson`,
:func:`malformed_collinfo`. Every request is logged (:attr:`requests`).

:class:`CollinfoFront` serves ``collinfo.json`` in front of real pywb
instances, so the spider can be run against pywb under one base URL.
"""

from __future__ import annotations

import base64
import bisect
import gzip
import hashlib
import json
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

from pywb.utils.canonicalize import calc_search_range, canonicalize
from pywb.warcserver.index.cdxobject import CDXObject

from tests.servers.inflight import Span, SpanRecordingHandler, max_in_flight

__all__ = [
    "COUNT",
    "MAX_BLOCKS",
    "RECORDED_COLLINFO",
    "CollinfoFront",
    "FakeCommonCrawl",
    "RequestRecord",
    "cc_record",
    "collinfo_body",
    "collinfo_entry",
    "gateway_timeout",
    "html_200",
    "malformed_collinfo",
    "malformed_ndjson",
    "recorded_collinfo",
    "service_unavailable",
]

DATA = Path(__file__).resolve().parents[1] / "data"

#: Key of ``index_faults`` for the ``showNumPages`` request of a crawl.
COUNT = "count"
#: The ZipNum ``max_blocks`` of cc-index-server's config: the default ``pageSize``.
MAX_BLOCKS = 5

_CT_JSON = "application/json"
_CT_ERROR = "application/json; charset=utf-8"
_CT_NDJSON = "text/x-ndjson"
_CT_CDXJ = "text/x-cdxj"
_CT_HTML = "text/html"
_SERVER = "nginx/1.29.1"
PAD_14_DOWN = "10000101000000"
PAD_14_UP = "29991231235959"

_REASONS = {
    200: "OK",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Temporarily Unavailable",
    504: "Gateway Time-out",
}

#: ``(status, body, headers)``, served verbatim.
FaultResponse = tuple[int, bytes, dict[str, str]]


def _recorded_body(name: str) -> bytes:
    raw = (DATA / name).read_bytes()
    marker = raw.index(b"# ---- body")
    return raw[raw.index(b"\n", marker) + 1 :]


#: The recorded ``collinfo.json`` body, byte for byte.
RECORDED_COLLINFO = _recorded_body("cc_collinfo.json.txt")


def recorded_collinfo() -> list[dict[str, str]]:
    return json.loads(RECORDED_COLLINFO)


def collinfo_body(entries: Sequence[Mapping[str, str]]) -> bytes:
    """How the server prints the list (``json.dumps(indent=2)`` and a newline: the recorded bytes)."""
    return (json.dumps(list(entries), indent=2) + "\n").encode("utf-8")


def collinfo_entry(crawl_id: str, start: str, end: str, name: str = "") -> dict[str, str]:
    """One crawl as collinfo.json lists it; ``start``/``end`` as ``2025-08-02T22:09:07``.

    The URLs name the real host, as they do on any mirror: clients must not follow them.
    """
    return {
        "id": crawl_id,
        "name": name or f"{crawl_id} Index",
        "timegate": f"https://index.commoncrawl.org/{crawl_id}/",
        "cdx-api": f"https://index.commoncrawl.org/{crawl_id}-index",
        "from": start,
        "to": end,
    }


# --- faults ----------------------------------------------------------------------------------


def _nginx_page(status: int) -> bytes:
    reason = _REASONS.get(status, "Error")
    return (
        f"<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n"
        f"<center><h1>{status} {reason}</h1></center>\r\n<hr><center>{_SERVER}</center>\r\n"
        "</body>\r\n</html>\r\n"
    ).encode()


def service_unavailable() -> FaultResponse:
    """The 503 the index server answers clients that go too fast (body not recorded: nginx's)."""
    return (503, _nginx_page(503), {"Content-Type": _CT_HTML})


def gateway_timeout() -> FaultResponse:
    """The recorded nginx 504 of an overloaded index server."""
    return (504, _recorded_body("cc_index_504_gateway_timeout.txt"), {"Content-Type": _CT_HTML})


def html_200() -> FaultResponse:
    """An HTML page with status 200 (a captive portal, a proxy's error page)."""
    body = (
        b"<!DOCTYPE html>\n<html><head><title>Common Crawl</title></head>\n<body>Maintenance</body></html>\n"
    )
    return (200, body, {"Content-Type": "text/html; charset=utf-8"})


def malformed_ndjson() -> FaultResponse:
    """An NDJSON page cut in the middle of its only line."""
    body = b'{"urlkey": "com,example)/", "timestamp": "2025080'
    return (200, body, {"Content-Type": _CT_NDJSON})


def malformed_collinfo() -> FaultResponse:
    """collinfo.json cut short in transfer."""
    return (200, RECORDED_COLLINFO[:700], {"Content-Type": _CT_JSON})


# --- captures --------------------------------------------------------------------------------


def _digest(*parts: str) -> str:
    return base64.b32encode(hashlib.sha1("\x00".join(parts).encode()).digest()).decode()


def cc_record(
    url: str,
    timestamp: str,
    *,
    status: str | int = "200",
    mime: str = "text/html",
    crawl: str = "CC-MAIN-2025-33",
    redirect: str | None = None,
    urlkey: str | None = None,
) -> dict[str, str]:
    """One capture, with the keys, key order and value shapes of Common Crawl's NDJSON lines.

    ``urlkey``: the SURT key, if the caller computed it already (pywb's
    canonicalizer is most of the cost when a benchmark builds 100,000 records).
    """
    if len(timestamp) != 14 or not timestamp.isdigit():
        raise ValueError(f"timestamp must be 14 digits: {timestamp!r}")
    status = str(status)
    digest = _digest(url, timestamp, status)
    number = int(hashlib.sha1(digest.encode()).hexdigest()[:8], 16)
    folder = "warc" if status == "200" else "crawldiagnostics"
    if url.endswith("/robots.txt"):
        folder = "robotstxt"
    record = {
        "urlkey": urlkey if urlkey is not None else canonicalize(url),
        "timestamp": timestamp,
        "url": url,
        "mime": mime,
        "mime-detected": mime,
        "status": status,
        "digest": digest,
        "length": str(500 + number % 20000),
        "offset": str(number % 900_000_000),
        "filename": (
            f"crawl-data/{crawl}/segments/1754151279781.{number % 100:02d}/{folder}/"
            f"CC-MAIN-{timestamp[:10]}0000-{timestamp[:10]}3340-{number % 1000:05d}.warc.gz"
        ),
    }
    if status.startswith("3"):
        record["redirect"] = redirect or url.split("?", 1)[0]
    elif status == "200" and mime == "text/html":
        record["languages"] = "eng"
        record["encoding"] = "UTF-8"
    return record


def _cdxj_line(record: Mapping[str, str]) -> str:
    rest = {k: v for k, v in record.items() if k not in ("urlkey", "timestamp")}
    return f"{record['urlkey']} {record['timestamp']} {json.dumps(rest)}"


class _BadRequest(Exception):
    """pywb's CDXException: 400 with ``{"message": ...}``."""


@dataclass
class _Query:
    url: str
    key: str
    end_key: str
    page: int
    page_size: int
    count: bool
    output_json: bool
    fl: list[str] | None
    filters: list[tuple[bool, str, str, Any]]
    from_: str
    to: str
    limit: int


def _parse_query(params: Sequence[tuple[str, str]], max_blocks: int) -> _Query:
    """CDXQuery + the CDX handler's parameter reading, as pywb does it."""
    values: dict[str, str] = {}
    filters = []
    for name, value in params:
        if name == "filter":
            filters.append(_parse_filter(value))
        else:
            values.setdefault(name, value)
    url = values.get("url")
    if not url:
        raise _BadRequest('The "url" param is required')
    match_type = values.get("matchType")
    if not match_type:
        if url.startswith("*."):
            url, match_type = url[2:], "domain"
        elif url.endswith("*"):
            url, match_type = url[:-1], "prefix"
        else:
            match_type = "exact"
    try:
        key, end_key = calc_search_range(url=url, match_type=match_type)
    except Exception as exc:  # pywb's UrlCanonicalizeException
        raise _BadRequest(str(exc)) from None
    try:
        page = int(values.get("page", "0"))
    except ValueError:
        raise _BadRequest(f"Invalid value for page= param: {values['page']}") from None
    try:
        page_size = int(values.get("pageSize") or 0) or max_blocks
    except ValueError:
        raise _BadRequest(f"Invalid value for pageSize= param: {values['pageSize']}") from None
    from_ = values.get("from") or values.get("from_ts") or ""
    to = values.get("to") or ""
    if from_ and len(from_) < 14:
        from_ += PAD_14_DOWN[len(from_) :]
    if to and len(to) < 14:
        to += PAD_14_UP[len(to) :]
    fl = [f for f in values["fl"].split(",") if f] if values.get("fl") else None
    return _Query(
        url=url,
        key=key,
        end_key=end_key,
        page=page,
        page_size=page_size,
        count=values.get("showNumPages", "").lower() in ("true", "1", "on"),
        output_json=values.get("output") == "json",
        fl=fl,
        filters=filters,
        from_=from_,
        to=to,
        limit=int(values.get("limit") or 100000),
    )


def _parse_filter(text: str) -> tuple[bool, str, str, Any]:
    """``[!][=|~]field:value`` -> (invert, mode, field, value or regex), as pywb's CDXFilter."""
    invert = text.startswith("!")
    if invert:
        text = text[1:]
    mode = "contains"
    if text.startswith("="):
        mode, text = "exact", text[1:]
    elif text.startswith("~"):
        mode, text = "regex", text[1:]
    field, _, value = text.partition(":") if ":" in text else ("", "", text)
    field = CDXObject.CDX_ALT_FIELDS.get(field, field)
    return invert, mode, field, re.compile(value) if mode == "regex" else value


def _passes(record: Mapping[str, str], line: str, filters: list[tuple[bool, str, str, Any]]) -> bool:
    for invert, mode, field, value in filters:
        got = str(record.get(field, "")) if field else line
        if mode == "exact":
            matched = got == value
        elif mode == "regex":
            matched = value.match(got) is not None
        else:
            matched = value in got
        if matched == invert:
            return False
    return True


class _Index:
    """One crawl's ZipNum index: sorted CDXJ lines cut into blocks."""

    def __init__(self, records: Iterable[Mapping[str, str]], lines_per_block: int) -> None:
        rows = sorted(((_cdxj_line(r), dict(r)) for r in records), key=lambda pair: pair[0])
        self.lines = [line for line, _ in rows]
        self.records = [record for _, record in rows]
        self.lines_per_block = lines_per_block
        # Secondary index: the "urlkey timestamp" of each block's first line, then a tab.
        self.idx = [" ".join(line.split(" ", 2)[:2]) + "\t" for line in self.lines[::lines_per_block]]

    def block_range(self, key: str, end_key: str) -> tuple[int, int] | None:
        """First and last block pywb reads for ``[key, end_key)`` (binsearch with ``prev_size=1``)."""
        idx = self.idx
        n = len(idx)
        if n == 0:
            return None
        i_end = bisect.bisect_left(idx, end_key)
        end = max(i_end - 1, 0) if i_end < n else n - 1
        end_is_last_line = i_end >= n and n == 1
        i_start = bisect.bisect_left(idx, key)
        first: int | None
        if i_start < n:
            first = max(i_start - 1, 0)
            if idx[first] >= end_key:
                first = None
        else:
            first = n - 1 if n >= 2 else None
        if first is None:
            if end_is_last_line and key >= idx[n - 1]:
                first = n - 1
            else:
                return None
        return first, end

    def block_lines(self, first: int, last: int, key: str, end_key: str) -> list[int]:
        """Line numbers in blocks ``first..last`` (inclusive) within ``[key, end_key)``."""
        per = self.lines_per_block
        lo, hi = first * per, min((last + 1) * per, len(self.lines))
        return [i for i in range(lo, hi) if key <= self.lines[i] < end_key]


class RequestRecord(NamedTuple):
    path: str
    params: list[tuple[str, str]]
    raw_query: str
    headers: dict[str, str]
    time: float


@dataclass
class _Response:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    app: Any


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
        """Quiet: test output is the crawler's."""

    def span_log(self) -> list[Span]:
        return self.server.app.spans

    def _answer(self) -> None:
        try:
            resp = self.server.app.handle(self.path, dict(self.headers.items()))
        except Exception as exc:  # a bug here must not look like a network failure
            resp = _Response(500, [("Content-Type", "text/plain")], f"fake server error: {exc!r}\n".encode())
        head = [
            f"HTTP/1.1 {resp.status} {_REASONS.get(resp.status, 'Unknown')}",
            f"Server: {_SERVER}",
            "Date: " + formatdate(usegmt=True),
            *(f"{k}: {v}" for k, v in resp.headers),
            f"Content-Length: {len(resp.body)}",
            "Connection: keep-alive",
        ]
        try:
            self.answered = time.monotonic()  # the client can send again from now on
            self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + resp.body)
        except OSError:
            self.close_connection = True


class _ServerBase:
    """Threaded HTTP server on 127.0.0.1, port 0, with a thread-safe request log."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        #: Every request, in arrival order.
        self.requests: list[RequestRecord] = []
        #: ``(arrived, answered)`` monotonic times of every request: from the request head read
        #: to the answer starting out (see :meth:`max_in_flight`).
        self.spans: list[Span] = []
        #: Seconds each request waits before it is answered (as at a remote server).
        self.latency = 0.0
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def handle(self, path_qs: str, headers: Mapping[str, str]) -> _Response:
        raise NotImplementedError

    def _log(self, path_qs: str, headers: Mapping[str, str]) -> tuple[str, list[tuple[str, str]]]:
        path, _, raw_query = path_qs.partition("?")
        params = parse_qsl(raw_query, keep_blank_values=True)
        with self._lock:
            self.requests.append(RequestRecord(path, params, raw_query, dict(headers), time.monotonic()))
        if self.latency:
            time.sleep(self.latency)
        return path, params

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()
            self.spans.clear()

    def max_in_flight(self) -> int:
        """The most requests this server was answering at one time."""
        return max_in_flight(list(self.spans))

    def start(self) -> Any:
        httpd = _HTTPServer((self.host, self.port), _Handler)
        httpd.app = self
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
        self._httpd = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class FakeCommonCrawl(_ServerBase):
    """Common Crawl's index server on 127.0.0.1. Use as a context manager::

        with FakeCommonCrawl({"CC-MAIN-2025-33": [cc_record("http://example.com/", ts)]}) as cc:
            urlopen(cc.base_url + "/CC-MAIN-2025-33-index?url=*.example.com&output=json")

    ``indexes`` maps crawl ids to their captures; a crawl listed in
    ``collinfo`` without captures has an empty index. ``collinfo`` is the list
    served as ``collinfo.json`` (default: the recorded file, byte for byte).
    ``prefix`` puts everything under a path (a mirror at ``/mirror/cc``).
    """

    def __init__(
        self,
        indexes: Mapping[str, Iterable[Mapping[str, str]]] | None = None,
        *,
        collinfo: Sequence[Mapping[str, str]] | None = None,
        prefix: str = "",
        lines_per_block: int = 1,
        max_blocks: int = MAX_BLOCKS,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(host, port)
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        self.collinfo_bytes = RECORDED_COLLINFO if collinfo is None else collinfo_body(collinfo)
        ids = [entry["id"] for entry in json.loads(self.collinfo_bytes)]
        #: Blocks per page when a request has no ``pageSize`` (pywb's ``max_blocks``).
        self.max_blocks = max_blocks
        self.indexes = {crawl: _Index((indexes or {}).get(crawl, ()), lines_per_block) for crawl in ids}
        unknown = set(indexes or {}) - set(ids)
        if unknown:
            raise ValueError(f"captures for crawls collinfo does not list: {sorted(unknown)}")
        #: Served in order to ``/collinfo.json`` before the real list.
        self.collinfo_faults: list[FaultResponse] = []
        #: (crawl id, page or COUNT) -> answers served in order before the real one.
        self.index_faults: dict[tuple[str, int | str], list[FaultResponse]] = {}
        #: Answers rendered by :meth:`prerender_pages`: (crawl, sorted query pairs, gzip) -> answer.
        self._cache: dict[tuple[str, tuple[tuple[str, str], ...], bool], _Response] = {}

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}{self.prefix}"

    # --- what the client did -------------------------------------------------------------

    def collinfo_requests(self) -> int:
        return sum(1 for r in list(self.requests) if r.path == f"{self.prefix}/collinfo.json")

    def index_requests(self, crawl: str | None = None) -> list[RequestRecord]:
        """Requests to CDX endpoints (of one crawl, if named)."""
        out = []
        for record in list(self.requests):
            name = self._crawl_of(record.path)
            if name is not None and (crawl is None or name == crawl):
                out.append(record)
        return out

    def queried(self) -> set[str]:
        """Crawl ids whose CDX endpoint received any request."""
        return {self._crawl_of(r.path) for r in self.index_requests()} - {None}  # type: ignore[return-value]

    def _crawl_of(self, path: str) -> str | None:
        if not path.startswith(self.prefix + "/") or not path.endswith("-index"):
            return None
        return path[len(self.prefix) + 1 : -len("-index")]

    # --- HTTP ----------------------------------------------------------------------------

    def handle(self, path_qs: str, headers: Mapping[str, str]) -> _Response:
        path, params = self._log(path_qs, headers)
        gzip_ok = "gzip" in headers.get("Accept-Encoding", headers.get("accept-encoding", "")).lower()
        if path == f"{self.prefix}/collinfo.json":
            fault = self._pop(self.collinfo_faults)
            if fault is not None:
                return self._fault(fault)
            return self._answer(200, _CT_JSON, self.collinfo_bytes, gzip_ok)
        crawl = self._crawl_of(path)
        if crawl is None or crawl not in self.indexes:
            return _Response(404, [("Content-Type", _CT_HTML)], _nginx_page(404))
        try:
            query = _parse_query(params, self.max_blocks)
        except _BadRequest as exc:
            return self._message(400, str(exc), gzip_ok)
        fault = self._pop(self.index_faults.get((crawl, COUNT if query.count else query.page), []))
        if fault is not None:
            return self._fault(fault)
        cached = self._cache.get((crawl, tuple(sorted(params)), gzip_ok))
        if cached is not None:
            return cached
        return self._cdx(self.indexes[crawl], query, gzip_ok)

    def prerender_pages(self, crawl: str, params: Sequence[tuple[str, str]], gzip_too: bool = True) -> int:
        """Render every page of one crawl's query (``params`` without ``page``) ahead of time.

        For benchmarks: a page then costs the server a dict lookup, not a render and
        a gzip. The key is the sorted query pairs, so any parameter order hits it;
        the fault switches still come first. Returns the number of pages; render
        again after changing the index.
        """
        pairs = [(k, v) for k, v in params if k != "page"]
        index = self.indexes[crawl]
        query = _parse_query(pairs, self.max_blocks)
        blocks = index.block_range(query.key, query.end_key)
        pages = 0 if blocks is None else (blocks[1] - blocks[0]) // query.page_size + 1
        for page in range(pages):
            page_pairs = [*pairs, ("page", str(page))]
            query = _parse_query(page_pairs, self.max_blocks)
            for gzip_ok in (False, True) if gzip_too else (False,):
                answer = self._cdx(index, query, gzip_ok)
                self._cache[(crawl, tuple(sorted(page_pairs)), gzip_ok)] = answer
        return pages

    def _cdx(self, index: _Index, q: _Query, gzip_ok: bool) -> _Response:
        blocks = index.block_range(q.key, q.end_key)
        if q.count:
            return self._answer(200, _CT_CDXJ, self._page_info(index, q, blocks), gzip_ok)
        rows: list[int] = []
        if blocks is not None:
            first, end = blocks
            span = end - first
            pages = span // q.page_size + 1
            if not 0 <= q.page < pages:
                message = f"Page {q.page} invalid: First Page is 0, Last Page is {pages - 1}"
                return self._message(400, message, gzip_ok)
            low = first + q.page * q.page_size
            high = first + min(q.page * q.page_size + q.page_size - 1, span)
            rows = index.block_lines(low, high, q.key, q.end_key)
        out: list[str] = []
        for i in rows:
            record = index.records[i]
            ts = record["timestamp"]
            if (q.from_ and ts < q.from_) or (q.to and ts > q.to):
                continue
            if q.filters and not _passes(record, index.lines[i], q.filters):
                continue
            out.append(self._render(record, q))
            if q.limit > 0 and len(out) >= q.limit:
                break
        if not out:
            shown = q.url[:-1] if q.url.endswith("*") else q.url
            return self._message(404, f"No Captures found for: {shown}", gzip_ok)
        body = "".join(line + "\n" for line in out).encode("utf-8")
        return self._answer(200, _CT_NDJSON if q.output_json else _CT_CDXJ, body, gzip_ok)

    @staticmethod
    def _page_info(index: _Index, q: _Query, blocks: tuple[int, int] | None) -> bytes:
        pages, count = 0, 0
        if blocks is not None:
            first, end = blocks
            span = end - first
            pages, count = span // q.page_size + 1, span + 1
            if span == 0 and not index.block_lines(first, first, q.key, q.end_key):
                pages, count = 0, 0
        return json.dumps({"pages": pages, "pageSize": q.page_size, "blocks": count}).encode()

    @staticmethod
    def _render(record: Mapping[str, str], q: _Query) -> str:
        if q.fl is not None:
            record = {name: record[name] for name in q.fl if name in record}
        if q.output_json:
            return json.dumps(record)
        return _cdxj_line(record) if "urlkey" in record and "timestamp" in record else json.dumps(record)

    def _answer(self, status: int, content_type: str, body: bytes, gzip_ok: bool) -> _Response:
        headers = [("Content-Type", content_type)]
        if gzip_ok and body:
            body = gzip.compress(body, mtime=0)
            headers.append(("Content-Encoding", "gzip"))
        return _Response(status, headers, body)

    def _message(self, status: int, message: str, gzip_ok: bool) -> _Response:
        return self._answer(status, _CT_ERROR, json.dumps({"message": message}).encode(), gzip_ok)

    @staticmethod
    def _fault(fault: FaultResponse) -> _Response:
        status, body, headers = fault
        return _Response(status, list(headers.items()), body)

    def _pop(self, queue: list[FaultResponse]) -> FaultResponse | None:
        with self._lock:
            return queue.pop(0) if queue else None


class CollinfoFront(_ServerBase):
    """``collinfo.json`` plus, for each crawl, its CDX endpoint forwarded to a real pywb.

    pywb serves a collection's CDX API at ``/<collection>/cdx``; Common Crawl's
    server at ``/<crawl id>-index``. This front answers the second by asking
    the first and passing status, Content-Type and body on untouched, so the
    spider meets pywb's own answers under one base URL.
    """

    def __init__(self, collinfo: Sequence[Mapping[str, str]], backends: Mapping[str, str]) -> None:
        super().__init__()
        self.collinfo_bytes = collinfo_body(collinfo)
        #: crawl id -> pywb CDX endpoint (``http://127.0.0.1:PORT/<collection>/cdx``).
        self.backends = dict(backends)
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def handle(self, path_qs: str, headers: Mapping[str, str]) -> _Response:
        path, _ = self._log(path_qs, headers)
        if path == "/collinfo.json":
            return _Response(200, [("Content-Type", _CT_JSON)], self.collinfo_bytes)
        crawl = path[1 : -len("-index")] if path.endswith("-index") else ""
        backend = self.backends.get(crawl)
        if backend is None:
            return _Response(404, [("Content-Type", _CT_HTML)], _nginx_page(404))
        query = path_qs.partition("?")[2]
        try:
            with self._opener.open(f"{backend}?{query}", timeout=30) as upstream:
                status, content_type, body = (
                    upstream.status,
                    upstream.headers.get("Content-Type"),
                    upstream.read(),
                )
        except urllib.error.HTTPError as exc:
            status, content_type, body = exc.code, exc.headers.get("Content-Type"), exc.read()
        return _Response(status, [("Content-Type", content_type or "text/plain")], body)
