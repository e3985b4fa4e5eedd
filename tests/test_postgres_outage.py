"""A PostgreSQL restart under three workers: waited out, nothing dead-lettered, lost or doubled.

Before, a 10 s restart of the shared store's server dead-lettered every task
running at the time (``partial``: the store failed), and ``trawl worker
--until-empty`` exited 0 with the server still down, the queue emptied by
the dead letters: 7,699 of 20,000 URLs stored until the tasks were queued
again. Now the store's writer waits a lost connection out (a backoff up to
``POSTGRES_OUTAGE_MAX``), retries the batch it was writing whole and exactly
once, and the crawls go on once the server is back.

The end to end runs use only the command line, as a user runs it: ``trawl enqueue`` three domains
(each on its own fake upstreams, slowed down so that the crawls are running
when the server stops), three ``trawl worker --until-empty`` processes into
one PostgreSQL store, the server stopped (``pg_ctl stop -m fast``) once the
store holds some URLs, held down a few seconds, started again on the same port
and data folder. Then: the store holds exactly the expected URLs, each with the
record one plain ``trawl crawl all`` per domain gives (nothing counted twice),
nothing is dead-lettered, and every worker exited 0, after the server was back.
One of the workers waits at most 1 s (``POSTGRES_OUTAGE_MAX``): its crawls give
up, their tasks go back to the queue and run again; the others wait the restart out.

A batch whose ``COMMIT`` reached the server but whose answer the outage cut
is the case a plain retry gets wrong (its ``captures`` summed twice): it is
made to happen here in-process, on a store whose connection is cut right
after (or right before) the commit.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
import redis
from scrapy.settings import Settings

from tests.helpers.distributed_postgres import DOMAINS, SOURCES, crawl_arguments, stored, trawl
from tests.helpers.workers import WorkerProcess, settings_args
from tests.servers.devdata import build_dataset, expected_urls
from tests.servers.devserver import crawl_settings, start_upstreams
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.postgres_server import PASSWORD, PostgresServer
from tests.servers.redis_server import RedisServer
from trawl.distributed.queue import WorkQueue
from trawl.pipeline.context import RunContext
from trawl.records.batches import UrlBatch
from trawl.stores.postgresql import PostgresStore

#: Seconds each fake upstream takes to answer: a task runs for a few seconds, so that the server's
#: restart falls in the middle of the crawls.
LATENCY = 0.25
#: How long the server stays down: long enough that every running crawl meets the outage.
DOWN_FOR = 4.0
#: Everything ends well within this; a hung worker fails the test instead of hanging it.
DEADLINE = 120.0
SETTINGS = {
    "RATE_LIMITS_ENABLED": "False",
    "AUTOTHROTTLE_ENABLED": "False",
    "SOURCE_CONCURRENCY": json.dumps(dict.fromkeys(SOURCES, 2)),
    "TRAWL_CACHE_DIR": "",
    "PROGRESS_INTERVAL": "0",
}


def count_urls(uri: str) -> int:
    """URLs in the store now; 0 before the first batch made the table."""
    with psycopg.connect(uri, connect_timeout=5) as con:
        row = con.execute("SELECT to_regclass('public.urls') IS NOT NULL").fetchone()
        if not row or not row[0]:
            return 0
        found = con.execute("SELECT count(*) FROM urls").fetchone()
        return int(found[0]) if found else 0


class Exits:
    """When each worker process ended (``time.monotonic()``), watched on a thread each."""

    def __init__(self, workers: list[WorkerProcess]) -> None:
        self.at: dict[int, float] = {}
        self._threads = [threading.Thread(target=self._watch, args=(i, w), daemon=True)
                         for i, w in enumerate(workers)]  # fmt: skip
        for thread in self._threads:
            thread.start()

    def _watch(self, index: int, worker: WorkerProcess) -> None:
        worker.process.wait()
        self.at[index] = time.monotonic()

    def join(self, timeout: float) -> None:
        for thread in self._threads:
            thread.join(timeout)


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


@pytest.fixture(scope="module")
def upstreams(pg: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """Redis, each domain's fake upstreams, and the store a plain process per domain fills."""
    with ExitStack() as stack:
        redis_server = stack.enter_context(RedisServer())
        data, servers = {}, {}
        for seed, domain in enumerate(DOMAINS):
            data[domain] = build_dataset(600, sources=SOURCES, domain=domain, seed=seed, crawls=2)
            servers[domain] = start_upstreams(data[domain], stack)
        cwd = tmp_path_factory.mktemp("postgres-outage")
        up = SimpleNamespace(
            redis=redis_server, pg=pg, servers=servers, cwd=cwd,
            settings={domain: {k: v for k, v in crawl_settings(s).items() if k.endswith(("_URL", "_KEY"))}
                      for domain, s in servers.items()},
            expected=set().union(*(expected_urls(d) for d in data.values())),
        )  # fmt: skip
        # The reference: one plain process per domain, no Redis, no outage.
        plain = pg.create_database("plain")
        for domain in DOMAINS:
            arguments = crawl_arguments(domain)
            reference = settings_args({**up.settings[domain], **SETTINGS, "STORE_URI": plain})
            trawl(cwd, "crawl", "all", "-a", f"domain={arguments[0]}", *arguments[1:], *reference)
        up.plain = stored(cwd, plain)
        yield up


def slowed(up: SimpleNamespace, latency: float) -> None:
    for by_source in up.servers.values():
        for server in by_source.values():
            server.latency = latency


@pytest.fixture(scope="module")
def run(upstreams: SimpleNamespace) -> SimpleNamespace:
    """Three workers over the three domains into one store, PostgreSQL restarted in the middle.

    The first worker waits at most 1 s for the server (``POSTGRES_OUTAGE_MAX``, its own ``-s``),
    less than the outage: its crawls give up and their tasks go back to the queue. The two others
    wait the outage out (the default: minutes)."""
    up = upstreams
    cwd, pg, redis_url = up.cwd, up.pg, up.redis.url
    shared = pg.create_database("shared")
    for domain in DOMAINS:
        queued = trawl(cwd, "enqueue", *crawl_arguments(domain),
                       *settings_args({**up.settings[domain], "TRAWL_REDIS_URL": redis_url}))  # fmt: skip
        assert queued.stdout.strip().endswith("queued 3 task(s) for 1 domain(s)")
    worker_settings = {
        **SETTINGS,
        "TRAWL_REDIS_URL": redis_url,
        "STORE_URI": shared,
        "QUEUE_HEARTBEAT": "0.5",
    }
    bounds = [{"POSTGRES_OUTAGE_MAX": "1"}, {}, {}]
    slowed(up, LATENCY)
    started = time.monotonic()
    workers = [
        WorkerProcess(cwd, {**worker_settings, **bound}, "--until-empty", "--tasks", "2") for bound in bounds
    ]
    exits = Exits(workers)
    try:
        # Every worker past its start: one still checking its settings when the server stops
        # (a slow start, under load) would meet an unreachable store at start, one line and exit 2.
        for worker in workers:
            worker.wait_for(r": waiting for work \(", timeout=DEADLINE)
        # Mid-run: the store holds some URLs, and far from all of them.
        deadline = time.monotonic() + 60
        while (before := count_urls(shared)) == 0:
            assert time.monotonic() < deadline, "\n\n".join(w.tail() for w in workers)
            assert not exits.at, "a worker ended before the store held anything"
            time.sleep(0.05)  # polling the store for the first batch
        stopped_at = time.monotonic()
        pg.stop()  # pg_ctl stop -m fast: the sessions are ended, the writes in flight rolled back
        time.sleep(DOWN_FOR)  # holding the server down: the outage itself, not a wait for an outcome
        running_while_down = [i for i in range(len(workers)) if i not in exits.at]
        pg.start()  # the same port and data folder; returns once pg_isready says so
        back_at = time.monotonic()
        codes = [w.finish(timeout=DEADLINE) for w in workers]
        exits.join(10)
    finally:
        for worker in workers:
            worker.stop()
        slowed(up, 0.0)
    ended = time.monotonic()
    status = trawl(cwd, "queue", "-s", f"TRAWL_REDIS_URL={redis_url}").stdout
    distributed = stored(cwd, shared)
    print(
        f"PostgreSQL stopped {stopped_at - started:.1f} s into the run with {before} of"
        f" {len(up.expected)} URLs stored, down {back_at - stopped_at:.1f} s; the workers ended"
        f" {ended - back_at:.1f} s after it was back ({ended - started:.1f} s in all); {len(distributed)}"
        " URLs stored"
    )
    return SimpleNamespace(
        workers=workers, codes=codes, exits=exits, back_at=back_at, running_while_down=running_while_down,
        status=status, expected=up.expected, before=before, distributed=distributed, plain=up.plain,
    )  # fmt: skip


def logs(run: SimpleNamespace) -> str:
    return "\n\n".join(w.tail(60) for w in run.workers)


def test_every_worker_waits_for_the_server_and_exits_0_once_the_queue_is_empty(run: SimpleNamespace) -> None:
    assert run.codes == [0, 0, 0], logs(run)
    assert len(run.running_while_down) == 3, "a worker exited while PostgreSQL was down:\n" + logs(run)
    assert len(run.exits.at) == 3 and all(at > run.back_at for at in run.exits.at.values()), logs(run)
    for worker in run.workers:
        assert worker.count(r": the queue is empty and no worker holds work: exiting") == 1, worker.tail(60)
        text = "\n".join(worker.lines)
        assert "Traceback" not in text and PASSWORD not in text, worker.tail(60)
        assert "dead-lettered" not in text, worker.tail(60)
    assert "total: 0 pending, 0 in flight, 0 dead-lettered" in run.status, run.status


#: The store's two lines of an outage (the pipeline's and the worker's lines name it too).
LOST = r"WARNING: PostgreSQL store \S+ unreachable \("
BACK = r"WARNING: PostgreSQL store \S+ is back after \d"


def test_the_outage_is_said_once_when_it_starts_and_once_when_it_ends(run: SimpleNamespace) -> None:
    assert any(w.count(LOST) for w in run.workers), logs(run)  # a worker was writing when the server went
    for worker in run.workers:
        assert worker.count(LOST) <= 1, worker.tail(60)
        assert worker.count(BACK) == worker.count(LOST), worker.tail(60)


def test_past_the_bound_the_tasks_go_back_to_the_queue(run: SimpleNamespace) -> None:
    back = r"handed back to the queue.*: the store was unreachable: the PostgreSQL store .* unreachable for"
    bounded, *waiting = run.workers
    assert bounded.count(back) >= 1, bounded.tail(60)
    assert [w.count(back) for w in waiting] == [0, 0], logs(run)


def test_the_store_holds_exactly_the_expected_urls_each_once(run: SimpleNamespace) -> None:
    assert 0 < run.before < len(run.expected)  # the server stopped mid-run
    urls = [r["url"] for r in run.distributed]
    assert len(urls) == len(set(urls))
    assert set(urls) == run.expected


def test_nothing_is_counted_twice(run: SimpleNamespace) -> None:
    """Each URL's record (sources, captures, first and last seen, statuses, mimes) is the one a plain
    process per domain stores: a batch whose commit the outage cut was not merged twice, and a task
    run again after its store gave up counts its captures once."""
    plain = {r["url"]: r for r in run.plain}
    assert {r["url"]: r for r in run.distributed} == plain


# --------------------------------------------------------------------------------------
# A batch whose COMMIT the outage cut: written once, whichever side of the commit the cut fell
# --------------------------------------------------------------------------------------


class Stats:
    def __init__(self) -> None:
        self.values: dict[str, object] = {}

    def get_stats(self) -> dict[str, object]:
        return self.values

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = int(self.values.get(key, 0)) + count  # type: ignore[call-overload]

    def set_value(self, key: str, value: object) -> None:
        self.values[key] = value


class CutConnection:
    """The store's connection, lost at the end of its next transaction: after the server committed it
    (``after=True``: the answer to ``COMMIT`` never arrives) or before (rolled back)."""

    def __init__(self, con: psycopg.Connection, cuts: list[bool]) -> None:
        self._con = con
        self._cuts = cuts

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def transaction(self) -> Any:
        real = self._con.transaction()
        cuts, con = self._cuts, self._con

        class Cut:
            def __enter__(self) -> Any:
                return real.__enter__()

            def __exit__(self, kind: Any, value: Any, tb: Any) -> Any:
                if kind is not None or not cuts:
                    return real.__exit__(kind, value, tb)
                after = cuts.pop(0)
                if after:
                    real.__exit__(None, None, None)  # committed on the server
                con.close()  # before: the server rolls the transaction back
                raise psycopg.OperationalError("server closed the connection unexpectedly")

        return Cut()


class CutStore(PostgresStore):
    cuts: list[bool]

    def _session(self) -> psycopg.Connection:
        con = super()._session()
        if isinstance(con, CutConnection):
            return con
        self.connection = CutConnection(con, self.cuts)  # type: ignore[assignment]
        return self.connection  # type: ignore[return-value]


def cut_store(uri: str, run_id: str, cuts: list[bool]) -> CutStore:
    crawler = SimpleNamespace(settings=Settings({}), stats=Stats())
    inputs = {"target": SimpleNamespace(domain="example.com")}
    context = RunContext(
        crawler=crawler, spider=SimpleNamespace(name="wayback"), run_id=run_id, plugins=None, inputs=inputs
    )  # type: ignore[arg-type]
    store = CutStore(uri, context)
    store.cuts = []
    store.open()
    store.cuts += cuts
    return store


def batch(*rows: tuple[str, int]) -> UrlBatch:
    return UrlBatch.from_columns(
        source="wayback", urls=[url for url, _ in rows], hosts=["example.com"] * len(rows),
        first_seen=["20200101000000"] * len(rows), last_seen=["20210101000000"] * len(rows),
        captures=[captures for _, captures in rows], statuses=["200"] * len(rows),
        mimes=["text/html"] * len(rows),
    )  # fmt: skip


def captures(uri: str) -> dict[str, int]:
    with psycopg.connect(uri) as con:
        return dict(con.execute("SELECT url, captures FROM urls"))


A, B, C = "https://example.com/a", "https://example.com/b", "https://example.com/c"


@pytest.mark.parametrize("after", [True, False], ids=["cut-after-commit", "cut-before-commit"])
def test_a_batch_whose_commit_was_cut_is_stored_once(pg: PostgresServer, after: bool) -> None:
    uri = pg.create_database(f"cut_{'after' if after else 'before'}")
    store = cut_store(uri, "run-1", [after, after])
    try:
        first = batch((A, 2), (B, 3))
        assert store.write_batch(first) == 2  # both new, whether the writer saw the commit or not
        assert first.frame.get_column("new").to_list() == [True, True]
        assert captures(uri) == {A: 2, B: 3}
        second = batch((B, 1), (C, 4))  # B known: merged, its captures summed within the run
        assert store.write_batch(second) == 1
        assert second.frame.get_column("new").to_list() == [False, True]
        assert second.frame.get_column("captures").to_list() == [4, 4]
        assert captures(uri) == {A: 2, B: 4, C: 4}  # not B: 5, C: 8 (merged twice)
        assert store.cuts == []  # both cuts happened
        third = batch((A, 1))
        assert store.write_batch(third) == 0
        assert captures(uri) == {A: 3, B: 4, C: 4}
    finally:
        store.close("finished")
    with psycopg.connect(uri) as con:  # the writer's rows went with it
        assert con.execute("SELECT count(*) FROM trawl_batches").fetchone() == (0,)


# --------------------------------------------------------------------------------------
# A spread run's owner whose store did not open: no joiner is invited to a run that is not there
# --------------------------------------------------------------------------------------


def test_an_owner_whose_store_did_not_open_invites_no_joiner(pg: PostgresServer, tmp_path: Path) -> None:
    """An owner whose store gave up at its opening (the server away past ``POSTGRES_OUTAGE_MAX``, or
    any failure) registered no run: a joiner invited to it failed ("the spread run ... is not in the
    store") and its join task was dead-lettered (seen 1 run in 3 of the restart above, under load).
    A database that refuses writes makes the opening fail every time, after the worker's checks."""
    uri = pg.create_database("read_only")
    with psycopg.connect(pg.uri("postgres"), autocommit=True) as con:
        con.execute("ALTER DATABASE read_only SET default_transaction_read_only = on")
    rows = [make_capture(f"http://example.com/p{n:03d}", "20200101000000") for n in range(30)]
    with RedisServer() as redis_server, FakeCdxServer(rows, lines_per_page=3) as cdx:
        own = {**SETTINGS, "TRAWL_REDIS_URL": redis_server.url, "STORE_URI": uri, "QUEUE_HEARTBEAT": "0.5"}
        workers = [WorkerProcess(tmp_path, own) for _ in range(2)]
        try:
            for worker in workers:
                worker.wait_for(r": waiting for work \(")
            upstream = {"WAYBACK_BASE_URL": cdx.base_url, "TRAWL_REDIS_URL": redis_server.url}
            trawl(tmp_path, "enqueue", "example.com", "-a", "sources=wayback", "-a", "filters=false",
                  *settings_args(upstream))  # fmt: skip
            queue = WorkQueue(redis.Redis.from_url(redis_server.url))
            deadline = time.monotonic() + DEADLINE
            while not (
                sum(w.count(r"wayback for example.com dead-lettered") for w in workers) and queue.idle()
            ):
                assert time.monotonic() < deadline, "\n\n".join(w.tail() for w in workers)
                time.sleep(0.1)  # polling the workers' logs and the queue
            status = trawl(tmp_path, "queue", "-s", f"TRAWL_REDIS_URL={redis_server.url}").stdout
        finally:
            for worker in workers:
                worker.stop()
    text = "\n\n".join("\n".join(w.lines) for w in workers)
    assert "the database is read-only" in text, text[-3000:]  # the owner's one line: its store did not open
    assert "joined spread run" not in text and "is not in the store" not in text, text[-3000:]
    assert "total: 0 pending, 0 in flight, 1 dead-lettered" in status, status  # the task, no join task
