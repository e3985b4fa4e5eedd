"""A real redis-server on 127.0.0.1, for the tests of distributed runs and the shared gate.

Debian's ``redis-server`` (installed by ``.ci/run``), started on a free port in a
folder of its own with no persistence, ready once it answers ``PING`` (polled,
never slept on). It can be stopped and started again on the same port, which
the tests of a Redis outage mid-run need. Without ``redis-server`` on the
machine the fixtures skip, naming what is missing.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import pytest

#: How long a server may take to answer its first PING.
READY_WITHIN = 20.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ping(port: int) -> bool:
    """Whether a Redis server answers ``PING`` on 127.0.0.1:``port`` (RESP, no client library)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """``with RedisServer() as redis: redis.url`` -> ``redis://127.0.0.1:PORT/0``."""

    def __init__(self, port: int | None = None, options: Sequence[str] = ()) -> None:
        executable = shutil.which("redis-server")
        if executable is None:
            pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run does)")
        self.executable = executable
        self.port = port or _free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="trawl-redis-"))
        #: More ``redis-server`` options (``--enable-debug-command yes`` for ``DEBUG SLEEP``).
        self.options = list(options)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [
            self.executable, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", str(self.folder), "--protected-mode", "no", *self.options,
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.folder
        )
        deadline = time.monotonic() + READY_WITHIN
        while not ping(self.port):
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode} on port {self.port}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server not ready on port {self.port} within {READY_WITHIN} s")
            time.sleep(0.02)  # polling for readiness, not waiting for an outcome

    def stop(self) -> None:
        """Stop the server (its data is gone: no persistence), as an outage would."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)
        self.process = None

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
