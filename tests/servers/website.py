"""A small generated website under real-looking host names, for ``trawl crawl probe`` and ``live``.

Three hosts for the probe, reached through :class:`HostProxy` (a forward proxy that maps
``*.example.com`` to local ports, ``CONNECT`` included), so that redirects,
origins and soft-404 detection run on real names, not on ``127.0.0.1:PORT``:

* ``www.example.com`` (:data:`WWW`): a home page, an admin page, a redirect
  chain (``/old`` 301 -> ``/moved`` 302 -> ``/new``), three ``/item/N`` pages (one
  pattern), two ``/search?q=`` pages (one pattern), a 404, a slow page, a
  redirect loop, a large HTML page (cut at the byte cap), a binary file (headers
  only), a favicon; anything else is a plain 404;
* ``soft.example.com``: answers 200 with its "not found" page for any path but
  ``/`` and ``/about`` (the soft-404 host);
* ``secure.example.com`` (https only, :class:`TlsSite`): a self-signed
  certificate that expired on 2020-01-01.

The live crawl's pages (``example.com``, which redirects to
``shop.example.com``, and ``api.example.com``) are in :mod:`tests.servers.shop`.
Plain requests for other hosts get a 421; ``CONNECT`` to any host but
``secure.example.com`` a 502 (a host without https).

Every request is logged as ``(host, path?query)`` in :attr:`Website.seen`.
"""

from __future__ import annotations

import datetime
import ssl
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

try:
    from tests.servers import shop
    from tests.servers.certificates import self_signed
    from tests.servers.forwardproxy import ForwardProxy
    from tests.servers.local import Answer, LocalServer, SeenRequest
except ImportError:  # run from tests/ (pywb's own top-level ``tests`` package can shadow ours)
    from servers import shop  # type: ignore[no-redef]
    from servers.certificates import self_signed  # type: ignore[no-redef]
    from servers.forwardproxy import ForwardProxy  # type: ignore[no-redef]
    from servers.local import Answer, LocalServer, SeenRequest  # type: ignore[no-redef]

WWW = "www.example.com"
SOFT = "soft.example.com"
SECURE = "secure.example.com"
SERVER = "TrawlTestSite/1.0"
SLOW_SECONDS = 0.4
FAVICON = bytes(range(256)) * 4  # what /favicon.ico serves (image/x-icon)
BIG_BYTES = 2_000_000
TLS_NOT_AFTER = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)


def page(title: str, text: str) -> bytes:
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body>"
        "<nav>Home About Shop Contact Login</nav>"
        f"<h1>{title}</h1><p>{text}</p>"
        "<footer>Copyright 2024 Example Inc. All rights reserved.</footer></body></html>"
    ).encode()


def not_found(path: str) -> bytes:
    text = f"Sorry, the page {path} does not exist. Try the search box or go back home."
    return page("Page not found", text)


HTML = {"Content-Type": "text/html; charset=utf-8", "Server": SERVER}

WWW_PAGES: dict[str, tuple[int, bytes, dict[str, str]]] = {
    "/": (200, page("Example home", "Welcome to the example shop of widgets and gadgets."), HTML),
    "/admin/": (200, page("Admin login", "Enter your administrator name and password below."), HTML),
    "/old": (301, b"", {"Location": "/moved", "Server": SERVER}),
    "/moved": (302, b"", {"Location": "http://www.example.com/new", "Server": SERVER}),
    "/new": (200, page("New page", "This page replaced the old one in 2023."), HTML),
    "/item/1": (200, page("Item 1", "A red widget with a blue handle."), HTML),
    "/item/2": (200, page("Item 2", "A green gadget for the kitchen."), HTML),
    "/item/3": (200, page("Item 3", "A yellow gizmo that sings."), HTML),
    "/search?q=a": (200, page("Search a", "Results for a: widgets."), HTML),
    "/search?q=b": (200, page("Search b", "Results for b: gadgets."), HTML),
    "/loop": (302, b"", {"Location": "/loop", "Server": SERVER}),
    "/favicon.ico": (200, FAVICON, {"Content-Type": "image/x-icon", "Server": SERVER}),
    "/big.bin": (200, b"\0" * BIG_BYTES, {"Content-Type": "application/octet-stream", "Server": SERVER}),
    "/large.html": (
        200,
        b"<html><head><title>Large page</title></head><body>" + b"<p>word and more words</p>" * 20000,
        HTML,
    ),
}
SOFT_PAGES = {
    "/": page("Soft home", "The home page of a host that answers every path."),
    "/about": page("About soft", "We make things that are soft, like pillows, towels and clouds of wool."),
}


class Website(LocalServer):
    """The plain-HTTP hosts, told apart by the Host header."""

    def __init__(self, latency: float = 0.0) -> None:
        self.seen: list[tuple[str, str]] = []
        #: (host, path?query, User-Agent) of each request: which worker of a spread run asked it.
        self.agents: list[tuple[str, str, str]] = []
        #: Seconds every live-crawl page (tests/servers/shop.py) takes, for the distributed test.
        self.latency = latency
        self._lock = threading.Lock()

    def answer(self, request: SeenRequest) -> Answer:
        host = request.headers.get("host", "").split(":")[0].lower()
        with self._lock:
            self.seen.append((host, request.raw_url))
            self.agents.append((host, request.raw_url, request.headers.get("user-agent", "")))
        if host == WWW:
            if request.raw_url == "/slow":
                time.sleep(SLOW_SECONDS)
                return 200, page("Slow page", "This page took its time."), HTML
            known = WWW_PAGES.get(request.raw_url)
            if known is not None:
                return known
            return 404, not_found(request.path), HTML
        if host == SOFT:
            return 200, SOFT_PAGES.get(request.raw_url) or not_found(request.path), HTML
        if request.raw_url == "/slow" and host == shop.SHOP:
            time.sleep(SLOW_SECONDS)
            return 200, shop.html("Slow page", "<p>This page took its time.</p>"), HTML
        live = shop.answer(host, request.raw_url)
        if live is not None:
            if self.latency:
                time.sleep(self.latency)
            return live
        return 421, b"unknown host", {"Content-Type": "text/plain"}

    def paths(self, host: str) -> list[str]:
        with self._lock:
            return [path for seen_host, path in self.seen if seen_host == host]


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for ``secure.example.com`` that expired on 2020-01-01."""
    return self_signed(
        directory,
        [SECURE],
        not_before=datetime.datetime(2019, 1, 1, tzinfo=datetime.timezone.utc),
        not_after=TLS_NOT_AFTER,
        organization="Trawl Test",
    )


class TlsSite(LocalServer):
    """``secure.example.com`` over TLS with the expired certificate."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def answer(self, request: SeenRequest) -> Answer:
        self.seen.append(request.raw_url)
        if request.raw_url == "/":
            return 200, page("Secure home", "A page behind an expired certificate."), HTML
        return 404, not_found(request.path), HTML

    def __enter__(self) -> Any:
        super().__enter__()
        directory = Path(tempfile.mkdtemp(prefix="trawl-tls-"))
        cert, key = make_certificate(directory)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        assert self._httpd is not None
        self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        return self

    @property
    def bound_port(self) -> int:
        assert self._httpd is not None
        return int(self._httpd.server_address[1])


class HostProxy(ForwardProxy):
    """A forward proxy for ``*.example.com``: plain requests to :class:`Website`, ``CONNECT`` to
    :class:`TlsSite` for ``secure.example.com`` only; it logs each request line (``GET http://...``,
    ``CONNECT host:443``)."""

    TUNNEL_IDLE = 5.0

    def reaches_tls(self, host: str, port: str) -> bool:
        return host == SECURE

    def refusal(self, tls: bool) -> str:
        return "no https on this host"
