"""One domain's pages spread over workers (trawl.distributed.spread, spreadsched), on a real redis-server.

The run queue: requests go in by Scrapy's ``to_dict`` with callbacks by name
and come out bound to another process's spider; one that cannot be serialized
fails loudly; a worker that dies holding requests loses none of them, and what
is fetched twice is exactly what it held; the run's dedup expires with the run.

Spread runs of ``trawl worker`` processes against the fake CDX servers: every
worker fetches pages, each page once, the store exact, one run record whose
stats count the whole run; a joiner or the owner killed with ``kill -9``, or
Redis restarted mid-run: nothing lost, nothing stored twice, pages fetched
twice at most what the dead worker held; Common Crawl's pages spread too.
"""

from __future__ import annotations

import re
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import scrapy
from scrapy.utils.request import fingerprint

from tests.helpers import processes
from tests.helpers.workers import COMMON, TRAWL, WorkerProcess, stored
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.redis_server import RedisServer
from trawl.distributed.queue import WorkQueue
from trawl.distributed.spread import RunRequests, UnserializableRequest
from trawl.errors import UnreachableError


class Pages(scrapy.Spider):
    name = "pages"

    def parse_page(self, response: scrapy.http.Response) -> None:
        """A callback another worker's spider has too: requests name it."""

    def on_error(self, failure: object) -> None:
        """An errback, named the same way."""


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    with RedisServer() as server:
        yield redis.Redis.from_url(server.url)


def page(spider: Pages, n: int) -> scrapy.Request:
    return scrapy.Request(
        f"http://127.0.0.1:9/cdx?url=example.com/*&page={n}", callback=spider.parse_page,
        errback=spider.on_error, meta={"endpoint": 0, "page": n, "walk": False, "fields": ("url", "status")},
    )  # fmt: skip


def push_pages(run: RunRequests, spider: Pages, count: int) -> None:
    for n in range(count):
        request = page(spider, n)
        assert run.push(request, spider, fingerprint(request).hex())


def test_a_request_comes_out_bound_to_another_workers_spider(client: redis.Redis) -> None:
    owner, joiner = Pages(), Pages()
    push_pages(RunRequests(client, "run1", "w1"), owner, 1)
    theirs = RunRequests(client, "run1", "w2")
    raw = theirs.pop()
    assert raw is not None
    request = theirs.decode(raw, joiner)
    assert request.callback == joiner.parse_page and request.errback == joiner.on_error
    assert request.meta["page"] == 0 and request.meta["fields"] == ("url", "status")
    assert client.llen("trawl:spread:run1:held:w2") == 1  # held until acknowledged
    assert not theirs.finished()
    theirs.ack(raw)
    assert theirs.finished()


@pytest.mark.parametrize(
    "make",
    [
        lambda s: scrapy.Request("http://127.0.0.1:9/a", callback=lambda response: None),
        lambda s: scrapy.Request(
            "http://127.0.0.1:9/b", callback=s.parse_page, meta={"lock": threading.Lock()}
        ),
    ],
    ids=["a lambda callback", "a lock in its meta"],
)
def test_a_request_that_cannot_be_serialized_fails_loudly_and_queues_nothing(
    client: redis.Redis, make
) -> None:
    spider = Pages()
    run = RunRequests(client, "run1", "w1")
    request = make(spider)
    with pytest.raises(
        UnserializableRequest, match=r"pages: the request for http://127\.0\.0\.1:9/. cannot be put"
    ):
        run.push(request, spider, fingerprint(request).hex())
    assert client.llen(run.requests) == 0 and not client.exists(run.seen)


def test_a_dead_workers_held_requests_come_back_and_only_those_are_fetched_twice(client: redis.Redis) -> None:
    spider = Pages()
    queue = WorkQueue(client, heartbeat=0.1)  # a worker is dead 0.3 s after its last beat
    push_pages(RunRequests(client, "run1", "owner"), spider, 20)
    victim = RunRequests(client, "run1", "victim")
    queue.beat("victim")
    fetched: list[int] = []
    for _ in range(3):  # it takes three pages, fetches them, and dies before storing any
        raw = victim.pop()
        assert raw is not None
        fetched.append(victim.decode(raw, spider).meta["page"])
    survivor = RunRequests(client, "run1", "survivor")
    queue.beat("survivor")
    deadline = time.monotonic() + 30
    while not (reaped := survivor.reap()):  # polled: the victim's heartbeat expires in 0.3 s
        assert time.monotonic() < deadline, "the dead worker's requests never came back"
        threading.Event().wait(0.05)
    assert reaped == {"victim": 3}
    while (raw := survivor.pop()) is not None:
        fetched.append(survivor.decode(raw, spider).meta["page"])
        survivor.ack(raw)
    assert sorted(set(fetched)) == list(range(20))  # recall 1.000
    assert len(fetched) - 20 == 3  # fetched twice: exactly what the dead worker held
    assert survivor.finished()


def test_the_runs_dedup_is_bounded_by_its_expiry(client: redis.Redis) -> None:
    spider = Pages()
    run = RunRequests(client, "run1", "w1", ttl=60)
    request = page(spider, 1)
    key = fingerprint(request).hex()
    assert run.push(request, spider, key)
    assert not run.push(page(spider, 1), spider, key)  # seen in this run: not queued again
    assert run.push(page(spider, 1).replace(dont_filter=True), spider, key)  # a retry is
    assert client.llen(run.requests) == 2
    assert 0 < client.pttl(run.seen) <= 60_000 and 0 < client.pttl(run.requests) <= 60_000


# --- spread runs: trawl worker processes against the fake CDX server -----------------------

PAGES = 60
#: Every spread run ends well within this; a hung worker fails the test instead of hanging it.
DEADLINE = 180.0


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
def cdx_server() -> Iterator[FakeCdxServer]:
    """One domain of 60 CDX pages (3 URLs a page), each answered after 200 ms."""
    rows = [make_capture(f"http://example.com/p{n:04d}", "20200101000000") for n in range(PAGES * 3)]
    with FakeCdxServer(rows, lines_per_page=3, latency=0.2) as server:
        yield server


def spread_workers(
    tmp_path: Path, redis_url: str, server: FakeCdxServer, count: int = 3, first: Any = None,
    **settings: str,
) -> tuple[dict[str, int], list[WorkerProcess]]:  # fmt: skip
    """``count`` workers (``USER_AGENT`` names each), then the one wayback task; until the queue is empty."""
    store = tmp_path / "spread.db"
    common = {**COMMON, "TRAWL_REDIS_URL": redis_url, "STORE_URI": f"sqlite:///{store}",
              "QUEUE_HEARTBEAT": "1", "SPREAD_PAGES": "True", **settings}  # fmt: skip
    # Not --until-empty: every worker is up (and so gets a join task) before the task is queued.
    workers = [WorkerProcess(tmp_path, {**common, "USER_AGENT": f"worker-{n}"}) for n in range(count)]
    try:
        for worker in workers:
            worker.wait_for("waiting for work")
        command = [*TRAWL, "enqueue", "example.com", "-a", "sources=wayback", "-a", "filters=false",
                   "-s", f"WAYBACK_BASE_URL={server.base_url}", "-s", f"TRAWL_REDIS_URL={redis_url}",
                   ]  # fmt: skip
        done = processes.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        if first is not None:
            first(workers)
        queue = WorkQueue(redis.Redis.from_url(redis_url))
        deadline = time.monotonic() + DEADLINE
        while not (sum(w.count(r" done in ") for w in workers) >= 1 and queue.idle()):  # polled, not slept
            assert time.monotonic() < deadline, "\n\n".join(w.tail() for w in workers)
            threading.Event().wait(0.2)
        for worker in workers:
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGTERM)
        codes = [w.finish(60) if w.process.returncode is None else w.process.returncode for w in workers]
    finally:
        for worker in workers:
            worker.stop()
    assert all(code in (0, -9) for code in codes), "\n\n".join(w.tail() for w in workers)
    assert "Traceback" not in "\n".join(line for w in workers for line in w.lines), workers[0].tail()
    return stored(store), workers


def pages_by_worker(server: FakeCdxServer) -> dict[str, list[int]]:
    """User-Agent -> the CDX pages it fetched (the server's request log)."""
    fetched: dict[str, list[int]] = {}
    for record in server.requests:
        params = dict(record.params)
        if "page" in params and "showNumPages" not in params:
            fetched.setdefault(record.headers.get("User-Agent", ""), []).append(int(params["page"]))
    return fetched


def expected_urls() -> set[str]:
    return {f"http://example.com/p{n:04d}" for n in range(PAGES * 3)}


def test_one_domains_pages_are_spread_over_three_workers(
    tmp_path: Path, redis_server: RedisServer, cdx_server: FakeCdxServer
) -> None:
    urls, workers = spread_workers(tmp_path, redis_server.url, cdx_server)
    fetched = pages_by_worker(cdx_server)
    assert sorted(fetched) == ["worker-0", "worker-1", "worker-2"], fetched  # every worker fetched pages
    every = [page for pages in fetched.values() for page in pages]
    assert sorted(every) == list(range(PAGES + 1))  # each page (and the one walked past) once: none twice
    assert set(urls) == expected_urls()  # exactly the expected URLs, each stored once
    assert all(count == 1 for count in urls.values())
    with sqlite3.connect(tmp_path / "spread.db") as con:  # one run record, the owner's, closed
        runs = con.execute("SELECT run_id, finish_reason FROM runs").fetchall()
    assert len(runs) == 1 and runs[0][1] == "finished", runs
    assert sum(w.count(r"spreading its pages, 2 join task\(s\) queued") for w in workers) == 1
    # The owner's finish line counts the whole run's pages and URLs, not its own share.
    _, owner = owner_of(workers)
    finish = [line for line in owner.lines if re.search(r"wayback: complete \(finished\)", line)]
    # The page walked past the count is no page (as in one process), whichever worker fetched it.
    assert len(finish) == 1 and f"{PAGES} pages, {PAGES * 3} URLs seen" in finish[0], finish
    assert f"{PAGES * 3} new this run" in finish[0], finish


def test_a_worker_killed_mid_run_loses_no_page_and_doubles_only_what_it_held(
    tmp_path: Path, redis_server: RedisServer, cdx_server: FakeCdxServer
) -> None:
    victims: list[WorkerProcess] = []

    def kill_a_joiner(workers: list[WorkerProcess]) -> None:
        deadline = time.monotonic() + DEADLINE
        while True:  # polled: a joiner that has fetched a page, the run not over
            joining = r"spreading run \w+'s pages \(joiner\)"
            joiners = [(n, w) for n, w in enumerate(workers) if w.count(joining)]
            fetched = pages_by_worker(cdx_server)
            ready = [(n, w) for n, w in joiners if fetched.get(f"worker-{n}")]
            if ready:
                break
            assert time.monotonic() < deadline, "\n\n".join(w.tail() for w in workers)
            threading.Event().wait(0.05)
        victim = ready[0][1]
        victim.process.kill()  # kill -9: the requests it holds stay in its held list
        victim.process.wait()
        victims.append(victim)

    urls, workers = spread_workers(tmp_path, redis_server.url, cdx_server, first=kill_a_joiner)
    assert victims and victims[0].process.returncode == -signal.SIGKILL
    every = [page for pages in pages_by_worker(cdx_server).values() for page in pages]
    assert set(every) == set(range(PAGES + 1))
    assert set(urls) == expected_urls() and all(count == 1 for count in urls.values())  # recall 1.000
    twice = len(every) - len(set(every))
    back = [int(m) for w in workers if w is not victims[0]
            for m in re.findall(r"is dead: (\d+) request\(s\) back", "\n".join(w.lines))]  # fmt: skip
    assert twice <= sum(back) <= 6, (twice, back)  # fetched twice: at most what it held (SPREAD_HOLD: 3 x 2)


def owner_of(workers: list[WorkerProcess]) -> tuple[int, WorkerProcess]:
    owners = [(n, w) for n, w in enumerate(workers) if w.count(r"spreading run \w+'s pages \(owner\)")]
    assert len(owners) == 1, "\n\n".join(w.tail() for w in workers)
    return owners[0]


def wait_until(ready: Any, workers: list[WorkerProcess]) -> None:
    deadline = time.monotonic() + DEADLINE
    while not ready():  # polled
        assert time.monotonic() < deadline, "\n\n".join(w.tail() for w in workers)
        threading.Event().wait(0.05)


def test_the_owner_killed_mid_run_hands_the_run_on(
    tmp_path: Path, redis_server: RedisServer, cdx_server: FakeCdxServer
) -> None:
    killed: list[WorkerProcess] = []

    def kill_the_owner(workers: list[WorkerProcess]) -> None:
        def mid_run() -> bool:  # the owner has fetched pages, and so has a joiner: the run is under way
            if not any(w.count(r"\(owner\)") for w in workers):
                return False
            n, _ = owner_of(workers)
            fetched = pages_by_worker(cdx_server)
            return len(fetched.get(f"worker-{n}", [])) >= 3 and len(fetched) >= 2

        wait_until(mid_run, workers)
        _, owner = owner_of(workers)
        owner.process.kill()  # kill -9: its task and the requests it holds stay where they are
        owner.process.wait()
        killed.append(owner)

    urls, workers = spread_workers(tmp_path, redis_server.url, cdx_server, first=kill_the_owner)
    assert killed and killed[0].process.returncode == -signal.SIGKILL
    every = [page for pages in pages_by_worker(cdx_server).values() for page in pages]
    assert set(every) == set(range(PAGES + 1))
    assert set(urls) == expected_urls() and all(count == 1 for count in urls.values())  # recall 1.000
    twice = len(every) - len(set(every))
    live = [w for w in workers if w is not killed[0]]
    back = [int(m) for w in live for m in re.findall(r"is dead: (\d+) request\(s\) back", "\n".join(w.lines))]
    assert twice <= sum(back) <= 6, (twice, back)  # fetched twice: at most what the owner held
    # The run was handed on: its task came back to the queue and another worker owns the run now.
    assert sum(w.count(r"is dead: 1 task\(s\) back in the queue") for w in live) == 1
    assert sum(w.count(r"spreading run \w+'s pages \(owner\)") for w in live) == 1
    with sqlite3.connect(tmp_path / "spread.db") as con:
        runs = con.execute("SELECT finish_reason FROM runs").fetchall()
    assert runs == [("finished",)], runs


def test_redis_restarted_mid_spread_run_loses_nothing(
    tmp_path: Path, redis_server: RedisServer, cdx_server: FakeCdxServer
) -> None:
    client = redis.Redis.from_url(redis_server.url)

    def restart(workers: list[WorkerProcess]) -> None:
        wait_until(lambda: sum(map(len, pages_by_worker(cdx_server).values())) >= 10, workers)
        client.config_set("save", "3600 1")  # the queue's Redis persists (docs/distributed.md)
        redis_server.stop()
        for worker in workers:
            worker.wait_for("Redis unreachable")
        redis_server.start()

    urls, workers = spread_workers(tmp_path, redis_server.url, cdx_server, first=restart)
    for worker in workers:
        assert worker.count("Redis unreachable") == 1, worker.tail()  # logged once per outage
        assert worker.count("Redis is back after") == 1, worker.tail()
    every = [page for pages in pages_by_worker(cdx_server).values() for page in pages]
    assert sorted(every) == list(range(PAGES + 1))  # each page once: nothing lost, nothing fetched twice
    assert set(urls) == expected_urls() and all(count == 1 for count in urls.values())
    errors = [line for w in workers for line in w.lines if " ERROR: " in line]
    assert not errors, errors  # no request failed for want of Redis: the crawls waited the outage out


def test_common_crawls_pages_are_spread_over_workers(tmp_path: Path, redis_server: RedisServer) -> None:
    """Common Crawl builds its endpoints from collinfo.json: its page requests carry them."""
    from tests.servers import commoncrawl as cc

    crawls = ["CC-MAIN-2025-33", "CC-MAIN-2025-30", "CC-MAIN-2025-26"]
    collinfo = [cc.collinfo_entry(c, f"2025-0{8 - n}-01T00:00:00", f"2025-0{8 - n}-20T00:00:00")
                for n, c in enumerate(crawls)]  # fmt: skip
    indexes = {c: [cc.cc_record(f"http://example.com/{c}/p{n:03d}", f"2025080{n % 9 + 1}100000", crawl=c)
                   for n in range(40)] for c in crawls}  # fmt: skip
    with cc.FakeCommonCrawl(indexes, collinfo=collinfo, max_blocks=2) as server:  # 2 lines a page: 20 pages
        server.latency = 0.1
        store = tmp_path / "spread.db"
        common = {**COMMON, "TRAWL_REDIS_URL": redis_server.url, "STORE_URI": f"sqlite:///{store}",
                  "QUEUE_HEARTBEAT": "1", "SPREAD_PAGES": "True"}  # fmt: skip
        workers = [WorkerProcess(tmp_path, {**common, "USER_AGENT": f"worker-{n}"}) for n in range(3)]
        try:
            for worker in workers:
                worker.wait_for("waiting for work")
            command = [*TRAWL, "enqueue", "example.com", "-a", "sources=commoncrawl", "-a", "filters=false",
                       "-a", "cc_indexes=0", "-s", f"COMMONCRAWL_BASE_URL={server.base_url}",
                       "-s", f"TRAWL_REDIS_URL={redis_server.url}"]  # fmt: skip
            done = processes.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr[-2000:]
            queue = WorkQueue(redis.Redis.from_url(redis_server.url))
            wait_until(lambda: sum(w.count(r" done in ") for w in workers) >= 1 and queue.idle(), workers)
        finally:
            for worker in workers:
                worker.stop()
        pages: dict[str, list[tuple[str, str]]] = {}
        for record in server.index_requests():
            params = dict(record.params)
            if "showNumPages" not in params:
                agent = record.headers.get("User-Agent", "")
                pages.setdefault(agent, []).append((record.path, params["page"]))
        collinfo_by = {r.headers.get("User-Agent") for r in server.requests if "collinfo" in r.path}
    assert "Traceback" not in "\n".join(line for w in workers for line in w.lines), workers[0].tail()
    every = [page for fetched in pages.values() for page in fetched]
    assert len(every) == len(set(every)) and len({path for path, _ in every}) == 3  # each page once
    assert len(pages) >= 2, pages  # more than one worker fetched index pages...
    assert set(pages) - collinfo_by, (pages.keys(), collinfo_by)  # ...one that never read collinfo.json
    assert set(stored(store)) == {f"http://example.com/{c}/p{n:03d}" for c in crawls for n in range(40)}


def test_a_crawler_built_during_a_redis_outage_waits_instead_of_failing(tmp_path: Path) -> None:
    """A worker builds a task's crawler while Redis is away (taken just before the outage): its
    scheduler and its checks must not ask Redis then, or the task fails and is dead-lettered,
    its URLs lost (seen 1 run in 8 of the three-worker Redis restart test with spreading on)."""
    from scrapy.utils.test import get_crawler

    from trawl.distributed.spreadsched import OWNER, ROLE, RUN, WORKER, SpreadScheduler
    from trawl.run.preflight import check_run

    with RedisServer() as server:
        url = server.url
        server.stop()
        settings = {"TRAWL_REDIS_URL": url, RUN: "run-1", WORKER: "w-1", ROLE: OWNER}
        crawler = get_crawler(Pages, settings_dict=settings)
        scheduler = SpreadScheduler.from_crawler(crawler)  # no PING: the lane waits the outage out
        assert scheduler.run.run == "run-1"
        check_run(crawler.settings, plugins=None, redis_checked=True)  # type: ignore[arg-type]
        with pytest.raises(UnreachableError, match="cannot reach Redis"):  # `trawl crawl`: one line at start
            check_run(crawler.settings, plugins=None)  # type: ignore[arg-type]


class LoadingRedis:
    """A Redis started again and still loading its saved queue: ``INFO`` answers (Redis allows it while
    loading), everything else is refused with ``LOADING``."""

    def info(self, *sections: str) -> dict[str, Any]:
        return {"uptime_in_seconds": 0, "loading": 1}

    def register_script(self, script: str) -> Any:
        return self.__getattr__("evalsha")  # called: refused

    def __getattr__(self, name: str) -> Any:
        def refused(*args: Any, **kwargs: Any) -> Any:
            raise redis.BusyLoadingError("Redis is loading the dataset in memory")

        return refused


def test_a_redis_still_loading_is_still_away_for_the_reapers() -> None:
    """The reapers' first command after a restart is ``INFO``, which Redis answers while it loads its
    saved queue: taken for its return, it ended the outage (``Redis is back``), and the next command,
    refused with ``LOADING``, started a second one: the outage logged twice (seen at load 5)."""
    with pytest.raises(redis.BusyLoadingError):
        WorkQueue(LoadingRedis()).reap("w-1")  # type: ignore[arg-type]
    with pytest.raises(redis.BusyLoadingError):
        RunRequests(LoadingRedis(), "run-1", "w-1").reap(heartbeat=1.0)  # type: ignore[arg-type]
