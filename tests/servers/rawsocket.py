"""The socket loop under the fakes that answer below HTTP (hostile, silent, the hostile site):
one listening socket, one thread a connection, every connection closed when the server stops."""

from __future__ import annotations

import socket
import threading
from types import TracebackType
from typing import Any


class RawSocketServer:
    #: Pending connections the listening socket holds.
    backlog = 64

    def _open(self, name: str) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(self.backlog)
        self._sock.settimeout(0.05)
        self.port: int = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True, name=name)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _handle(self, conn: socket.socket) -> None:  # pragma: no cover - each server answers
        raise NotImplementedError

    def _prepare(self) -> None:
        """Work to do before the first connection is accepted."""

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._conns.append(conn)
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _read_head(self, conn: socket.socket, data: bytes) -> tuple[list[str], bytes] | None:
        """The next request's head lines, and what came after its body (``None``: closed or stopping)."""
        while b"\r\n\r\n" not in data:
            if self._stop.is_set():
                return None
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return None
            if not chunk:
                return None
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip() or 0)
        while len(rest) < length and not self._stop.is_set():
            try:
                rest += conn.recv(65536)
            except TimeoutError:
                continue
        return lines, rest[length:]

    def __enter__(self) -> Any:
        self._prepare()
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        with self._lock:
            for conn in self._conns:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                conn.close()
        self._sock.close()
