"""A forward proxy for fakes under real host names: ``GET http://host/...`` to one local HTTP
server, ``CONNECT host:443`` tunnelled to one local TLS server; every request line logged.

What it reaches is the subclass's choice (:meth:`ForwardProxy.reaches_plain`,
:meth:`ForwardProxy.reaches_tls`); anything else is a 502 with :attr:`refusal`, as a
proxy that cannot reach a host answers.
"""

from __future__ import annotations

import http.client
import select
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


class ForwardProxy:
    #: Seconds a tunnel waits for a byte either way before it closes.
    TUNNEL_IDLE = 30.0
    host = "127.0.0.1"
    port = 0

    def __init__(self, web_port: int, tls_port: int) -> None:
        self.web_port = web_port
        self.tls_port = tls_port
        #: ``GET http://...`` and ``CONNECT host:port``, in arrival order.
        self.requests: list[str] = []
        self._httpd: ThreadingHTTPServer | None = None

    def reaches_plain(self, host: str) -> bool:
        return True

    def reaches_tls(self, host: str, port: str) -> bool:
        return True

    def refusal(self, tls: bool) -> str:
        return "this proxy does not reach that host"

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://{self.host}:{self._httpd.server_address[1]}"

    def __enter__(self) -> Any:
        self._httpd = ThreadingHTTPServer((self.host, self.port), _handler(self))
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()


def relay(client: socket.socket, upstream: socket.socket, idle: float) -> None:
    """A CONNECT tunnel: bytes both ways until a side closes or ``idle`` seconds pass without one."""
    sockets = [client, upstream]
    try:
        while True:
            ready, _, _ = select.select(sockets, [], [], idle)
            if not ready:
                return
            for sock in ready:
                data = sock.recv(65536)
                if not data:
                    return
                (upstream if sock is client else client).sendall(data)
    except OSError:
        return
    finally:
        upstream.close()


def _handler(proxy: ForwardProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_CONNECT(self) -> None:  # noqa: N802 - http.server's naming
            proxy.requests.append(f"CONNECT {self.path}")
            host, _, port = self.path.rpartition(":")
            if not proxy.reaches_tls(host.lower(), port):
                self.send_error(502, proxy.refusal(tls=True))
                return
            upstream = socket.create_connection(("127.0.0.1", proxy.tls_port))
            self.send_response(200, "Connection established")
            self.end_headers()
            self.close_connection = True
            relay(self.connection, upstream, proxy.TUNNEL_IDLE)

        def do_GET(self) -> None:  # noqa: N802
            proxy.requests.append(f"GET {self.path}")
            parts = urlsplit(self.path)
            if parts.scheme != "http" or not proxy.reaches_plain((parts.hostname or "").lower()):
                self.send_error(502, proxy.refusal(tls=False))
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() != "proxy-connection"}
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

    return Handler
