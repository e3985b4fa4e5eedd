"""``trawl worker`` runs its tasks in its own process: SIGTERM finishes them, a second one hands them back,
and the worker serves ``/metrics`` itself.

One domain, one source (wayback) on a fake CDX server answering each page
after a delay, so that a signal arrives while the task's crawl runs. What is
checked is what a user sees: the exit status, the worker's lines, ``trawl
queue``, the store, and the worker's ``/metrics`` endpoint.
"""

from __future__ import annotations

import re
import signal
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.helpers import processes
from tests.helpers.workers import COMMON, TRAWL, WorkerProcess, queue_status, settings_args, stored
from tests.servers.devdata import build_dataset, expected_urls
from tests.servers.devserver import crawl_settings, start_upstreams
from tests.servers.redis_server import RedisServer

DOMAIN = "example.com"


@pytest.fixture
def slow_wayback() -> Iterator[tuple[dict[str, str], set[str]]]:
    with ExitStack() as stack:
        data = build_dataset(1500, sources=("wayback",), domain=DOMAIN, seed=7, crawls=2)
        servers = start_upstreams(data, stack)
        servers["wayback"].latency = 0.4  # a few seconds of crawl: time for a signal to land mid-task
        settings = {k: v for k, v in crawl_settings(servers).items() if k.endswith("_URL")}
        yield settings, expected_urls(data)


@pytest.fixture
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


def enqueue_one(cwd: Path, url: str, upstream: dict[str, str]) -> None:
    command = [*TRAWL, "enqueue", DOMAIN, "-a", "sources=wayback", "-a", "filters=false"]
    command += settings_args({**upstream, "TRAWL_REDIS_URL": url})
    done = processes.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def children(pid: int) -> list[str]:
    """The child processes of ``pid`` (Linux: ``/proc/<pid>/task/*/children``)."""
    found: list[str] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += (task / "children").read_text().split()
    return found


def start_worker(cwd: Path, url: str, store: Path, **extra: str) -> WorkerProcess:
    settings = {**COMMON, "TRAWL_REDIS_URL": url, "STORE_URI": f"sqlite:///{store}", **extra}
    return WorkerProcess(cwd, settings)


def test_sigterm_finishes_the_task_held_then_exits_0(
    tmp_path: Path, redis_url: str, slow_wayback: tuple[dict[str, str], set[str]]
) -> None:
    upstream, expected = slow_wayback
    enqueue_one(tmp_path, redis_url, upstream)
    store = tmp_path / "w.db"
    worker = start_worker(tmp_path, redis_url, store)
    try:
        worker.wait_for(r"CDX page\(s\) for example\.com")  # its crawl runs...
        assert children(worker.process.pid) == []  # ...in the worker's own process, no child's
        worker.process.send_signal(signal.SIGTERM)
        assert worker.finish(timeout=240) == 0, worker.tail()
    finally:
        worker.stop()
    assert worker.count("taking no more work, finishing the 1 task") == 1
    assert worker.count(r"wayback for example\.com done in ") == 1
    assert set(stored(store)) == expected  # finished, not cut short
    assert "total: 0 pending, 0 in flight, 0 dead-lettered" in queue_status(tmp_path, redis_url)


def test_a_second_sigterm_stops_the_crawl_and_hands_the_task_back(
    tmp_path: Path, redis_url: str, slow_wayback: tuple[dict[str, str], set[str]]
) -> None:
    upstream, expected = slow_wayback
    enqueue_one(tmp_path, redis_url, upstream)
    store = tmp_path / "w.db"
    worker = start_worker(tmp_path, redis_url, store)
    try:
        worker.wait_for(r"CDX page\(s\) for example\.com")
        worker.process.send_signal(signal.SIGTERM)
        worker.wait_for("taking no more work")
        worker.process.send_signal(signal.SIGTERM)
        assert worker.finish(timeout=120) == 0, worker.tail()
    finally:
        worker.stop()
    assert worker.count(r"wayback for example\.com stopped; handed back to the queue") == 1
    assert worker.count(" done in ") == 0
    assert set(stored(store)) <= expected  # what it stored before it stopped stays stored
    assert "total: 1 pending, 0 in flight, 0 dead-lettered" in queue_status(tmp_path, redis_url)


def test_the_worker_serves_metrics_with_the_queue_depth(
    tmp_path: Path, redis_url: str, slow_wayback: tuple[dict[str, str], set[str]]
) -> None:
    upstream, _ = slow_wayback
    worker = start_worker(tmp_path, redis_url, tmp_path / "w.db", PROMETHEUS_PORT="0")
    try:
        line = worker.wait_for(r"metrics: serving http://")
        url = re.search(r"http://\S+/metrics", line)
        assert url is not None
        enqueue_one(tmp_path, redis_url, upstream)
        worker.wait_for(r"wayback for example\.com done in ", timeout=240)
        with urllib.request.urlopen(url.group(0), timeout=10) as answer:  # noqa: S310 - 127.0.0.1
            text = answer.read().decode()
    finally:
        worker.stop()
    assert 'trawl_crawls_total{outcome="complete",source="wayback"} 1.0' in text
    assert 'trawl_queue_depth{source="wayback"} 0.0' in text  # its one task taken: none left waiting
    assert re.search(r'trawl_pages_total\{source="wayback"\} [1-9]', text)
