"""A real PostgreSQL 15 on 127.0.0.1, for the tests of the PostgreSQL store.

Debian's server binaries (``/usr/lib/postgresql/15/bin``, installed by
``.ci/run``): ``initdb`` in a temporary folder, ``pg_ctl start`` on a free port,
listening on 127.0.0.1 and on a socket in that folder (never the system's
``/var/run/postgresql``), ready once ``pg_isready`` says so (polled, never
slept on). PostgreSQL refuses to run as root: when the tests do, the server
runs as the ``postgres`` system user (or ``nobody``), which owns the folder.
Password authentication (``scram-sha-256``) over TCP, so that the tests see
the URI's password masked; no durability (``fsync=off``): a test server.
Without the binaries the fixtures skip, naming what is missing.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import pytest

BIN = Path(os.environ.get("TRAWL_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
#: How long a server may take to accept connections.
READY_WITHIN = 60.0
USER = "trawl"
PASSWORD = "s3cret-pg-pass"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_as() -> str | None:
    """The user the server runs as when the tests run as root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    pytest.skip("the tests run as root and there is no postgres or nobody user to run PostgreSQL as")
    return None


class PostgresServer:
    """``with PostgresServer() as pg: pg.uri("db")`` -> ``postgresql://trawl:...@127.0.0.1:PORT/db``."""

    def __init__(self) -> None:
        if not (BIN / "initdb").exists() or not (BIN / "pg_ctl").exists():
            pytest.skip(
                f"PostgreSQL server binaries missing in {BIN} (apt-get install postgresql; .ci/run does it)"
            )
        self.user = _run_as()
        self.port = _free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="trawl-pg-"))
        self.data = self.folder / "data"
        self.sockets = self.folder / "sockets"
        self.sockets.mkdir()
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            for path in (self.folder, self.sockets):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self.running = False

    def _command(self, *args: str) -> list[str]:
        prefix = ["runuser", "-u", self.user, "--"] if self.user is not None else []
        return [*prefix, *args]

    def _run(self, *args: str) -> None:
        result = subprocess.run(self._command(*args), capture_output=True, text=True, cwd=self.folder)
        if result.returncode != 0:
            raise RuntimeError(f"{Path(args[0]).name} failed ({result.returncode}): {result.stderr.strip()}")

    def uri(self, database: str = "trawl", password: str | None = PASSWORD) -> str:
        secret = f":{password}" if password is not None else ""
        return f"postgresql://{USER}{secret}@127.0.0.1:{self.port}/{database}"

    def ready(self) -> bool:
        result = subprocess.run(
            [str(BIN / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port), "-t", "1"],
            capture_output=True,
        )
        return result.returncode == 0

    def start(self) -> None:
        if not (self.data / "PG_VERSION").exists():
            pwfile = self.folder / "pwfile"
            pwfile.write_text(PASSWORD + "\n")
            if self.user is not None:
                entry = pwd.getpwnam(self.user)
                os.chown(pwfile, entry.pw_uid, entry.pw_gid)
            self._run(
                str(BIN / "initdb"), "-D", str(self.data), "-U", USER, f"--pwfile={pwfile}",
                "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--locale=C", "--no-sync",
            )  # fmt: skip
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.sockets}"
            " -c fsync=off -c full_page_writes=off -c max_connections=50"
        )
        self._run(
            str(BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.folder / "server.log"), "-W",
            "-o", options, "start",
        )  # fmt: skip
        self.running = True
        deadline = time.monotonic() + READY_WITHIN
        while not self.ready():
            if time.monotonic() > deadline:
                log = (self.folder / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"PostgreSQL not ready on port {self.port} in {READY_WITHIN} s:\n{log}")
            time.sleep(0.05)  # polling for readiness, not waiting for an outcome

    def create_database(self, name: str) -> str:
        """A fresh database (one per test module keeps the tests apart); its URI."""
        import psycopg

        with psycopg.connect(self.uri("postgres"), autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        return self.uri(name)

    def stop(self) -> None:
        if self.running:
            self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
            self.running = False

    def __enter__(self) -> PostgresServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
