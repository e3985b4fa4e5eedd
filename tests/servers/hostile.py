"""An upstream that answers, but never in a size or at a pace a client can live with.

Without bounds, an endless chunked CDX page took a crawl to 1.17 GB of RSS, a
gzip bomb the same, a page that dribbles a few bytes a second was reported only
as ``no answer within 120 s`` after 4 x 120 s. :class:`HostileServer` serves
each of those on a raw socket (``http.server`` would buffer nothing of use and
cannot send a body forever), one thread per connection:

* ``endless``: ``200``, ``Transfer-Encoding: chunked``, 64 KiB chunks until the
  client hangs up;
* ``bomb``: ``200``, ``Content-Encoding: gzip`` and an honest ``Content-Length``
  of about 1 MB whose body inflates to ``bomb_bytes`` (1 GiB by default);
* ``dribble``: ``200``, chunked, ``dribble_bytes`` every ``dribble_every``
  seconds, forever.

``normal`` maps a request path to a plain answer (a CDX ``showNumPages``
count, say) so the hostile answer lands on a data page: the body (``200`` with
``content_type``), or ``(status, content type, body)``; ``None``: the hostile
answer. Used as a forward proxy (``PROXY_LIST``), the path it gets is the whole
URL (``http://example.com/robots.txt``), so one server is a whole site for the
live crawl and the probe. ``requests`` holds each request's first line, for
tests to poll.
"""

from __future__ import annotations

import gzip
import socket
import time
from collections.abc import Callable
from functools import cache
from typing import Literal

from tests.servers.rawsocket import RawSocketServer

Mode = Literal["endless", "bomb", "dribble"]
CHUNK = 65536
#: A plain answer: its body (200, the server's content type), or (status, content type, body).
Plain = bytes | tuple[int, str, bytes]


@cache
def gzip_bomb(inflated: int) -> bytes:
    """A gzip body of ``inflated`` zero bytes, built without inflating it here.

    gzip allows members one after the other (RFC 1952 2.2) and every reader,
    Scrapy's included, reads them all: one member of 16 MiB of zeros (16 KB)
    repeated. A 1 GiB bomb is about 1 MB on the wire.
    """
    member_size = min(inflated, 16 << 20)
    member = gzip.compress(bytes(member_size), compresslevel=9, mtime=0)
    count, rest = divmod(inflated, member_size)
    tail = gzip.compress(bytes(rest), compresslevel=9, mtime=0) if rest else b""
    return member * count + tail


class HostileServer(RawSocketServer):
    def __init__(
        self,
        mode: Mode,
        *,
        normal: Callable[[str], Plain | None] | None = None,
        bomb_bytes: int = 1 << 30,
        dribble_bytes: int = 16,
        dribble_every: float = 0.2,
        content_type: str = "text/plain",
    ) -> None:
        self.mode = mode
        self.normal = normal
        self.bomb_bytes = bomb_bytes
        self.dribble_bytes = dribble_bytes
        self.dribble_every = dribble_every
        self.content_type = content_type
        self._open(f"HostileServer-{mode}")
        #: First lines of the requests received (``GET /path HTTP/1.1``).
        self.requests: list[str] = []
        #: Body bytes sent by the hostile answers, all connections together.
        self.sent = 0

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(0.1)
        data = b""
        try:
            while not self._stop.is_set():
                got = self._read_head(conn, data)
                if got is None:
                    return
                lines, data = got
                line = lines[0]
                with self._lock:
                    self.requests.append(line)
                path = line.split(" ")[1] if " " in line else "/"
                plain = self.normal(path) if self.normal else None
                if plain is not None:
                    status, content_type, body = (
                        plain if isinstance(plain, tuple) else (200, self.content_type, plain)
                    )
                    head = (
                        f"HTTP/1.1 {status} {'OK' if status < 400 else 'Error'}\r\n"
                        f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
                    )
                    conn.sendall(head.encode() + body)
                    continue
                if not self._hostile(conn):
                    return
        except OSError:
            return  # the client hung up: what a bounded client does
        finally:
            conn.close()

    def _hostile(self, conn: socket.socket) -> bool:
        """Send the hostile answer; True if the connection can take another request."""
        conn.settimeout(None)  # a client slow to read makes sendall wait, not fail
        if self.mode == "bomb":
            body = gzip_bomb(self.bomb_bytes)
            head = (
                f"HTTP/1.1 200 OK\r\nContent-Type: {self.content_type}\r\nContent-Encoding: gzip\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            conn.sendall(head.encode() + body)
            self._count(len(body))
            conn.settimeout(0.1)
            return True  # a complete answer: the client may send its retry on this connection
        head = f"HTTP/1.1 200 OK\r\nContent-Type: {self.content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
        conn.sendall(head.encode())
        size, pause = (CHUNK, 0.0) if self.mode == "endless" else (self.dribble_bytes, self.dribble_every)
        chunk = f"{size:x}\r\n".encode() + b"0" * size + b"\r\n"
        while not self._stop.is_set():
            conn.sendall(chunk)
            self._count(size)
            if pause:
                time.sleep(pause)
        return False

    def _count(self, sent: int) -> None:
        with self._lock:
            self.sent += sent

    def _prepare(self) -> None:
        if self.mode == "bomb":
            gzip_bomb(self.bomb_bytes)  # built before the first request, not during it


#: The page of :func:`example_site` that gets the hostile answer.
HOSTILE_PAGE = "/hostile.html"
HOME = (
    b"<!DOCTYPE html><html><head><title>Example home</title></head><body>"
    b'<p>Welcome.</p><a href="' + HOSTILE_PAGE.encode() + b'">the hostile page</a></body></html>'
)


def example_site(url: str) -> Plain | None:
    """``http://example.com`` as the live crawl and the probe see it through the hostile server
    (their ``PROXY_LIST``): a home page linking to :data:`HOSTILE_PAGE`, whose answer is the
    hostile one; robots.txt allows everything; anything else (the sitemap, the favicon, the
    random path of the soft-404 check) is a 404."""
    path = "/" + url.split("://", 1)[-1].partition("/")[2]
    if path == "/":
        return 200, "text/html; charset=utf-8", HOME
    if path == "/robots.txt":
        return 200, "text/plain", b"User-agent: *\nAllow: /\n"
    if path == HOSTILE_PAGE:
        return None
    return 404, "text/html", b"<html><body><h1>Not found</h1></body></html>"
