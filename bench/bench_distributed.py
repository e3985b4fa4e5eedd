"""Distributed runs against single-process runs, on one machine: 1, 2 and 3 workers vs ``crawl all``.

Builds ``--domains`` datasets (each domain on its own fake upstreams, three
sources: wayback, commoncrawl, otx), every server answering a page after
``--latency`` seconds (so that more workers can help, as against real
upstreams), then:

* the single-process path: ``trawl crawl all`` once per domain, one after the
  other, into a fresh SQLite store;
* the distributed path: ``trawl enqueue`` of every domain into a real
  redis-server, then N ``trawl worker --until-empty`` processes into a fresh
  SQLite store (one machine, one WAL file), for N in ``--workers``.

Printed for each: wall time, URLs stored a second, whether the store holds
exactly the expected URLs, and Redis commands processed per task (``INFO
stats``). The target: one worker costs at most 1.2x the
single-process path.

    python bench/bench_distributed.py [--domains 3] [--urls 1500] [--latency 0.2] [--workers 1,2,3]

``--spread-pages N``: instead, one domain of N wayback CDX pages (3 URLs a
page) crawled by each number of workers in ``--workers``, its pages spread
over them (trawl.distributed.spreadsched): wall, pages a second, pages
fetched twice, Redis commands per page, and the same with ``SPREAD_PAGES=False``.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from tests.servers.devdata import build_dataset, expected_urls  # noqa: E402
from tests.servers.devserver import crawl_settings, start_upstreams  # noqa: E402
from tests.servers.redis_server import RedisServer  # noqa: E402

SOURCES = ("wayback", "commoncrawl", "otx")
TRAWL = [sys.executable, "-m", "trawl.cli"]
COMMON = {"RATE_LIMITS_ENABLED": "False", "AUTOTHROTTLE_ENABLED": "False", "TRAWL_CACHE_DIR": ""}
ARGUMENTS = ["-a", "sources=" + ",".join(SOURCES), "-a", "filters=false", "-a", "cc_indexes=0"]


def settings_args(settings: dict[str, Any]) -> list[str]:
    return [arg for name, value in settings.items() for arg in ("-s", f"{name}={value}")]


def stored(store: Path) -> set[str]:
    con = sqlite3.connect(store)
    try:
        return {url for (url,) in con.execute("SELECT url FROM urls")}
    finally:
        con.close()


def run(command: list[str], cwd: Path) -> None:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode:
        raise SystemExit(f"{' '.join(command[3:5])} exited {result.returncode}:\n{result.stderr[-2000:]}")


def spread_request_bytes(url: str, count: int = 10_000) -> tuple[float, float]:
    """Redis bytes per queued page request, and Redis commands per push/pop/ack, of the run queue
    (trawl.distributed.spread) that spreads one domain's pages: wayback's page requests."""
    from scrapy.utils.request import fingerprint
    from scrapy.utils.test import get_crawler

    from trawl.distributed.spread import RunRequests
    from trawl.sources.cdx.wayback import WaybackSpider

    crawler = get_crawler(WaybackSpider, {"WAYBACK_BASE_URL": "http://127.0.0.1:9/web.archive.org"})
    spider = WaybackSpider.from_crawler(crawler, domain="example.com")
    client = redis.Redis.from_url(url)
    run = RunRequests(client, "bench", "w1")
    before = int(client.info("stats")["total_commands_processed"])
    for page in range(count):
        request = spider.page_request(0, page)
        assert request is not None
        run.push(request, spider, fingerprint(request).hex())
    size = run.queued_bytes() / count
    while (raw := run.pop()) is not None:
        run.ack(raw)
    commands = int(client.info("stats")["total_commands_processed"]) - before
    client.close()
    return size, commands / count


def commandstats(client: redis.Redis) -> dict[str, int]:
    """Calls per command, ``INFO commandstats`` (commands run inside scripts counted too)."""
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in
            client.info("commandstats").items()}  # fmt: skip


def spread_bench(pages: int, latency: float, counts: list[int]) -> None:
    """One big domain, 1..N workers, with and without spreading its pages."""
    from tests.servers.ia_cdx import FakeCdxServer, make_capture
    from trawl.distributed.queue import WorkQueue

    rows = [make_capture(f"http://example.com/p{n:06d}", "20200101000000") for n in range(pages * 3)]
    print(f"one domain, {pages:,} wayback CDX pages of 3 URLs, {latency} s a page")
    runs = [(n, spread) for n in counts for spread in (True, False)]
    for workers, spread in runs:
        with (
            tempfile.TemporaryDirectory() as folder,
            RedisServer() as server,
            FakeCdxServer(rows, lines_per_page=3, latency=latency) as cdx,
        ):
            work = Path(folder)
            client = redis.Redis.from_url(server.url)
            store = work / "spread.db"
            own = {**COMMON, "TRAWL_REDIS_URL": server.url, "STORE_URI": f"sqlite:///{store}",
                   "QUEUE_HEARTBEAT": "1", "SPREAD_PAGES": str(spread)}  # fmt: skip
            processes = [
                subprocess.Popen(
                    [*TRAWL, "worker", *settings_args(own)],
                    cwd=work,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )  # fmt: skip
                for _ in range(workers)
            ]
            queue = WorkQueue(client)
            while len(queue.live_workers()) < workers:
                time.sleep(0.1)
            before = int(client.info("stats")["total_commands_processed"])
            run_before = commandstats(client)
            started = time.perf_counter()
            upstream = {"WAYBACK_BASE_URL": cdx.base_url, "TRAWL_REDIS_URL": server.url}
            run([*TRAWL, "enqueue", "example.com", "-a", "sources=wayback", "-a", "filters=false",
                 *settings_args(upstream)], work)  # fmt: skip
            while not (len(cdx.requests) > pages and queue.idle()):  # the bench asks Redis only at the end
                time.sleep(0.1)
            wall = time.perf_counter() - started
            commands = int(client.info("stats")["total_commands_processed"]) - before
            ran = commandstats(client)
            ran = {name: calls - run_before.get(name, 0) for name, calls in ran.items()}
            ran = {name: calls for name, calls in ran.items() if calls > 0}
            for process in processes:
                process.terminate()
            codes = [process.wait() for process in processes]
            fetched = [dict(r.params)["page"] for r in cdx.requests if "page" in dict(r.params)]
            exact = stored(store) == {f"http://example.com/p{n:06d}" for n in range(pages * 3)}
            print(
                f"{workers} worker(s), SPREAD_PAGES={spread}: {wall:6.2f} s, {pages / wall:6.1f} pages/s,"
                f" exact={exact}, fetched twice {len(fetched) - len(set(fetched))},"
                f" {commands / pages:.1f} Redis commands a page sent ({sum(ran.values()) / pages:.1f} run,"
                f" counting those inside scripts; idle polls and heartbeats included), exits {codes}"
            )
            top = sorted(ran.items(), key=lambda item: -item[1])[:8]
            print("    per page: " + ", ".join(f"{name} {calls / pages:.2f}" for name, calls in top))
            client.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--domains", type=int, default=3)
    parser.add_argument("--urls", type=int, default=1500, help="distinct URLs a domain (default 1,500)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds a server takes to answer a page")
    parser.add_argument("--workers", default="1,2,3")
    parser.add_argument("--spread-pages", type=int, default=0, help="one domain of N wayback pages, spread")
    args = parser.parse_args()
    if args.spread_pages:
        spread_bench(args.spread_pages, args.latency, [int(n) for n in args.workers.split(",")])
        return
    domains = [f"example{i}.com" for i in range(args.domains)]
    with ExitStack() as stack, tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        settings: dict[str, dict[str, Any]] = {}
        expected: set[str] = set()
        for seed, domain in enumerate(domains):
            data = build_dataset(args.urls, sources=SOURCES, domain=domain, seed=seed, crawls=2)
            servers = start_upstreams(data, stack)
            for server in servers.values():
                server.latency = args.latency
            settings[domain] = {
                k: v for k, v in crawl_settings(servers).items() if k.endswith(("_URL", "_KEY"))
            }
            expected |= expected_urls(data)
        print(
            f"{len(domains)} domains x {len(SOURCES)} sources, {len(expected):,} URLs,"
            f" {args.latency} s a page"
        )

        store = work / "single.db"
        started = time.perf_counter()
        for domain in domains:
            command = [*TRAWL, "crawl", "all", "-a", f"domain={domain}", *ARGUMENTS]
            run(
                command + settings_args({**COMMON, **settings[domain], "STORE_URI": f"sqlite:///{store}"}),
                work,
            )
        single = time.perf_counter() - started
        exact = stored(store) == expected
        print(
            f"crawl all, one domain after the other: {single:6.2f} s,"
            f" {len(expected) / single:7,.0f} URLs/s, exact={exact}"
        )

        for workers in (int(n) for n in args.workers.split(",")):
            with RedisServer() as server:
                client = redis.Redis.from_url(server.url)
                for domain in domains:
                    command = [*TRAWL, "enqueue", domain, *ARGUMENTS]
                    run(command + settings_args({**settings[domain], "TRAWL_REDIS_URL": server.url}), work)
                before = int(client.info("stats")["total_commands_processed"])
                store = work / f"workers-{workers}.db"
                worker_settings = {**COMMON, "TRAWL_REDIS_URL": server.url, "STORE_URI": f"sqlite:///{store}"}
                command = [*TRAWL, "worker", "--until-empty", *settings_args(worker_settings)]
                started = time.perf_counter()
                processes = [
                    subprocess.Popen(command, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    for _ in range(workers)
                ]
                codes = [process.wait() for process in processes]
                wall = time.perf_counter() - started
                commands = int(client.info("stats")["total_commands_processed"]) - before
                tasks = len(domains) * len(SOURCES)
                exact = stored(store) == expected
                print(
                    f"{workers} worker(s): {wall:6.2f} s, {len(expected) / wall:7,.0f} URLs/s, exact={exact},"
                    f" exits {codes}, {commands / tasks:.0f} Redis commands a task,"
                    f" {wall / single:.2f}x crawl all"
                )
                client.close()
        with RedisServer() as server:
            size, commands = spread_request_bytes(server.url)
            print(
                f"a wayback page request in the run queue (trawl.distributed.spread):"
                f" {size:,.0f} bytes queued, {commands:.1f} Redis commands per push + pop + ack"
            )
    os.sync()


if __name__ == "__main__":
    main()
