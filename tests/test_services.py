"""``make services``: Redis and PostgreSQL for a distributed run without Docker, as a user runs it.

``make services`` is run as a real process (its folder in a temporary
directory), its two ``export`` lines are put in the environment of ``trawl
enqueue`` and ``trawl worker --until-empty`` exactly as ``eval "$(make
services)"`` would, and the URLs the worker stored are read back from
PostgreSQL by ``trawl search`` through the same variables. Then
``make services-stop``, and both servers' processes are gone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.helpers import processes
from tests.helpers.workers import COMMON, TRAWL, settings_args
from tests.servers.devdata import build_dataset, expected_urls
from tests.servers.devserver import crawl_settings, start_upstreams

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def make(target: str, folder: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", target, f"SERVICES_DIR={folder}", f"PYTHON={sys.executable}"],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def exported(stdout: str) -> dict[str, str]:
    """``export NAME=value`` lines -> {NAME: value}; any other line on stdout fails the test."""
    found = {}
    for line in stdout.splitlines():
        match = re.fullmatch(r"export ([A-Z_]+)=(\S+)", line)
        assert match, f"not an export line on stdout: {line!r}"
        found[match[1]] = match[2]
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def folder() -> Iterator[Path]:
    """The services' folder, where PostgreSQL's user reaches it when the tests run as root (pytest's
    ``tmp_path`` is private to root); whatever a failed test left running is stopped."""
    parent = Path(tempfile.mkdtemp(prefix="trawl-services-"))
    parent.chmod(0o755)
    yield parent / "services"
    make("services-stop", parent / "services")
    shutil.rmtree(parent, ignore_errors=True)


def test_make_services_runs_a_distributed_run_then_stops(folder: Path, tmp_path: Path) -> None:
    if not Path("/usr/lib/postgresql").exists() and subprocess.run(["which", "initdb"]).returncode != 0:
        pytest.skip("PostgreSQL server binaries are not installed (apt-get install postgresql)")
    started = make("services", folder)
    assert started.returncode == 0, started.stderr
    env = exported(started.stdout)
    assert set(env) == {"TRAWL_REDIS_URL", "TRAWL_STORE_URI"}
    assert env["TRAWL_STORE_URI"].startswith("postgresql://")
    assert "Traceback" not in started.stderr

    again = make("services", folder)
    assert again.returncode == 0, again.stderr
    assert again.stdout == started.stdout
    assert "already running" in again.stderr
    ports = json.loads((folder / "ports.json").read_text())
    redis_pid = int((folder / "redis" / "redis.pid").read_text())
    postgres_pid = int((folder / "postgres" / "data" / "postmaster.pid").read_text().split()[0])

    with ExitStack() as stack:
        data = build_dataset(300, sources=("wayback",), domain="example.com", seed=3)
        servers = start_upstreams(data, stack)
        upstream = {k: v for k, v in crawl_settings(servers).items() if k.endswith("_URL")}
        # Were TRAWL_STORE_URI not read, the runs would share a SQLite store in this folder.
        run_env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), **env}
        queued = processes.run(
            [*TRAWL, "enqueue", "example.com", "-a", "sources=wayback", "-a", "filters=false",
             *settings_args(upstream)],
            cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert queued.returncode == 0, queued.stderr
        worker = processes.run(
            [*TRAWL, "worker", "--until-empty", *settings_args({**COMMON, "QUEUE_HEARTBEAT": "0.5"})],
            cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert worker.returncode == 0, worker.stderr[-3000:]
        found = processes.run(
            [*TRAWL, "search", "*", "--format", "jsonl"],
            cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert found.returncode == 0, found.stderr
    assert {json.loads(line)["url"] for line in found.stdout.splitlines()} == expected_urls(data)
    assert not (tmp_path / "data").exists()

    stopped = make("services-stop", folder)
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped redis-server and PostgreSQL" in stopped.stderr
    deadline = time.monotonic() + 30
    while alive(redis_pid) or alive(postgres_pid):
        assert time.monotonic() < deadline, "a server outlived make services-stop"
        time.sleep(0.05)  # polling for the exits
    assert not answers(ports["redis"]) and not answers(ports["postgres"])
    again = make("services-stop", folder)
    assert again.returncode == 0 and "nothing running" in again.stderr
