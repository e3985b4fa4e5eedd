"""A server that accepts every connection, reads the request, and never answers.

What a hung upstream (or a firewall that swallows packets after the handshake)
looks like to a client: issue 9 measured 492 s of silence, four 120 s timeouts.
Connections are held open until the server stops; ``requests`` counts the
requests that arrived (their first line), for tests to poll.
"""

from __future__ import annotations

import socket
import threading
from types import TracebackType


class SilentServer:
    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.05)
        self.port: int = self._sock.getsockname()[1]
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        #: First lines of the requests received (``GET /path HTTP/1.1``).
        self.requests: list[str] = []
        self._thread = threading.Thread(target=self._serve, daemon=True, name="SilentServer")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._held.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        conn.settimeout(0.1)
        data = b""
        while not self._stop.is_set():
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            data += chunk
            while b"\r\n\r\n" in data:
                head, data = data.split(b"\r\n\r\n", 1)
                with self._lock:
                    self.requests.append(head.split(b"\r\n", 1)[0].decode("latin-1"))

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        with self._lock:
            for conn in self._held:
                conn.close()
        self._sock.close()
