"""``trawl enqueue`` / ``trawl worker`` / ``trawl queue`` on a real redis-server, against the fake upstreams.

Three domains x three sources (wayback, commoncrawl, otx), each domain on its
own upstreams (its base URLs travel in its tasks' ``-s``), crawled by three
worker processes into one SQLite store: the store must hold exactly the
expected URLs, with the captures one uninterrupted pass gives, whether a
worker is killed with ``kill -9`` or Redis is restarted mid-run. Readiness is
read from the workers' log lines and the queue, never slept on.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.helpers import processes
from tests.helpers.polling import wait_for
from tests.helpers.workers import COMMON, TRAWL, WorkerProcess, queue_status, settings_args, stored
from tests.servers.devdata import Dataset, build_dataset, expected_urls
from tests.servers.devserver import crawl_settings, start_upstreams
from tests.servers.redis_server import RedisServer
from trawl.distributed.queue import DEAD, PENDING, WorkQueue
from trawl.distributed.tasks import Task

SOURCES = ("wayback", "commoncrawl", "otx")
DOMAINS = ("example.com", "example.org", "example.net")


class Upstreams:
    def __init__(self, stack: ExitStack) -> None:
        self.data: dict[str, Dataset] = {}
        self.settings: dict[str, dict[str, Any]] = {}
        for seed, domain in enumerate(DOMAINS):
            data = build_dataset(1500, sources=SOURCES, domain=domain, seed=seed, crawls=2)
            settings = crawl_settings(start_upstreams(data, stack))
            self.data[domain] = data
            self.settings[domain] = {k: v for k, v in settings.items() if k.endswith(("_URL", "_KEY"))}

    def expected(self) -> set[str]:
        return set().union(*(expected_urls(data) for data in self.data.values()))


@pytest.fixture(scope="module")
def upstreams() -> Iterator[Upstreams]:
    with ExitStack() as stack:
        yield Upstreams(stack)


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def enqueue(cwd: Path, url: str, upstreams: Upstreams) -> None:
    for domain in DOMAINS:
        command = [*TRAWL, "enqueue", domain, "-a", "sources=" + ",".join(SOURCES), "-a", "filters=false"]
        command += ["-a", "cc_indexes=0"]  # every Common Crawl index (commoncrawl's own argument)
        command += settings_args({**upstreams.settings[domain], "TRAWL_REDIS_URL": url})
        done = processes.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip().endswith("queued 3 task(s) for 1 domain(s)")


def worker_settings(url: str, store: Path) -> dict[str, str]:
    return {**COMMON, "TRAWL_REDIS_URL": url, "STORE_URI": f"sqlite:///{store}", "QUEUE_HEARTBEAT": "1"}


def run_workers(
    tmp_path: Path, redis_server: RedisServer, upstreams: Upstreams, during: Any = None, first: Any = None
) -> tuple[dict[str, int], list[WorkerProcess]]:
    """Three workers until the queue is empty; ``first(worker)`` runs on the first before the others start."""
    store = tmp_path / "shared.db"
    enqueue(tmp_path, redis_server.url, upstreams)
    assert "total: 9 pending, 0 in flight, 0 dead-lettered" in queue_status(tmp_path, redis_server.url)
    settings = worker_settings(redis_server.url, store)
    # Two crawls at once each: the nine tasks are shared out, not all taken by the first to start.
    workers = [WorkerProcess(tmp_path, settings, "--until-empty", "--tasks", "2")]
    if first is not None:
        first(workers[0])
    workers += [WorkerProcess(tmp_path, settings, "--until-empty", "--tasks", "2") for _ in range(2)]
    try:
        if during is not None:
            during(workers)
        codes = [w.finish() if w.process.returncode is None else w.process.returncode for w in workers]
    finally:
        for worker in workers:
            worker.stop()
    assert all(code in (0, -9) for code in codes), "\n\n".join(w.tail() for w in workers)
    assert "Traceback" not in "\n".join(line for w in workers for line in w.lines)
    return stored(store), workers


@pytest.fixture(scope="module")
def one_pass(tmp_path_factory: pytest.TempPathFactory, upstreams: Upstreams) -> dict[str, int]:
    """The store after three workers crawled everything, uninterrupted: what every other run must equal."""
    tmp_path = tmp_path_factory.mktemp("one-pass")
    with RedisServer() as server:
        urls, workers = run_workers(tmp_path, server, upstreams)
        status = queue_status(tmp_path, server.url)
    assert "total: 0 pending, 0 in flight, 0 dead-lettered" in status
    taken = [line for w in workers for line in w.lines if re.search(r": took \w+ for |is dead|handed", line)]
    assert sum(w.count(r": took \w+ for ") for w in workers) == 9, "\n".join(taken)
    assert sum(w.count(r" done in ") for w in workers) == 9
    return urls


def test_three_workers_crawl_three_domains_into_one_store_exactly(
    one_pass: dict[str, int], upstreams: Upstreams
) -> None:
    expected = upstreams.expected()
    assert len(expected) > 3000
    assert set(one_pass) == expected


def test_a_worker_killed_mid_run_loses_nothing_and_doubles_nothing(
    tmp_path: Path, redis_server: RedisServer, upstreams: Upstreams, one_pass: dict[str, int]
) -> None:
    def kill_one(victim: WorkerProcess) -> None:
        victim.wait_for(r": took \w+ for ")
        victim.wait_for(r"CDX page\(s\)|pages? \d+")  # mid-crawl: its crawls have started
        victim.process.kill()  # kill -9: its crawls die with it, their tasks stay in its processing list

    urls, workers = run_workers(tmp_path, redis_server, upstreams, first=kill_one)
    assert workers[0].process.returncode == -signal.SIGKILL
    back = r"is dead: [1-9]\d* task\(s\) back"
    reaped = [line for w in workers[1:] for line in w.lines if re.search(back, line)]
    assert len(reaped) == 1, "\n\n".join(w.tail() for w in workers)  # what it held, returned once
    assert set(urls) == upstreams.expected()  # recall 1.000, nothing extra
    assert urls == one_pass  # every URL's captures as one pass gives them: nothing counted twice
    assert "total: 0 pending, 0 in flight, 0 dead-lettered" in queue_status(tmp_path, redis_server.url)


def test_redis_restarted_mid_run_loses_nothing(
    tmp_path: Path, redis_server: RedisServer, upstreams: Upstreams, one_pass: dict[str, int]
) -> None:
    # The queue's Redis persists (docs/distributed.md): here, a snapshot when it is stopped.
    redis.Redis.from_url(redis_server.url).config_set("save", "3600 1")

    def restart(workers: list[WorkerProcess]) -> None:
        for worker in workers:  # every worker connected (at start, an unreachable Redis is exit 2)
            worker.wait_for("waiting for work")
        workers[0].wait_for(r": took \w+ for ")
        redis_server.stop()
        for worker in workers:
            worker.wait_for("Redis unreachable")
        redis_server.start()

    urls, workers = run_workers(tmp_path, redis_server, upstreams, during=restart)
    for worker in workers:
        assert worker.count("Redis unreachable") == 1  # logged once per outage
        assert worker.count("Redis is back after") == 1
    assert set(urls) == upstreams.expected()
    assert urls == one_pass
    assert "total: 0 pending, 0 in flight, 0 dead-lettered" in queue_status(tmp_path, redis_server.url)


def unblock_calls(client: redis.Redis) -> int:
    """``CLIENT UNBLOCK`` calls the server has run so far."""
    return int(client.info("commandstats").get("cmdstat_client|unblock", {}).get("calls", 0))


def test_sigterm_stops_an_idle_worker_at_once(tmp_path: Path, redis_server: RedisServer) -> None:
    settings = {"TRAWL_REDIS_URL": redis_server.url, "STORE_URI": ""}  # heartbeat 10 s: a take blocks 5 s
    worker = WorkerProcess(tmp_path, settings)
    try:
        worker.wait_for("waiting for work")
        client = redis.Redis.from_url(redis_server.url)
        assert client.scard("trawl:queue:workers") == 1
        assert wait_for(lambda: any("b" in c["flags"] for c in client.client_list()), 30)  # its take blocks
        unblocked = unblock_calls(client)
        worker.process.send_signal(signal.SIGTERM)
        assert worker.finish(timeout=30) == 0
        # Its blocked take was ended by the server at once (CLIENT UNBLOCK), not waited out: a
        # timed bound told the two apart only on a quiet machine (exits took 1.2-3.3 s at load 10+).
        assert unblock_calls(client) > unblocked
        assert client.scard("trawl:queue:workers") == 0  # gone from the registry, nothing to reap
    finally:
        worker.stop()


@pytest.mark.parametrize("command", ["enqueue example.com", "worker", "queue"])
def test_redis_down_is_one_line_and_exit_1(tmp_path: Path, command: str) -> None:
    done = processes.run(
        [*TRAWL, *command.split(), "-s", "TRAWL_REDIS_URL=redis://:secret@127.0.0.1:9/0"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1  # a service down, as a store that cannot be reached; not bad input
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("trawl: error: TRAWL_REDIS_URL ")
    assert "cannot reach Redis" in done.stderr and "secret" not in done.stderr


def test_the_same_work_is_queued_once_and_bad_input_queues_nothing(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    scope = tmp_path / "scope.txt"
    scope.write_text("# the scope\nexample.org\n\nexample.com  # again\n", encoding="utf-8")
    base = [*TRAWL, "enqueue", "-s", f"TRAWL_REDIS_URL={url}", "-s", "OTX_API_KEY=k"]
    base += ["-a", "sources=wayback,otx"]
    first = processes.run([*base, "example.com", "--file", str(scope)], cwd=tmp_path, capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().endswith("queued 4 task(s) for 2 domain(s)")
    again = processes.run([*base, "example.com"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0
    assert "example.com wayback: already queued or running, not queued again" in again.stdout
    assert again.stdout.strip().endswith("queued 0 task(s) for 1 domain(s)")
    bad = processes.run([*base, "example.com", "not a domain"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.startswith("trawl: error: ") and bad.stderr.count("\n") == 1
    status = queue_status(tmp_path, url)
    assert re.search(r"example\.com\s+otx\s+1\s+0\s+0", status)
    assert "total: 4 pending, 0 in flight, 0 dead-lettered" in status
    assert "OTX_API_KEY" not in status and " k" not in status.split("total:")[1]  # settings never shown
    # The task carries the key: the worker needs it, the status never shows it.
    task = Task.from_json(redis.Redis.from_url(url).lindex(PENDING, 0))
    assert task.settings == {"OTX_API_KEY": "k"} and task.arguments == {"domain": "example.com"}


def test_a_task_that_keeps_killing_workers_is_dead_lettered_with_the_reason(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    client = redis.Redis.from_url(redis_server.url)
    queue = WorkQueue(client, max_deaths=2, heartbeat=0.1)  # dead 0.3 s after its last beat
    assert queue.push(Task("example.com", "wayback", {"domain": "example.com"}))
    for attempt in (1, 2):
        queue.beat(f"doomed-{attempt}")
        assert queue.take(f"doomed-{attempt}", timeout=1) is not None  # then dies: no more beats
        deadline = time.monotonic() + 30
        while not queue.reap():  # polled: the heartbeat's expiry and the reaper's grace after start
            assert time.monotonic() < deadline, "the reaper never returned the dead worker's task"
            threading.Event().wait(0.05)
    assert client.llen(PENDING) == 0 and client.llen(DEAD) == 1
    status = queue_status(tmp_path, redis_server.url)
    assert "total: 0 pending, 0 in flight, 1 dead-lettered" in status
    assert "dead-lettered: example.com wayback: its runs died 2 times (last on worker doomed-2)" in status
    # Its dedup entry went with it: the same work can be queued again.
    assert queue.push(Task("example.com", "wayback", {"domain": "example.com"}))


def test_an_unreadable_task_is_dead_lettered_never_dropped(tmp_path: Path, redis_server: RedisServer) -> None:
    client = redis.Redis.from_url(redis_server.url)
    client.rpush(PENDING, b"{not json")
    worker = WorkerProcess(tmp_path, {"TRAWL_REDIS_URL": redis_server.url, "STORE_URI": ""}, "--until-empty")
    try:
        assert worker.finish(timeout=60) == 0, worker.tail()
    finally:
        worker.stop()
    assert worker.count("dead-lettered an unreadable task: not a trawl task") == 1
    status = queue_status(tmp_path, redis_server.url)
    assert "total: 0 pending, 0 in flight, 1 dead-lettered" in status
    assert "dead-lettered: (unreadable) -: not a trawl task (JSONDecodeError" in status
