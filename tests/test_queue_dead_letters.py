"""``trawl queue --json``, ``trawl queue retry`` and ``trawl queue purge`` on a real redis-server.

A dead letter used to stay until someone deleted Redis keys by hand. What is
checked is what a user sees: the lines printed, the JSON, and the queue's
counts afterwards; a task's settings (its API keys) never appear.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import redis

from tests.helpers import processes
from tests.helpers.workers import COMMON, TRAWL, WorkerProcess
from tests.servers.redis_server import RedisServer
from trawl.distributed.queue import DEAD, PENDING, WorkQueue
from trawl.distributed.tasks import Task

SECRET = "otx-key-never-printed"


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def queue(tmp_path: Path, url: str, *args: str) -> processes.subprocess.CompletedProcess[str]:
    return processes.run(
        [*TRAWL, "queue", *args, "-s", f"TRAWL_REDIS_URL={url}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def dead_lettered(client: redis.Redis, count: int) -> WorkQueue:
    work = WorkQueue(client)
    for i in range(count):
        task = Task(f"example{i}.com", "otx", {"domain": f"example{i}.com"}, {"OTX_API_KEY": SECRET})
        assert work.push(task)
        raw = work.take("w1", timeout=1)
        assert raw is not None
        work.dead_letter("w1", raw, f"otx: cannot reach otx.example: connection refused ({i})")
    client.rpush(DEAD, b"not a dead letter")
    return work


def test_json_status_names_each_dead_letter_and_no_setting(tmp_path: Path, redis_server: RedisServer) -> None:
    dead_lettered(redis.Redis.from_url(redis_server.url), 2)
    result = queue(tmp_path, redis_server.url, "--json")
    assert result.returncode == 0, result.stderr
    status = orjson.loads(result.stdout)
    assert status["total"] == {"pending": 0, "in_flight": 0, "dead": 2}
    assert sorted(d["reason"] for d in status["dead_letters"]) == [
        "otx: cannot reach otx.example: connection refused (0)",
        "otx: cannot reach otx.example: connection refused (1)",
    ]
    assert status["unreadable"] == 1
    assert SECRET not in result.stdout + result.stderr


def test_retry_queues_each_dead_letter_once_and_purge_drops_them(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    client = redis.Redis.from_url(redis_server.url)
    dead_lettered(client, 3)
    first = queue(tmp_path, redis_server.url, "retry")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == ["3 dead-lettered task(s) queued again"]
    assert client.llen(PENDING) == 3 and client.llen(DEAD) == 1  # the unreadable entry is kept
    again = queue(tmp_path, redis_server.url, "retry")
    assert again.stdout.splitlines() == ["0 dead-lettered task(s) queued again"]
    assert client.llen(PENDING) == 3
    purged = queue(tmp_path, redis_server.url, "purge")
    assert purged.stdout.splitlines() == ["1 dead-lettered task(s) dropped"]
    assert client.llen(DEAD) == 0
    assert "total: 3 pending, 0 in flight, 0 dead-lettered" in queue(tmp_path, redis_server.url).stdout


def test_an_unknown_queue_subcommand_is_one_line(tmp_path: Path, redis_server: RedisServer) -> None:
    result = queue(tmp_path, redis_server.url, "retyr")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "trawl: error: unknown subcommand 'retyr' (trawl queue [retry|purge] [--json])"
    ]


def test_a_dead_letter_names_the_sources_own_error_line(tmp_path: Path, redis_server: RedisServer) -> None:
    """Not only ``the crawl ended incomplete (failed)``: the line that says why, as the run logged it."""
    settings = ["-s", f"TRAWL_REDIS_URL={redis_server.url}"]
    unreachable = ["-s", "OTX_BASE_URL=http://127.0.0.1:9", "-s", "RETRY_TIMES=0"]
    queued = processes.run(
        [*TRAWL, "enqueue", "example.com", "-a", "sources=otx", *settings, *unreachable],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert queued.returncode == 0, queued.stderr
    given = {**COMMON, "TRAWL_REDIS_URL": redis_server.url, "STORE_URI": f"sqlite:///{tmp_path / 'w.db'}"}
    worker = WorkerProcess(tmp_path, given, "--until-empty")
    try:
        assert worker.finish(timeout=120) == 0, worker.tail()
    finally:
        worker.stop()
    status = orjson.loads(queue(tmp_path, redis_server.url, "--json").stdout)
    [dead] = status["dead_letters"]
    assert dead["reason"].startswith("the crawl ended incomplete (failed): otx: "), dead
    assert "127.0.0.1:9" in dead["reason"] and "refused" in dead["reason"], dead
