"""A whole hostile internet on one port, for ``trawl crawl live`` and ``trawl crawl probe``.

:class:`HostileSite` is a forward HTTP proxy (``PROXY_LIST``) that answers
every host itself, on a raw socket (``http.server`` cannot send a body forever
or trickle it), one thread per connection, keep-alive. It logs each request as
``(host, path?query)`` in :attr:`HostileSite.requests`, whatever host was
asked, so a test reads "no request to ``evil.example.net``" straight from it. A
client that skips the proxy (``no_proxy``) and connects to its port directly
is logged too, by its ``Host`` header: a redirect to ``127.0.0.1:PORT`` lands
here either way. ``CONNECT`` is logged and refused (502: no https anywhere).

What a host answers is a :class:`Reply` from :attr:`HostileSite.pages` (keyed
``host/path?query``), else from the generated traps, else a 404:

* ``plain``: a status, headers and a body;
* ``bomb``: ``Content-Encoding: gzip`` (sent whatever the client accepts), an
  honest ``Content-Length`` of about 1 MB, inflating to ``size`` (1 GiB);
* ``huge``: a ``size``-byte HTML page (200 MB), generated as it is sent;
* ``drip``: chunked, 16 bytes every 0.2 s, never ending.

:func:`hostile_pages` builds the hostile site of ``bench/hostile_live.py``
(``example.org``): each hostile page by name, linked from the home page, plus
the traps that need no entry of their own (``/gen/N``: every page names two
new ones; ``/calendar/YYYY/MM``: a previous and a next month, forever).
"""

from __future__ import annotations

import random
import re
import socket
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

try:
    from tests.servers.hostile import gzip_bomb
    from tests.servers.rawsocket import RawSocketServer
except ImportError:  # run from tests/
    from servers.hostile import gzip_bomb  # type: ignore[no-redef]
    from servers.rawsocket import RawSocketServer  # type: ignore[no-redef]

DOMAIN = "example.org"
EVIL = "evil.example.net"
HTML = "text/html; charset=utf-8"
CHUNK = 65536
#: A 10 MB robots.txt: this many ``Disallow`` lines of about 20 bytes.
ROBOTS_LINES = 500_000


@dataclass(frozen=True)
class Reply:
    """What one URL answers (see the module docstring for ``kind``)."""

    status: int = 200
    body: bytes = b""
    content_type: str = HTML
    headers: tuple[tuple[str, str], ...] = ()
    kind: str = "plain"
    size: int = 0


def html(title: str, body: str = "") -> bytes:
    return f"<!DOCTYPE html><html><head><title>{title}</title></head><body>{body}</body></html>".encode()


def redirect(location: str, status: int = 302) -> Reply:
    return Reply(status, b"", HTML, (("Location", location),))


NOT_FOUND = Reply(404, html("Not found", "<h1>Not found</h1>"))


@dataclass
class HostileSite(RawSocketServer):
    """The forward proxy and every host behind it."""

    backlog = 128

    pages: dict[str, Reply] = field(default_factory=dict)
    #: What any other path of a host answers (a host that redirects every unknown path away).
    fallback: dict[str, Reply] = field(default_factory=dict)
    #: Generated link traps (``/gen/N``, ``/calendar/YYYY/MM``) on :data:`DOMAIN`.
    traps: bool = False
    port: int = 0
    requests: list[tuple[str, str]] = field(default_factory=list)
    #: Body bytes sent, all connections together.
    sent: int = 0

    def __post_init__(self) -> None:
        self._open("HostileSite")

    @property
    def url(self) -> str:
        return self.base_url

    def asked(self, host: str) -> list[str]:
        """The paths asked of ``host``, in order."""
        with self._lock:
            return [path for seen, path in self.requests if seen == host]

    def hosts(self) -> set[str]:
        with self._lock:
            return {host for host, _ in self.requests}

    # --- answers ------------------------------------------------------------------------

    def reply(self, host: str, target: str) -> Reply:
        known = self.pages.get(f"{host}{target}")
        if known is not None:
            return known
        if self.traps and host == DOMAIN:
            trap = generated(target)
            if trap is not None:
                return trap
        return self.fallback.get(host, NOT_FOUND)

    # --- the socket ---------------------------------------------------------------------

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(0.1)
        data = b""
        try:
            while not self._stop.is_set():
                got = self._read_head(conn, data)
                if got is None:
                    return
                lines, data = got
                method, _, rest = lines[0].partition(" ")
                target = rest.rsplit(" ", 1)[0]
                headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
                if method == "CONNECT":
                    self._log(target.split(":")[0].lower(), "CONNECT")
                    conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                    return
                if "://" in target:
                    parts = urlsplit(target)
                    host = (parts.hostname or "").lower()
                    if parts.port and host in ("127.0.0.1", "localhost"):
                        host = f"{host}:{parts.port}"
                    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                else:
                    host, path = headers.get("host", "").lower(), target
                    if host.endswith(":80"):
                        host = host[:-3]
                self._log(host, path)
                if not self._send(conn, self.reply(host, path)):
                    return
        except OSError:
            return  # the client hung up: what a bounded client does
        finally:
            conn.close()

    def _log(self, host: str, path: str) -> None:
        with self._lock:
            self.requests.append((host, path))

    def _send(self, conn: socket.socket, reply: Reply) -> bool:
        """Send one answer; True if the connection can take another request."""
        conn.settimeout(None)  # a client slow to read makes sendall wait, not fail
        head = [f"HTTP/1.1 {reply.status} X", f"Content-Type: {reply.content_type}", "Server: Hostile/1.0"]
        head += [f"{name}: {value}" for name, value in reply.headers]
        if reply.kind == "drip":
            conn.sendall(("\r\n".join([*head, "Transfer-Encoding: chunked"]) + "\r\n\r\n").encode())
            chunk = b"10\r\n<p>drip drip</p>\r\n"
            while not self._stop.is_set():
                conn.sendall(chunk)
                self._count(16)
                time.sleep(0.2)
            return False
        if reply.kind == "bomb":
            body = gzip_bomb(reply.size)
            head.append("Content-Encoding: gzip")
        else:
            body = reply.body
        length = reply.size if reply.kind == "huge" else len(body)
        conn.sendall(("\r\n".join([*head, f"Content-Length: {length}"]) + "\r\n\r\n").encode())
        if reply.kind == "huge":
            block = b"<p>" + b"many words on a very long page " * 2047 + b"</p>\n"
            block = block[:CHUNK]
            left = reply.size
            while left > 0 and not self._stop.is_set():
                piece = block[: min(left, CHUNK)]
                conn.sendall(piece)
                self._count(len(piece))
                left -= len(piece)
        else:
            conn.sendall(body)
            self._count(len(body))
        conn.settimeout(0.1)
        return True

    def _count(self, sent: int) -> None:
        with self._lock:
            self.sent += sent

    def _prepare(self) -> None:
        for reply in self.pages.values():
            if reply.kind == "bomb":
                gzip_bomb(reply.size)  # built before the first request, not during it


_GEN = re.compile(r"^/gen/(\d+)$")
_CALENDAR = re.compile(r"^/calendar/(\d{4})/(\d{2})$")


def generated(path: str) -> Reply | None:
    """The traps: ``/gen/N`` names ``/gen/2N+1`` and ``/gen/2N+2``; a month names the months
    either side of it. Both go on for ever; the crawl's depth and pattern cap must end them."""
    match = _GEN.match(path)
    if match:
        n = int(match.group(1))
        links = "".join(f'<a href="/gen/{m}">page {m}</a> ' for m in (2 * n + 1, 2 * n + 2))
        return Reply(200, html(f"Generated {n}", links))
    match = _CALENDAR.match(path)
    if match:
        year, month = int(match.group(1)), int(match.group(2))
        if not 1 <= month <= 12:
            return NOT_FOUND
        before = (year - 1, 12) if month == 1 else (year, month - 1)
        after = (year + 1, 1) if month == 12 else (year, month + 1)
        links = "".join(f'<a href="/calendar/{y:04d}/{m:02d}">{y}-{m:02d}</a> ' for y, m in (before, after))
        return Reply(200, html(f"Calendar {year}-{month:02d}", links))
    return None


#: Each hostile page of :func:`hostile_pages`: its path on :data:`DOMAIN`.
HOSTILE = {
    "bomb": "/bomb.html",
    "huge": "/huge.html",
    "drip": "/drip.html",
    "binary": "/binary.html",
    "gen": "/gen/1",
    "calendar": "/calendar/2024/06",
    "loop": "/loop-a",
    "redir-ext": "/redir-ext",
    "redir-local": "/redir-local",
    "robots": "/robots.txt",
    "sitemaps": "/sitemap.xml",
}


def hostile_pages(mix: list[str], port: int, seed: int = 0) -> dict[str, Reply]:
    """The pages of :data:`DOMAIN` for one mix of :data:`HOSTILE` names; ``port``: the site's own
    (where ``/redir-local`` sends the client: ``http://127.0.0.1:PORT/secret``)."""
    base = f"http://{DOMAIN}"
    links = "".join(f'<a href="{HOSTILE[name]}">{name}</a> ' for name in mix if name not in ("robots",))
    pages = {
        f"{DOMAIN}/": Reply(200, html("Hostile home", f"<p>Welcome.</p>{links}<a href='/about'>about</a>")),
        f"{DOMAIN}/about": Reply(200, html("About", "<p>A plain page.</p>")),
        f"{DOMAIN}/robots.txt": Reply(200, b"User-agent: *\nAllow: /\n", "text/plain"),
    }
    if "bomb" in mix:
        pages[f"{DOMAIN}/bomb.html"] = Reply(kind="bomb", size=1 << 30)
    if "huge" in mix:
        pages[f"{DOMAIN}/huge.html"] = Reply(kind="huge", size=200_000_000)
    if "drip" in mix:
        pages[f"{DOMAIN}/drip.html"] = Reply(kind="drip")
    if "binary" in mix:
        pages[f"{DOMAIN}/binary.html"] = Reply(200, random.Random(seed).randbytes(2_000_000))
    if "loop" in mix:
        pages[f"{DOMAIN}/loop-a"] = redirect("/loop-b")
        pages[f"{DOMAIN}/loop-b"] = redirect(f"{base}/loop-a", 301)
    if "redir-ext" in mix:
        pages[f"{DOMAIN}/redir-ext"] = redirect(f"http://{EVIL}/stolen")
    if "redir-local" in mix:
        pages[f"{DOMAIN}/redir-local"] = redirect(f"http://127.0.0.1:{port}/secret")
    if "robots" in mix:
        rules = b"".join(b"Disallow: /private/%07d\n" % n for n in range(ROBOTS_LINES))
        robots = b"User-agent: *\n" + rules + f"Sitemap: http://{EVIL}/sitemap.xml\n".encode()
        pages[f"{DOMAIN}/robots.txt"] = Reply(200, robots, "text/plain")
    if "sitemaps" in mix:  # two sitemap indexes, each naming itself and the other
        both = sitemap_index([f"{base}/sitemap.xml", f"{base}/sitemap-b.xml"])
        for key in ("/sitemap.xml", "/sitemap-b.xml"):
            pages[f"{DOMAIN}{key}"] = Reply(200, both, "application/xml")
    return pages


def sitemap_index(urls: list[str]) -> bytes:
    entries = "".join(f"<sitemap><loc>{url}</loc></sitemap>" for url in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</sitemapindex>'
    ).encode()
