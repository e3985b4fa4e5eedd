"""A local forward HTTP proxy for proxy-rotation tests.

Answers absolute-form ``GET http://host/path`` requests the way an HTTP proxy
does, by fetching the target, and ``CONNECT host:port`` by tunnelling to it
(logged as ``CONNECT host:port``), or misbehaves the way a banned proxy does:
``mode`` "forward", "ban" (403 page), "captcha" (a 200 challenge page),
"reset" (closes the connection). With ``credentials`` it demands
``Proxy-Authorization: Basic ...`` and answers 407 without it.
"""

from __future__ import annotations

import base64
import socket
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import NamedTuple

try:
    from tests.servers.forwardproxy import relay
except ImportError:  # run from tests/
    from servers.forwardproxy import relay  # type: ignore[no-redef]

CAPTCHA_PAGE = (
    b"<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title></head>"
    b"<body><div class='cf-chl-widget'>Please complete the captcha</div></body></html>"
)


class ProxiedRequest(NamedTuple):
    url: str
    time: float
    authorized: bool


class FakeProxy:
    def __init__(self, mode: str = "forward", credentials: tuple[str, str] | None = None) -> None:
        self.mode = mode
        self.credentials = credentials
        self.requests: list[ProxiedRequest] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        if self.credentials:
            user, password = self.credentials
            return f"http://{user}:{password}@{host}:{port}"
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeProxy:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_CONNECT(self) -> None:  # noqa: N802 - http.server's naming
                authorized = fake._authorized(self.headers.get("Proxy-Authorization"))
                with fake._lock:
                    fake.requests.append(ProxiedRequest(f"CONNECT {self.path}", time.monotonic(), authorized))
                if fake.mode != "forward" or not authorized:
                    return self._send(407 if not authorized else 502, b"no tunnel", "text/plain")
                host, _, port = self.path.rpartition(":")
                try:
                    upstream = socket.create_connection((host, int(port)), timeout=10)
                except (OSError, ValueError):
                    return self._send(502, b"cannot reach the target", "text/plain")
                self.send_response(200, "Connection established")
                self.end_headers()
                self.close_connection = True
                relay(self.connection, upstream, 10)

            def do_GET(self) -> None:
                authorized = fake._authorized(self.headers.get("Proxy-Authorization"))
                with fake._lock:
                    fake.requests.append(ProxiedRequest(self.path, time.monotonic(), authorized))
                if fake.mode == "reset":
                    self.close_connection = True
                    self.connection.close()
                    return
                if fake.credentials and not authorized:
                    return self._send(
                        407,
                        b"Proxy Authentication Required",
                        "text/plain",
                        [("Proxy-Authenticate", 'Basic realm="proxy"')],
                    )
                if fake.mode == "ban":
                    return self._send(
                        403, b"<html><body>Forbidden: this IP is banned</body></html>", "text/html"
                    )
                if fake.mode == "captcha":
                    return self._send(200, CAPTCHA_PAGE, "text/html")
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in ("proxy-authorization", "proxy-connection", "host")
                }
                try:
                    with urllib.request.urlopen(urllib.request.Request(self.path, headers=headers)) as up:
                        body, status, ctype = up.read(), up.status, up.headers.get("Content-Type", "")
                        encoding = up.headers.get("Content-Encoding")
                except urllib.error.HTTPError as exc:
                    body, status, ctype, encoding = (
                        exc.read(),
                        exc.code,
                        exc.headers.get("Content-Type", ""),
                        None,
                    )
                extra = [("Content-Encoding", encoding)] if encoding else []
                self._send(status, body, ctype, extra)

            def _send(self, status: int, body: bytes, ctype: str, extra: list | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for key, value in extra or []:
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def _authorized(self, header: str | None) -> bool:
        if not self.credentials:
            return True
        expected = base64.b64encode(":".join(self.credentials).encode()).decode()
        return header == f"Basic {expected}"
