"""Redis and PostgreSQL for distributed runs without Docker: ``make services``, ``make services-stop``.

``start`` runs Debian's ``redis-server`` and a PostgreSQL cluster of its own
(``initdb`` and ``pg_ctl`` from ``/usr/lib/postgresql/N/bin``), both on
127.0.0.1 only, with every file in one folder (``.services/`` in the checkout,
git-ignored), waits until both answer, and prints the two ``export`` lines trawl
reads (``TRAWL_REDIS_URL``, ``TRAWL_STORE_URI``) on stdout, everything else on
stderr, so that ``eval "$(make services)"`` sets them. Run again while they are
up, it says so and prints the same lines: one cluster per folder. ``stop`` ends
both and keeps their files (the next ``start`` reuses the cluster and its
ports); deleting the folder throws everything away.

Ports are free ones picked at the first start and kept in ``ports.json``, or
fixed ones given with ``--redis-port`` / ``--postgres-port``. PostgreSQL
refuses to run as root: as root, the cluster's folder belongs to the
``postgres`` system user (or ``nobody``) and ``initdb`` and ``pg_ctl`` run as
that user through ``runuser``. Redis keeps nothing on disk (``--save ""``): a
queue for trying things, not for keeping. Standard library only: it runs with
the system's ``python3`` before ``make setup``.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

#: The cluster's role, password and database: the compose file's, so that the docs' URIs read the same.
USER = PASSWORD = DATABASE = "trawl"
#: Seconds each server may take to answer; PostgreSQL's first start (initdb, then the server) takes about 2 s.
READY_WITHIN = 60.0


class ServiceError(Exception):
    """A one-line reason the services could not be started or stopped."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:``port`` (both servers set SO_REUSEADDR, so TIME_WAIT
    connections left by a stopped one do not count)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def redis_answers(port: int) -> bool:
    """Whether a Redis server answers ``PING`` on 127.0.0.1:``port`` (RESP by hand: no client library)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def postgres_bin() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``: ``$TRAWL_PG_BIN``, else Debian's newest, else ``PATH``'s."""
    if os.environ.get("TRAWL_PG_BIN"):
        return Path(os.environ["TRAWL_PG_BIN"])
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0,
    )
    if debian:
        return debian[-1].parent
    found = shutil.which("initdb")
    if found is None:
        raise ServiceError("PostgreSQL's initdb not found (apt-get install postgresql, or set TRAWL_PG_BIN)")
    return Path(found).parent


def run_as() -> str | None:
    """The user PostgreSQL runs as when this runs as root (it refuses root); None: this user."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise ServiceError("running as root, and there is no postgres or nobody user to run PostgreSQL as")


class Services:
    """The two servers of one folder: their files, ports and state."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder.resolve()
        self.redis_dir = self.folder / "redis"
        self.pg_dir = self.folder / "postgres"
        self.data = self.pg_dir / "data"
        self.ports_file = self.folder / "ports.json"

    # --- state -------------------------------------------------------------------------------------------
    def ports(self) -> dict[str, int]:
        if not self.ports_file.exists():
            return {}
        return {k: int(v) for k, v in json.loads(self.ports_file.read_text()).items()}

    def lines(self, ports: dict[str, int]) -> str:
        return (
            f"export TRAWL_REDIS_URL=redis://127.0.0.1:{ports['redis']}/0\n"
            f"export TRAWL_STORE_URI=postgresql://{USER}:{PASSWORD}@127.0.0.1:{ports['postgres']}/{DATABASE}\n"
        )

    def redis_pid(self) -> int | None:
        """The pid of this folder's redis-server if it is alive: a pid file left by a crash or a reboot
        may name another process by now, which ``stop`` must never signal."""
        try:
            pid = int((self.redis_dir / "redis.pid").read_text().strip())
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return None
        return pid if b"redis-server" in command else None

    def redis_up(self, ports: dict[str, int]) -> bool:
        return "redis" in ports and self.redis_pid() is not None and redis_answers(ports["redis"])

    def postgres_up(self) -> bool:
        if not (self.data / "postmaster.pid").exists():
            return False
        return self._pg("pg_ctl", "-D", str(self.data), "status", check=False).returncode == 0

    # --- PostgreSQL --------------------------------------------------------------------------------------
    def _pg(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        user = run_as()
        prefix = ["runuser", "-u", user, "--"] if user is not None else []
        command = [*prefix, str(postgres_bin() / tool), *args]
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=self.pg_dir, stdin=subprocess.DEVNULL
        )
        if check and done.returncode != 0:
            reason = (done.stderr.strip() or done.stdout.strip()).splitlines()
            raise ServiceError(f"{tool} failed ({done.returncode}): {reason[-1] if reason else 'no output'}")
        return done

    def _own_pg_dir(self) -> None:
        """As root: the cluster's folder belongs to the user PostgreSQL runs as, who must reach it."""
        self.pg_dir.mkdir(parents=True, exist_ok=True)
        user = run_as()
        if user is None:
            return
        entry = pwd.getpwnam(user)
        for path in [self.pg_dir, *self.pg_dir.rglob("*")]:
            os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
        reach = subprocess.run(
            ["runuser", "-u", user, "--", "test", "-w", str(self.pg_dir)], capture_output=True
        )
        if reach.returncode != 0:
            raise ServiceError(
                f"PostgreSQL runs as {user} (it refuses root), who cannot reach {self.pg_dir}: "
                "give it a folder it can reach (make services SERVICES_DIR=/tmp/trawl-services)"
            )

    def start_postgres(self, port: int) -> None:
        self._own_pg_dir()
        created = not (self.data / "PG_VERSION").exists()
        if created:
            pwfile = self.pg_dir / "pwfile"
            pwfile.write_text(PASSWORD + "\n")
            self._own_pg_dir()
            self._pg(
                "initdb", "-D", str(self.data), "-U", USER, f"--pwfile={pwfile}", "--auth-host=scram-sha-256",
                "--auth-local=trust", "-E", "UTF8", "--locale=C", "--no-sync",
            )  # fmt: skip
            pwfile.unlink()
        (self.pg_dir / "sockets").mkdir(exist_ok=True)
        self._own_pg_dir()
        sockets = self.pg_dir / "sockets"
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={sockets}"
            " -c fsync=off -c full_page_writes=off"
        )
        log = self.pg_dir / "server.log"
        timeout = str(int(READY_WITHIN))
        done = self._pg(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(log),
            "-w",
            "-t",
            timeout,
            "-o",
            options,
            "start",
            check=False,
        )
        if done.returncode != 0:
            raise ServiceError(f"PostgreSQL did not start on port {port} (see {log})")
        if created:
            self._pg("createdb", "-h", str(self.pg_dir / "sockets"), "-p", str(port), "-U", USER, DATABASE)

    def stop_postgres(self) -> bool:
        if not self.postgres_up():
            return False
        self._pg("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", str(int(READY_WITHIN)), "stop")
        return True

    # --- Redis -------------------------------------------------------------------------------------------
    def start_redis(self, port: int) -> None:
        executable = shutil.which("redis-server")
        if executable is None:
            raise ServiceError("redis-server not found (apt-get install redis-server)")
        self.redis_dir.mkdir(parents=True, exist_ok=True)
        command = [
            executable, "--port", str(port), "--bind", "127.0.0.1", "--daemonize", "yes",
            "--pidfile", str(self.redis_dir / "redis.pid"), "--logfile", str(self.redis_dir / "redis.log"),
            "--dir", str(self.redis_dir), "--save", "", "--appendonly", "no",
        ]  # fmt: skip
        subprocess.run(command, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + READY_WITHIN
        while not redis_answers(port):
            if time.monotonic() > deadline:
                raise ServiceError(
                    f"redis-server did not answer on port {port} (see {self.redis_dir / 'redis.log'})"
                )
            time.sleep(0.02)  # polling for readiness

    def stop_redis(self) -> bool:
        pid = self.redis_pid()
        if pid is None:
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + READY_WITHIN
        while self.redis_pid() is not None:
            if time.monotonic() > deadline:
                raise ServiceError(f"redis-server (pid {pid}) did not stop within {READY_WITHIN:g} s")
            time.sleep(0.02)  # polling for the exit
        return True

    # --- the commands ------------------------------------------------------------------------------------
    def pick_ports(self, redis_port: int, postgres_port: int) -> dict[str, int]:
        """Given ports, else those of the last start while still free, else free ones."""
        kept = self.ports()
        ports = {}
        for name, asked in (("redis", redis_port), ("postgres", postgres_port)):
            if asked:
                ports[name] = asked
            elif name in kept and port_free(kept[name]):
                ports[name] = kept[name]
            else:
                ports[name] = free_port()
        return ports

    def start(self, redis_port: int, postgres_port: int) -> str:
        kept = self.ports()
        redis_up, postgres_up = self.redis_up(kept), self.postgres_up()
        if redis_up and postgres_up:
            note(f"already running from {self.folder} (make services-stop ends them)")
            return self.lines(kept)
        ports = dict(kept) if (redis_up or postgres_up) else self.pick_ports(redis_port, postgres_port)
        for name, up in (("redis", redis_up), ("postgres", postgres_up)):
            if not up and not port_free(ports[name]):
                raise ServiceError(f"port {ports[name]} for {name} is taken on 127.0.0.1 (pick another)")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.ports_file.write_text(json.dumps(ports) + "\n")
        if not redis_up:
            self.start_redis(ports["redis"])
        if not postgres_up:
            self.start_postgres(ports["postgres"])
        note(
            f"redis-server on 127.0.0.1:{ports['redis']}, PostgreSQL on 127.0.0.1:{ports['postgres']}, "
            f"files in {self.folder} (make services-stop ends them)"
        )
        return self.lines(ports)

    def stop(self) -> None:
        stopped = [
            name
            for name, stop in (("redis-server", self.stop_redis), ("PostgreSQL", self.stop_postgres))
            if stop()
        ]
        note(f"stopped {' and '.join(stopped)}" if stopped else f"nothing running from {self.folder}")


def note(line: str) -> None:
    print(f"services: {line}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="services.py", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("start", "stop"))
    parser.add_argument(
        "--dir", type=Path, default=Path(".services"), help="the folder of both servers' files"
    )
    parser.add_argument("--redis-port", type=int, default=0, help="0: a free port, kept for the next start")
    parser.add_argument(
        "--postgres-port", type=int, default=0, help="0: a free port, kept for the next start"
    )
    args = parser.parse_args(argv)
    services = Services(args.dir)
    try:
        if args.command == "start":
            sys.stdout.write(services.start(args.redis_port, args.postgres_port))
        else:
            services.stop()
    except ServiceError as error:
        print(f"services: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("services: error: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
