"""A SQLite store is never shared across machines by workers of one queue (trawl.distributed.storecheck).

The other machine's worker is written into a real Redis as it would write
itself (its id in the registry, a live heartbeat, its host and store kind);
then a real ``trawl worker`` starts here.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.helpers import processes
from tests.servers.redis_server import RedisServer
from trawl.distributed.queue import WORKERS, heartbeat_key
from trawl.distributed.storecheck import STORES

TRAWL = [sys.executable, "-m", "trawl.cli"]


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with RedisServer() as running:
        yield running


def other_worker(url: str, host: str, kind: str, alive: bool = True) -> str:
    worker = f"{host}-4242-abcdef"
    client = redis.Redis.from_url(url)
    client.sadd(WORKERS, worker)
    client.hset(STORES, worker, f"{host}\t{kind}")
    if alive:
        client.set(heartbeat_key(worker), b"1", ex=120)
    client.close()
    return worker


def worker(tmp_path: Path, url: str, store_uri: str) -> subprocess.CompletedProcess[str]:
    command = [
        *TRAWL,
        "worker",
        "--until-empty",
        "-s",
        f"TRAWL_REDIS_URL={url}",
        "-s",
        f"STORE_URI={store_uri}",
    ]
    return processes.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)


def test_sqlite_here_with_a_live_worker_elsewhere_is_refused(server: RedisServer, tmp_path: Path) -> None:
    other_worker(server.url, "elsewhere", "shared")
    result = worker(tmp_path, server.url, "sqlite:///trawl.db")
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        "trawl: error: a SQLite store cannot be shared across machines"
    )
    assert "elsewhere" in lines[0] and "Traceback" not in result.stderr


def test_a_shared_store_here_with_sqlite_elsewhere_is_refused(server: RedisServer, tmp_path: Path) -> None:
    other_worker(server.url, "elsewhere", "sqlite")
    result = worker(tmp_path, server.url, "elasticsearch://127.0.0.1:9")
    assert result.returncode == 2, result.stderr
    assert "a SQLite store cannot be shared across machines" in result.stderr


def test_workers_of_one_machine_share_a_sqlite_file(server: RedisServer, tmp_path: Path) -> None:
    other_worker(server.url, socket.gethostname(), "sqlite")
    result = worker(tmp_path, server.url, "sqlite:///trawl.db")
    assert result.returncode == 0, result.stderr


def test_a_dead_worker_elsewhere_does_not_count(server: RedisServer, tmp_path: Path) -> None:
    dead = other_worker(server.url, "elsewhere", "shared", alive=False)
    result = worker(tmp_path, server.url, "sqlite:///trawl.db")
    assert result.returncode == 0, result.stderr
    client = redis.Redis.from_url(server.url)
    assert not client.hexists(STORES, dead)
    assert client.hlen(STORES) == 0  # and this worker's own entry is gone with it
    client.close()
