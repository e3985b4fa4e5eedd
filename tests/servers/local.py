"""The HTTP shell every small fake API server shares.

A fake subclasses :class:`LocalServer` and implements ``answer(request)``,
returning ``(status, body, headers)``; the shell serves it on 127.0.0.1 on a
free port (or on ``host`` and ``port``, set before the server starts: any
127.x.y.z is a loopback address of its own on Linux, another host for a
client), one thread per connection, HTTP/1.1 keep-alive, quiet logs.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

Answer = tuple[int, bytes, dict[str, str]]


@dataclass(frozen=True)
class SeenRequest:
    """One request as the server received it; header names lower-cased."""

    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    raw_body: bytes
    raw_url: str

    @property
    def cookie(self) -> str:
        return self.headers.get("cookie", "")

    @property
    def body(self) -> Any:
        """The JSON body, or ``None``."""
        try:
            return json.loads(self.raw_body) if self.raw_body else None
        except ValueError:
            return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: LocalServer

    def _serve(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        seen = SeenRequest(
            self.command,
            parts.path,
            dict(parse_qsl(parts.query, keep_blank_values=True)),
            {k.lower(): v for k, v in self.headers.items()},
            self.rfile.read(length) if length else b"",
            self.path,
        )
        status, body, headers = self.fake.answer(seen)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if status not in (204, 304):  # no body, and so no length, by HTTP's rules
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if status not in (204, 304):
            self.wfile.write(body)

    do_GET = do_POST = _serve  # noqa: N815 - http.server's naming

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
        pass


class LocalServer:
    """Context manager running ``self.answer`` behind a real HTTP server."""

    _httpd: ThreadingHTTPServer | None = None
    #: The address to listen on.
    host = "127.0.0.1"
    #: The port to listen on; 0: a free one.
    port = 0

    def answer(self, request: SeenRequest) -> Answer:  # pragma: no cover - subclasses answer
        raise NotImplementedError

    def __enter__(self) -> Any:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer((self.host, self.port), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://{self.host}:{self._httpd.server_address[1]}"
