"""The db-dump's static host as HTTP lets it behave: compressing on the fly, redirecting.

:class:`EncodingDumpServer` serves the dump as :class:`FakeCratesDumpServer` does,
with a ``Content-Encoding`` applied to the body it sends (``gzip``, ``deflate``,
``br``, ``zstd``: what a CDN, a mirror or a proxy does when the client accepts it;
a ``.tar.gz`` is then gzip twice), and answers ``/moved/<n>/<name>`` with a chain
of ``n`` redirects (301, then 302, 307...) ending at ``/<name>``; ``/loop`` redirects
to itself for ever.
"""

from __future__ import annotations

import gzip
import threading
import urllib.request
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.servers.crates_dump import FakeCratesDumpServer
from tests.servers.local import Answer, LocalServer, SeenRequest

#: The statuses of a redirect chain, in turn.
REDIRECTS = (301, 302, 307, 308, 303)


def encode(body: bytes, encoding: str) -> bytes:
    """``body`` as a server sends it with ``Content-Encoding: <encoding>``."""
    if encoding == "gzip":
        return gzip.compress(body, 6)
    if encoding == "deflate":
        return zlib.compress(body, 6)  # HTTP's deflate: the zlib format
    if encoding == "br":
        import brotli

        return brotli.compress(body, quality=4)
    if encoding == "zstd":
        from backports import zstd

        return zstd.compress(body)
    raise ValueError(encoding)


class EncodingDumpServer(FakeCratesDumpServer):
    """The dump, ``Content-Encoding: <encoding>`` when one is set, behind redirects when asked."""

    def __init__(self, dump: bytes, encoding: str | None = None) -> None:
        super().__init__(dump)
        self.encoding = encoding

    def answer(self, request: SeenRequest) -> Answer:
        parts = request.path.strip("/").split("/")
        if parts[0] == "loop":
            self.requests.append(request)
            return 302, b"", {"Location": "/loop"}
        if parts[0] == "moved" and len(parts) == 3:
            self.requests.append(request)
            left = int(parts[1])
            target = f"/moved/{left - 1}/{parts[2]}" if left > 1 else f"/{parts[2]}"
            status = REDIRECTS[left % len(REDIRECTS)]
            return status, b"", {"Location": f"{self.base_url}{target}"}
        status, body, headers = super().answer(request)
        if status == 200 and self.encoding:
            body = encode(body, self.encoding)
            headers = {**headers, "Content-Encoding": self.encoding}
        return status, body, headers

    def moved(self, hops: int, name: str = "db-dump.tar.gz") -> str:
        """A URL ``hops`` redirects away from the dump."""
        return f"{self.base_url}/moved/{hops}/{name}"


class Redirector(LocalServer):
    """Answers every path with a 301 to the same path under ``target`` (a moved mirror)."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.requests: list[SeenRequest] = []

    def answer(self, request: SeenRequest) -> Answer:
        self.requests.append(request)
        return 301, b"", {"Location": f"{self.target}{request.path}"}


class CuttingProxy(LocalServer):
    """A forward proxy that fetches the target whole, then sends the first half of its body under
    the whole body's ``Content-Length`` and drops the connection: a proxy failing mid-answer."""

    def __init__(self) -> None:
        self.requests: list[SeenRequest] = []

    def answer(self, request: SeenRequest) -> Answer:  # pragma: no cover - :meth:`__enter__` serves
        raise NotImplementedError

    def __enter__(self) -> CuttingProxy:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                fake.requests.append(SeenRequest("GET", self.path, {}, {}, b"", self.path))
                with urllib.request.urlopen(self.path) as upstream:
                    body, ctype = upstream.read(), upstream.headers.get("Content-Type", "")
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True

        self._httpd = ThreadingHTTPServer((self.host, self.port), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self
