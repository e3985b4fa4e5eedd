"""An Elasticsearch for tests: noida-db's server, or a real cluster, and a rejecting proxy.

No real Elasticsearch can be installed on the test machines. noida-db (PyPI,
test extra) ships one binary that speaks Elasticsearch 8.15's REST API
(templates, bulk, mget, search, aggregations). :class:`NoidaServer` starts it on
127.0.0.1 with only the Elasticsearch service, polls until it answers, and
stops it (the process it started, nothing else)::

    with NoidaServer(tmp_path) as es:
        Elasticsearch(es.url).info()

:func:`elasticsearch_url` yields ``$ELASTICSEARCH_URL`` when it is set (a real
cluster), otherwise a fresh noida-db server.

:class:`RejectingProxy` sits between trawl and the server and answers some
bulk items with 429 (``es_rejected_execution_exception``) the way a cluster
whose write queue is full does: the rejected documents are taken out of the
request before it is forwarded, so they are really not written. It can also
fail whole bulk requests: a 503 (nothing written), or a stall past the client's
timeout after the request was forwarded (written, but the client never hears).

:func:`es_settings` gives Scrapy settings as a crawl has them (trawl's settings
module, then the test's values): the store reads its settings with no fallback.
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
from scrapy.settings import Settings

__all__ = ["NoidaServer", "RejectingProxy", "elasticsearch_url", "es_settings", "free_port", "noida_binary"]


def es_settings(values: dict[str, Any] | None = None, **more: Any) -> Settings:
    """Settings as ``scrapy crawl`` builds them: ``trawl.settings``, then ``values`` and ``more``."""
    settings = Settings()
    settings.setmodule("trawl.settings", priority="project")
    settings.update({**(values or {}), **more}, priority="cmdline")
    return settings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def noida_binary() -> str | None:
    """The server binary inside the noida-db package.

    Not the ``noida-db`` console script: that is a Python wrapper that runs the
    binary as its child, and stopping the wrapper would leave the server running.
    """
    try:
        import noida_db
    except ImportError:
        return shutil.which("noida-db")
    binary = Path(noida_db.__file__).parent / "noida-db"
    if not binary.is_file():
        return None
    if not os.access(binary, os.X_OK):
        binary.chmod(0o755)
    return str(binary)


def _answers(url: str, timeout: float = 1.0) -> bool:
    parts = urlsplit(url)
    try:
        con = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        con.request("GET", "/")
        ok = con.getresponse().status == 200
        con.close()
        return ok
    except OSError:
        return False


def wait_until_answers(url: str, deadline: float, process: subprocess.Popen | None = None) -> None:
    """Poll ``GET /`` until it answers 200 (the server starts in well under a second)."""
    while not _answers(url):
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"noida-db exited with status {process.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer in time")
        time.sleep(0.02)  # a poll interval, not a wait for something to happen


class NoidaServer:
    """noida-db with only its Elasticsearch service, on a free loopback port."""

    def __init__(self, data_dir: Path, port: int | None = None, startup_timeout: float = 30.0) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen | None = None
        self.log_path = self.data_dir / "noida.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> NoidaServer:
        binary = noida_binary()
        if binary is None:
            raise RuntimeError("noida-db is not installed (pip install -e '.[test]')")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [binary, "start", "--only", "elasticsearch", "--elasticsearch-port", str(self.port),
             "--host", "127.0.0.1", "--data-dir", str(self.data_dir)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        self._log = log
        try:
            wait_until_answers(self.url, time.monotonic() + self.startup_timeout, self.process)
        except RuntimeError as exc:
            self.stop()
            raise RuntimeError(f"{exc}; log: {self.log_path.read_text(errors='replace')[-2000:]}") from None
        return self

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        log = getattr(self, "_log", None)
        if log is not None:
            log.close()

    def __enter__(self) -> NoidaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def elasticsearch_url(data_dir: Path) -> Iterator[str]:
    """``$ELASTICSEARCH_URL`` if set (a real cluster), else a noida-db server started for the caller."""
    real = os.environ.get("ELASTICSEARCH_URL", "").strip()
    if real:
        yield real.rstrip("/")
        return
    with NoidaServer(data_dir) as server:
        yield server.url


# --------------------------------------------------------------------------------------
# A proxy that rejects bulk items with 429
# --------------------------------------------------------------------------------------

REJECTION = {
    "type": "es_rejected_execution_exception",
    "reason": "rejected execution of coordinating operation [shard_detail=[trawl-urls-v1][0][P]],"
    " write queue capacity [10000] (injected by the test proxy)",
}


class RejectingProxy:
    """Forwards everything to ``upstream``; ``_bulk`` items that ``reject(source_line)`` picks get 429.

    ``reject`` sees each document line (bytes) of a bulk request and the number
    of the bulk request (1-based); set it (or ``None``) at any time.

    ``fail`` sees the number of each bulk request and may fail it as a whole:
    ``"503"`` answers 503 without forwarding it, ``"timeout"`` forwards it (the
    documents are written) and then holds the answer for ``stall`` seconds,
    longer than the client waits.
    """

    def __init__(
        self, upstream: str, reject: Callable[[bytes, int], bool] | None = None, es8_headers: bool = False,
        fail: Callable[[int], str | None] | None = None, stall: float = 3.0,
    ) -> None:  # fmt: skip
        self.upstream = urlsplit(upstream)
        self.reject = reject
        self.fail = fail
        self.stall = stall
        #: Refuse ``compatible-with=9`` media types the way Elasticsearch 8 does (HTTP 400).
        self.es8_headers = es8_headers
        self.compat_seen: set[str] = set()
        self.bulk_requests = 0
        self.rejected = 0
        #: Bulk requests failed as a whole, by how: {"503": n, "timeout": n}.
        self.failed: dict[str, int] = {}
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path
                status, headers, answer = proxy.handle(self.command, path, dict(self.headers), body)
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer)))
                try:
                    self.end_headers()
                    self.wfile.write(answer)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting ("timeout")
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def _upstream(self, method: str, path: str, headers: dict[str, str], body: bytes):  # type: ignore[no-untyped-def]
        con = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=60)
        try:
            hop = ("host", "content-length", "connection")
            send = {k: v for k, v in headers.items() if k.lower() not in hop}
            con.request(method, path, body=body or None, headers=send)
            response = con.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            con.close()

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes):  # type: ignore[no-untyped-def]
        media = " ".join(v for k, v in headers.items() if k.lower() in ("accept", "content-type"))
        self.compat_seen.update(re.findall(r"compatible-with=(\d+)", media))
        if self.es8_headers and re.search(r"compatible-with=(?!8\b|7\b)\d+", media):
            reason = (
                "A compatible version is required on both Content-Type and Accept headers if either one has"
                " requested a compatible version and the compatible versions must match."
            )
            error = {
                "type": "media_type_header_exception",
                "reason": "Invalid media-type value on headers [Accept, Content-Type]",
                "caused_by": {"type": "status_exception", "reason": reason},
            }
            answer = orjson.dumps({"error": {**error, "root_cause": [error]}, "status": 400})
            return 400, [("X-Elastic-Product", "Elasticsearch"), ("Content-Type", "application/json")], answer
        if method not in ("POST", "PUT") or "/_bulk" not in path.split("?")[0]:
            return self._upstream(method, path, headers, body)
        if self.reject is None and self.fail is None:
            return self._upstream(method, path, headers, body)
        with self._lock:
            self.bulk_requests += 1
            number = self.bulk_requests
        how = self.fail(number) if self.fail is not None else None
        if how is not None:
            with self._lock:
                self.failed[how] = self.failed.get(how, 0) + 1
            if how == "503":
                error = {"type": "unavailable_shards_exception", "reason": "injected by the test proxy"}
                answer = orjson.dumps({"error": {**error, "root_cause": [error]}, "status": 503})
                headers_503 = [("X-Elastic-Product", "Elasticsearch"), ("Content-Type", "application/json")]
                return 503, headers_503, answer
            if how == "timeout":
                answered = self._upstream(method, path, headers, body)
                time.sleep(self.stall)  # the client's timeout passes: it never hears that this was written
                return answered
            raise ValueError(f"fail() returned {how!r}: '503', 'timeout' or None")
        if self.reject is None:
            return self._upstream(method, path, headers, body)
        lines = [line for line in body.split(b"\n") if line.strip()]
        pairs: list[tuple[bytes, bytes | None]] = []
        i = 0
        while i < len(lines):
            action = lines[i]
            kind = next(iter(orjson.loads(action)))
            if kind == "delete":
                pairs.append((action, None))
                i += 1
            else:
                pairs.append((action, lines[i + 1]))
                i += 2
        keep = [not (doc is not None and self.reject(doc, number)) for _, doc in pairs]
        forward = b"".join(
            action + b"\n" + (doc + b"\n" if doc is not None else b"")
            for (action, doc), k in zip(pairs, keep, strict=True)
            if k
        )
        if forward:
            # filter_path would hide which item is which; ask for full items, filter here.
            bare_path = path.split("?")[0]
            status, answer_headers, answer = self._upstream(method, bare_path, headers, forward)
            if status != 200:
                return status, answer_headers, answer
            forwarded = iter(orjson.loads(answer)["items"])
        else:
            answer_headers = [("Content-Type", "application/json")]
            forwarded = iter(())
        items = []
        for (action, _), k in zip(pairs, keep, strict=True):
            if k:
                items.append(next(forwarded))
            else:
                kind = next(iter(orjson.loads(action)))
                items.append({kind: {"status": 429, "error": REJECTION}})
                with self._lock:
                    self.rejected += 1
        answer_body = orjson.dumps({"took": 1, "errors": any(not k for k in keep), "items": items})
        headers_out = [("X-Elastic-Product", "Elasticsearch"), ("Content-Type", "application/json")]
        return 200, headers_out, answer_body

    def __enter__(self) -> RejectingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
