"""Three domains x three sources over three workers, into one PostgreSQL store, under one shared budget.

Only the command line, as a user runs it: ``trawl enqueue`` the three domains
(each on its own fake upstreams, their base URLs in the tasks' ``-s``), three
``trawl worker --until-empty`` processes with ``STORE_URI=postgresql://...`` and
``TRAWL_REDIS_URL``, then ``trawl search`` and ``trawl report new`` over the
store. What is checked is what a user and an upstream see: the store holds
exactly the expected URLs, each once and with the captures a plain
single-process ``trawl crawl all`` of the same domains gives (nothing counted
twice), and the request logs of each source's servers, merged across the
three domains as the shared gate sees one source, never hold more than the
source's budget in any window.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from tests.helpers.distributed_postgres import (
    DOMAINS,
    SOURCES,
    as_crawl_all,
    by_url,
    crawl_arguments,
    stored,
    trawl,
)
from tests.helpers.politeness import max_in_window
from tests.helpers.workers import TRAWL, settings_args
from tests.servers.devdata import Dataset, build_dataset, expected_urls
from tests.servers.devserver import crawl_settings, start_upstreams
from tests.servers.postgres_server import PASSWORD, PostgresServer
from tests.servers.redis_server import RedisServer

DEADLINE = 300.0
#: The shared budgets, tight enough that the three workers wait on them together.
BUDGETS = {"wayback": (3, 1.0), "commoncrawl": (4, 1.0), "otx": (5, 1.0)}
SETTINGS = {
    "RATE_LIMITS_ENABLED": "True",
    "RATE_LIMITS": json.dumps({s: f"{n}/{t:g}s" for s, (n, t) in BUDGETS.items()}),
    "SOURCE_CONCURRENCY": json.dumps(dict.fromkeys(SOURCES, 2)),
    "AUTOTHROTTLE_ENABLED": "False",
    "TRAWL_CACHE_DIR": "",
    "PROGRESS_INTERVAL": "0",
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """The distributed run, and a plain one of the same domains to compare it with."""
    with ExitStack() as stack:
        redis_server = stack.enter_context(RedisServer())
        pg = stack.enter_context(PostgresServer())
        data: dict[str, Dataset] = {}
        servers: dict[str, dict[str, Any]] = {}
        for seed, domain in enumerate(DOMAINS):
            data[domain] = build_dataset(600, sources=SOURCES, domain=domain, seed=seed, crawls=2)
            servers[domain] = start_upstreams(data[domain], stack)
        upstream = {
            domain: {k: v for k, v in crawl_settings(s).items() if k.endswith(("_URL", "_KEY"))}
            for domain, s in servers.items()
        }
        cwd = tmp_path_factory.mktemp("distributed-pg")
        shared, plain = pg.create_database("shared"), pg.create_database("plain")
        started = datetime.now(UTC).replace(microsecond=0)

        for domain in DOMAINS:
            queued = trawl(
                cwd,
                "enqueue",
                *crawl_arguments(domain),
                *settings_args({**upstream[domain], "TRAWL_REDIS_URL": redis_server.url}),
            )
            assert queued.stdout.strip().endswith("queued 3 task(s) for 1 domain(s)")
        before = _request_count(servers)
        worker_settings = {
            **SETTINGS,
            "TRAWL_REDIS_URL": redis_server.url,
            "STORE_URI": shared,
            "QUEUE_HEARTBEAT": "0.5",
        }
        workers = [
            subprocess.Popen(
                [*TRAWL, "worker", "--until-empty", *settings_args(worker_settings)],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )  # fmt: skip
            for _ in range(3)
        ]
        try:
            logs = [worker.communicate(timeout=DEADLINE)[0] for worker in workers]
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.kill()
                    worker.wait()
        codes = [worker.returncode for worker in workers]
        status = trawl(cwd, "queue", "-s", f"TRAWL_REDIS_URL={redis_server.url}").stdout
        arrivals = {
            source: sorted(arrived for domain in DOMAINS for arrived, _ in servers[domain][source].spans)
            for source in ("wayback", "commoncrawl")
        }
        requests = _request_count(servers) - before
        distributed = stored(cwd, shared)
        report = trawl(
            cwd, "report", "new", "--domain", DOMAINS[0], "--since", started.isoformat(), "--store", shared
        )

        # The reference: one plain process per domain, no Redis, no budgets.
        for domain in DOMAINS:
            reference = {**upstream[domain], **SETTINGS, "RATE_LIMITS_ENABLED": "False", "STORE_URI": plain}
            trawl(cwd, "crawl", "all", *as_crawl_all(crawl_arguments(domain)), *settings_args(reference))
        yield SimpleNamespace(
            data=data,
            codes=codes,
            logs=logs,
            status=status,
            arrivals=arrivals,
            requests=requests,
            distributed=distributed,
            plain=stored(cwd, plain),
            report=report,
        )


def _request_count(servers: dict[str, dict[str, Any]]) -> int:
    return sum(len(server.spans) for by_source in servers.values() for server in by_source.values()
               if hasattr(server, "spans"))  # fmt: skip


def test_three_workers_fill_postgresql_with_exactly_the_expected_urls(run: SimpleNamespace) -> None:
    assert run.codes == [0, 0, 0], "\n\n".join(log[-3000:] for log in run.logs)
    for log in run.logs:
        assert "Traceback" not in log and PASSWORD not in log, log[-3000:]
    assert "total: 0 pending, 0 in flight, 0 dead-lettered" in run.status
    expected = set().union(*(expected_urls(d) for d in run.data.values()))
    assert len(expected) > 1500
    urls = [r["url"] for r in run.distributed]
    assert len(urls) == len(set(urls))  # 0 duplicates
    assert set(urls) == expected  # recall 1.000, nothing extra


def test_nothing_is_counted_twice(run: SimpleNamespace) -> None:
    """Each URL's record (sources, captures, first and last seen, statuses, mimes) is the one
    a plain process per domain stores."""
    assert by_url(run.distributed) == by_url(run.plain)


def test_no_window_of_a_source_holds_more_than_its_shared_budget(run: SimpleNamespace) -> None:
    assert run.requests > 0
    for source, times in run.arrivals.items():
        requests, period = BUDGETS[source]
        assert len(times) > requests, source  # enough requests that the budget mattered
        most = max_in_window(times, period)
        span = times[-1] - times[0]
        print(f"{source}: {len(times)} requests in {span:.1f} s, at most {most} per {period:g} s")
        assert most <= requests, (source, most, [round(t - times[0], 3) for t in times])


def test_report_new_over_the_store(run: SimpleNamespace) -> None:
    domain = DOMAINS[0]
    assert sorted(run.report.stdout.splitlines()) == sorted(expected_urls(run.data[domain]))
    assert PASSWORD not in run.report.stdout + run.report.stderr
