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
import http.client
import select
import socket
import ssl
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

try:
    from tests.servers import shop
    from tests.servers.local import Answer, LocalServer, SeenRequest
except ImportError:  # run from tests/ (pywb's own top-level ``tests`` package can shadow ours)
    from servers import shop  # type: ignore[no-redef]
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
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, SECURE),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Trawl Test"),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(datetime.datetime(2019, 1, 1, tzinfo=datetime.timezone.utc))
        .not_valid_after(TLS_NOT_AFTER)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(SECURE)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


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


class HostProxy:
    """A forward proxy for ``*.example.com``: plain requests to :class:`Website`, ``CONNECT`` to
    :class:`TlsSite`; it logs each request line (``GET http://...``, ``CONNECT host:443``)."""

    def __init__(self, web_port: int, tls_port: int) -> None:
        self.web_port = web_port
        self.tls_port = tls_port
        self.requests: list[str] = []
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> HostProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_CONNECT(self) -> None:  # noqa: N802 - http.server's naming
                proxy.requests.append(f"CONNECT {self.path}")
                if self.path.split(":")[0].lower() != SECURE:
                    self.send_error(502, "no https on this host")
                    return
                upstream = socket.create_connection(("127.0.0.1", proxy.tls_port))
                self.send_response(200, "Connection established")
                self.end_headers()
                sockets = [self.connection, upstream]
                try:
                    while True:
                        ready, _, _ = select.select(sockets, [], [], 5)
                        if not ready:
                            break
                        for sock in ready:
                            data = sock.recv(65536)
                            if not data:
                                return
                            (upstream if sock is self.connection else self.connection).sendall(data)
                finally:
                    upstream.close()
                    self.close_connection = True

            def do_GET(self) -> None:  # noqa: N802
                proxy.requests.append(f"GET {self.path}")
                parts = urlsplit(self.path)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection",)}
                headers["Host"] = parts.netloc
                conn = http.client.HTTPConnection("127.0.0.1", proxy.web_port, timeout=30)
                try:
                    target = parts.path + (f"?{parts.query}" if parts.query else "")
                    conn.request("GET", target or "/", headers=headers)
                    answer = conn.getresponse()
                    body = answer.read()
                finally:
                    conn.close()
                try:
                    self.send_response(answer.status)
                    for name, value in answer.getheaders():
                        if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                            self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client stopped reading (a body cap)
                    self.close_connection = True

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
