"""A server that accepts every connection, reads the request, and never answers.

What a hung upstream (or a firewall that swallows packets after the handshake)
looks like to a client (one real upstream kept a crawl 492 s in silence, four 120 s timeouts).
Connections are held open until the server stops; ``requests`` counts the
requests that arrived (their first line), for tests to poll.
"""

from __future__ import annotations

import socket

from tests.servers.rawsocket import RawSocketServer


class SilentServer(RawSocketServer):
    def __init__(self) -> None:
        self._open("SilentServer")
        #: First lines of the requests received (``GET /path HTTP/1.1``).
        self.requests: list[str] = []

    def _handle(self, conn: socket.socket) -> None:
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
