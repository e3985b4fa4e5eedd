"""One budget per source across processes: the gate shared through Redis (``TRAWL_REDIS_URL``).

Three ``trawl crawl wayback`` processes, one domain each, against one fake CDX
server and a real redis-server; what is checked is the server's own log of
request arrivals, as an upstream would count them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qsl

import redis

from tests.conftest import ROOT, CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.helpers.politeness import POLITE, max_in_window, too_many_requests
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.redis_server import RedisServer
from tests.servers.scrapyd import ScrapydServer

DOMAINS = ("a.example.com", "b.example.com", "c.example.com")


def dataset(pages: int) -> list:
    return [
        make_capture(f"http://{domain}/p{page:03d}", f"2020{1 + page % 12:02d}01000000")
        for domain in DOMAINS
        for page in range(pages)
    ]


def domain_of(path_qs: str) -> str:
    query = dict(parse_qsl(path_qs.partition("?")[2]))
    return next((d for d in DOMAINS if d in query.get("url", "")), "?")


class StartLine(FakeCdxServer):
    """Holds each crawl's first request (the page count) until all three crawls asked:
    they then run at the same time however long each took to start."""

    def __init__(self, *args: object, runners: int = len(DOMAINS), **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.line = threading.Barrier(runners, timeout=90)

    def handle(self, path_qs: str, headers: Mapping[str, str]):  # type: ignore[override]
        if "showNumPages" in path_qs:
            self.line.wait()
        return super().handle(path_qs, headers)


class RetryAfterOnceAllRun(FakeCdxServer):
    """Answers 429 with ``Retry-After`` to the first page request made once all three crawls
    have asked for something: the other two are then certainly waiting to send."""

    def __init__(self, *args: object, pause: int, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.pause = pause
        self.seen: set[str] = set()
        self.fired_at: float | None = None
        self.fired_to = ""
        self._gate = threading.Lock()

    def handle(self, path_qs: str, headers: Mapping[str, str]):  # type: ignore[override]
        with self._gate:
            self.seen.add(domain_of(path_qs))
            if self.fired_at is None and len(self.seen) == len(DOMAINS) and "page=" in path_qs:
                self.fired_at = time.monotonic()
                self.fired_to = domain_of(path_qs)
                page = int(dict(parse_qsl(path_qs.partition("?")[2]))["page"])
                self.fail_pages[page] = [too_many_requests(self.pause)]
        return super().handle(path_qs, headers)


def crawl_three(
    tmp_path: Path, server: FakeCdxServer, settings: Mapping[str, object], redis_url: str | None
) -> list[CrawlResult]:
    merged = {"WAYBACK_BASE_URL": server.base_url, **POLITE, **settings}
    if redis_url:
        merged["TRAWL_REDIS_URL"] = redis_url

    def one(domain: str) -> CrawlResult:
        args = crawl_args("wayback", domain, merged, "-a", "filters=false")
        return run_scrapy(tmp_path / domain, *args, timeout=180)

    with ThreadPoolExecutor(len(DOMAINS)) as pool:
        return list(pool.map(one, DOMAINS))


def arrivals(server: FakeCdxServer) -> list[float]:
    """When each request's head was read: before :class:`StartLine` holds it."""
    return sorted(arrived for arrived, _ in server.spans)


def commands(url: str) -> dict[str, int]:
    """Calls of each command Redis has run so far (INFO commandstats; scripts' own calls included)."""
    stats = redis.Redis.from_url(url).info("commandstats")
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


def used(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {name: after[name] - before.get(name, 0) for name in after if after[name] != before.get(name, 0)}


def assert_all_ok(results: Sequence[CrawlResult]) -> None:
    for result in results:
        assert_no_traceback(result)
        assert result.returncode == 0, result.stderr[-3000:]


#: The commands a client sends (the others are run by scripts, inside one round trip).
ROUND_TRIPS = frozenset({"evalsha", "eval", "zrem", "script|load", "ping", "hello", "client|setinfo"})
BUDGET = {"RATE_LIMITS": '{"wayback": "5/2s"}', "SOURCE_CONCURRENCY": '{"wayback": 4}'}
PAGES = 6


def test_three_processes_share_one_budget(tmp_path: Path) -> None:
    with RedisServer() as redis_server, StartLine(dataset(PAGES), lines_per_page=1) as server:
        before = commands(redis_server.url)
        results = crawl_three(tmp_path, server, BUDGET, redis_server.url)
        calls = used(before, commands(redis_server.url))
    assert_all_ok(results)
    times = arrivals(server)
    assert len(times) >= len(DOMAINS) * (PAGES + 1)
    assert max_in_window(times, 2.0) <= 5, [round(t - times[0], 3) for t in times]
    # 21+ requests at 5 per 2 s cannot take less than 6 s: the budget held all three together.
    assert times[-1] - times[0] >= 2.0 * (len(times) // 5 - 1)
    for result in results:
        assert len(result.stored()) == PAGES
    print("Redis commands during the run:", calls, "requests:", len(times))
    round_trips = sum(n for name, n in calls.items() if name in ROUND_TRIPS)
    print(f"Redis round trips per request: {round_trips / len(times):.2f}")
    assert round_trips / len(times) <= 8


def test_without_redis_three_processes_send_three_budgets(tmp_path: Path) -> None:
    """The same crawls, each with its own gate: the check above can fail."""
    with StartLine(dataset(PAGES), lines_per_page=1) as server:
        results = crawl_three(tmp_path, server, BUDGET, None)
    assert_all_ok(results)
    most = max_in_window(arrivals(server), 2.0)
    print(f"without Redis: {most} requests in one 2 s window, budget 5")
    assert most > 2 * 5  # each process spent its own budget


def test_retry_after_seen_by_one_pauses_all(tmp_path: Path) -> None:
    pause = 3
    # Slow enough (27 requests at 3 a second) that every crawl still has pages to fetch when
    # the last one starts and the 429 comes.
    settings = {"RATE_LIMITS": '{"wayback": "3/1s"}', "SOURCE_CONCURRENCY": '{"wayback": 1}'}
    with (
        RedisServer() as redis_server,
        RetryAfterOnceAllRun(dataset(8), lines_per_page=1, pause=pause) as server,
    ):
        results = crawl_three(tmp_path, server, settings, redis_server.url)
    assert_all_ok(results)
    assert server.fired_at is not None
    later = [t for t in arrivals(server) if t > server.fired_at]  # the one answered 429 came before
    inside = [t - server.fired_at for t in later if t < server.fired_at + pause]
    assert inside == [], f"requests inside the {pause} s pause, at +{inside} s"
    assert later
    others = [r for r, d in zip(results, DOMAINS, strict=True) if d != server.fired_to]
    told = [r for r in others if "paused until" in r.stderr and "by another process" in r.stderr]
    assert told, "no other process said it was paused by another"
    for result in results:
        assert len(result.stored()) == 8


def test_redis_lost_mid_run_holds_every_request_until_it_is_back(tmp_path: Path) -> None:
    settings = {
        "WAYBACK_BASE_URL": "",
        "RATE_LIMITS": '{"wayback": "5/1s"}',
        "SOURCE_CONCURRENCY": '{"wayback": 2}',
    }
    outage = 2.0
    with RedisServer() as redis_server, FakeCdxServer(dataset(20), lines_per_page=1) as server:
        settings |= {"WAYBACK_BASE_URL": server.base_url, "TRAWL_REDIS_URL": redis_server.url}
        args = crawl_args("wayback", DOMAINS[0], {**POLITE, **settings}, "-a", "filters=false")
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(run_scrapy, tmp_path / "one", *args, timeout=180)
            deadline = time.monotonic() + 120
            while len(server.spans) < 4 and time.monotonic() < deadline:
                threading.Event().wait(0.02)  # polling the server's log for the crawl under way
            assert len(server.spans) >= 4, "the crawl did not get going"
            redis_server.stop()
            stopped = time.monotonic()
            threading.Event().wait(outage)  # the outage itself: how long Redis stays away
            restarted = time.monotonic()
            redis_server.start()
            result = running.result()
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    # A request the gate let go just before Redis went may still arrive; none after.
    during = [round(t - stopped, 3) for t in arrivals(server) if stopped + 0.2 < t < restarted]
    assert during == [], f"sent while Redis was away, at +{during} s"
    assert result.stderr.count("shared gate: Redis") == 2, result.stderr[-3000:]  # lost, back: once each
    assert "unreachable" in result.stderr and "no request is sent until it is back" in result.stderr
    assert len(result.stored()) == 20


def test_redis_unreachable_at_start_is_one_line(workdir: Path) -> None:
    with RedisServer() as redis_server:
        url = redis_server.url
    settings = {**POLITE, "TRAWL_REDIS_URL": url, "WAYBACK_BASE_URL": "http://127.0.0.1:9"}
    result = run_scrapy(workdir, *crawl_args("wayback", DOMAINS[0], settings))
    assert result.returncode == 1  # a service down, as a store that cannot be reached
    assert_no_traceback(result)
    errors = [line for line in result.stderr.splitlines() if line.startswith("trawl: error:")]
    assert len(errors) == 1 and "cannot reach Redis" in errors[0], result.stderr[-2000:]


def test_two_scrapyd_jobs_on_one_source_share_one_budget(tmp_path: Path) -> None:
    """scrapyd runs each job as its own process: with TRAWL_REDIS_URL, one budget for both."""
    with (
        RedisServer() as redis_server,
        StartLine(dataset(PAGES), lines_per_page=1, runners=2) as server,
        ScrapydServer(tmp_path / "scrapyd", max_proc=2) as scrapyd,
    ):
        scrapyd.deploy(ROOT)
        settings = {
            "WAYBACK_BASE_URL": server.base_url,
            "TRAWL_REDIS_URL": redis_server.url,
            "STORE_URI": f"sqlite:///{tmp_path / 'jobs.db'}",
            **POLITE,
            **BUDGET,
        }
        jobs = [scrapyd.schedule("wayback", settings=settings, domain=d, filters="no") for d in DOMAINS[1:]]
        for job in jobs:
            scrapyd.wait_finished(job, timeout=180)
        logs = [scrapyd.job_log(job) for job in jobs]
    for log in logs:
        assert "Traceback" not in log and "] ERROR:" not in log, log[-3000:]
    times = arrivals(server)
    assert len(times) >= 2 * (PAGES + 1)
    assert max_in_window(times, 2.0) <= 5, [round(t - times[0], 3) for t in times]
