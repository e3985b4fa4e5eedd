"""One ``scrapy crawl all`` over four sources against local servers, next to the servers' own time.

Builds one dataset of ~200,000 distinct URLs for one domain, split across the
Wayback Machine, Common Crawl (several crawl indexes, all queried), OTX and
urlscan with overlap (by default 40% of the URLs are reported by two sources or
more, as in reality; ``tests/servers/devdata.py`` builds it), and serves each
source from its fake server on 127.0.0.1 with every page rendered before the
clock starts. It then runs ``scrapy crawl all`` over the four sources, gates off
(``RATE_LIMITS_ENABLED=False``, no AutoThrottle, no filters), into a fresh
SQLite store, as a user would.

Measured: the crawl's wall time (process start to exit), its CPU time (user +
system) and peak RSS; then *the floor*: the very requests the servers logged
during the crawl, replayed by a bare keep-alive client (a thread pool in its own
process, full bodies read, nothing parsed), timed as a whole: the servers' own
time for the same requests. Also printed: the most requests each server had in
flight at once, and whether the store holds exactly the expected canonical URLs
once each, with the expected sources.

Target on a 2-core machine: wall <= 1.5x the floor.

``--limits``: the same crawl under the services' real limits, as a user runs it (the
gates on at each source's default budget: Wayback 60/60s, Common Crawl 1/1s, OTX
100/60s, urlscan 120/60s; AutoThrottle on), against *the limits' floor*: for each
source, the least time its budget allows between the first and the last of the
requests the crawl sent (``n`` requests at ``N`` per ``T`` seconds: ``(n - 1) // N * T``),
the largest of the four. Also printed per source: the span of its arrivals at the
server against its own floor, and the most requests its server saw in any window
of ``T`` (at most ``N``, or the budget was broken). Target: wall <= 1.1x the floor.
``--limits-scale F`` multiplies every budget's period by F (quicker, but the gate's
fixed 0.15 s margin then weighs more).

    python bench/bench_sources.py [--urls N] [--overlap F] [--crawls N] [--threads N]
        [--latency S] [--no-prerender] [--set NAME=VALUE] [--log FILE] [--profile FILE] [--wrap COMMAND]
        [--limits [--limits-scale F]]

The floor replays urlscan's requests in parallel although a client can only
send them one after the other (each names the last result of the previous
page); against pre-rendered pages that chain costs a server well under a second.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_wayback import watch_peak_rss  # noqa: E402
from tests.servers.commoncrawl import FakeCommonCrawl  # noqa: E402
from tests.servers.devdata import CRAWL_IDS, DOMAIN, Dataset, build_dataset, expected_urls  # noqa: E402
from tests.servers.ia_cdx import FakeCdxServer  # noqa: E402
from tests.servers.otx import FakeOtxServer  # noqa: E402
from tests.servers.urlscan import FakeUrlscanServer  # noqa: E402
from trawl.politeness.rates import parse_rate  # noqa: E402
from trawl.sources.cdx.commoncrawl import CommonCrawlSpider  # noqa: E402
from trawl.sources.cdx.parse import Dialect  # noqa: E402
from trawl.sources.cdx.wayback import WaybackSpider  # noqa: E402
from trawl.sources.otx import PAGE_LIMIT as OTX_PAGE_LIMIT  # noqa: E402
from trawl.sources.otx import OtxSpider  # noqa: E402
from trawl.sources.urlscan import UrlscanSpider  # noqa: E402

SOURCES = ("wayback", "commoncrawl", "otx", "urlscan")
SPIDERS = {
    "wayback": WaybackSpider,
    "commoncrawl": CommonCrawlSpider,
    "otx": OtxSpider,
    "urlscan": UrlscanSpider,
}
OTX_KEY = "bench-otx-key"
URLSCAN_KEY = "bench-urlscan-key"


# --- the exact queries the spiders send (so that pre-rendered pages are hits) ---------------


def _spider(cls: type, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> Any:
    spider = cls.__new__(cls)
    spider.configure(dict(settings), {"domain": DOMAIN, "filters": "false", **arguments})
    return spider


def prerender(
    wayback: FakeCdxServer, cc: FakeCommonCrawl, otx: FakeOtxServer, urlscan: FakeUrlscanServer, crawls: int
) -> dict[str, int]:
    filters_off = {"FILTER_CODE": "", "FILTER_MIME": ""}
    ia = _spider(WaybackSpider, {"WAYBACK_BASE_URL": wayback.base_url, **filters_off}, {})
    pages = {"wayback": wayback.prerender_pages(ia.query(ia.endpoints[0]))}
    settings = {"COMMONCRAWL_BASE_URL": cc.base_url, "TRAWL_CACHE_DIR": "", **filters_off}
    spider = _spider(CommonCrawlSpider, settings, {})
    pages["commoncrawl"] = 0
    for crawl in CRAWL_IDS[:crawls]:
        index = spider.add_endpoint(f"{cc.base_url}/{crawl}-index", crawl, Dialect.PYWB, True)
        pages["commoncrawl"] += cc.prerender_pages(crawl, spider.query(spider.endpoints[index]))
    pages["otx"] = otx.prerender_pages("domain", DOMAIN, OTX_PAGE_LIMIT)
    scan = _spider(UrlscanSpider, {"URLSCAN_BASE_URL": urlscan.base_url}, {})
    pages["urlscan"] = urlscan.prerender_pages(scan.query, scan.page_size)
    return pages


def start_servers(stack: ExitStack, data: Dataset, page_lines: int, block_lines: int) -> dict[str, Any]:
    """The four fake sources serving ``data``, stopped when ``stack`` closes."""
    return {
        "wayback": stack.enter_context(FakeCdxServer(data.wayback, lines_per_page=page_lines)),
        "commoncrawl": stack.enter_context(
            FakeCommonCrawl(data.commoncrawl, collinfo=data.collinfo(), lines_per_block=block_lines)
        ),
        "otx": stack.enter_context(FakeOtxServer(urls=data.otx)),
        "urlscan": stack.enter_context(FakeUrlscanServer(results=data.urlscan)),
    }


def base_url_settings(servers: Mapping[str, Any]) -> dict[str, str]:
    """The settings that point trawl's four sources at the fakes."""
    return {
        "WAYBACK_BASE_URL": servers["wayback"].base_url,
        "COMMONCRAWL_BASE_URL": servers["commoncrawl"].base_url,
        "OTX_BASE_URL": servers["otx"].base_url,
        "URLSCAN_BASE_URL": servers["urlscan"].base_url,
    }


# --- the floor: the logged requests again, from a bare client --------------------------------


@dataclass(frozen=True)
class Replayed:
    port: int
    target: str  # path and query, as sent
    headers: dict[str, str]
    arrived: float


def logged_requests(servers: Mapping[str, Any]) -> list[Replayed]:
    out = []
    for server in servers.values():
        for record in list(server.requests):
            target = record.path + ("?" + record.raw_query if record.raw_query else "")
            out.append(Replayed(server.port, target, dict(record.headers), record.time))
    return sorted(out, key=lambda r: r.arrived)


def replay(requests: list[dict[str, Any]], threads: int) -> dict[str, Any]:
    """Send every request (in order, ``threads`` at a time), each thread keeping one
    keep-alive connection per port, reading each body whole; returns timings."""
    local = threading.local()
    lock = threading.Lock()
    statuses: dict[int | str, int] = {}
    received = [0]

    def send(request: dict[str, Any]) -> None:
        connections = getattr(local, "connections", None)
        if connections is None:
            connections = local.connections = {}
        port = request["port"]
        for _ in (1, 2):  # a kept-alive connection the server closed meanwhile: once more
            reused = port in connections
            if not reused:
                # Generous: a fake that renders live and holds a lock (OTX, urlscan) makes
                # a request wait for every one queued before it.
                connections[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            connection = connections[port]
            try:
                connection.request("GET", request["target"], headers=request["headers"])
                response = connection.getresponse()
                status, size = response.status, len(response.read())
                break
            except (OSError, http.client.HTTPException) as exc:
                connections.pop(port).close()
                status, size = type(exc).__name__, 0
                if not (reused and isinstance(exc, (http.client.RemoteDisconnected, ConnectionError))):
                    break
        with lock:
            statuses[status] = statuses.get(status, 0) + 1
            received[0] += size

    cpu0 = time.process_time()
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in pool.map(send, requests):
            pass
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "cpu": time.process_time() - cpu0,
        "bytes": received[0],
        "statuses": {str(k): v for k, v in sorted(statuses.items(), key=lambda kv: str(kv[0]))},
    }


def run_replay(requests: list[Replayed], threads: int, workdir: Path) -> dict[str, Any]:
    """The replay in a process of its own, as the crawl is: the servers' process is
    left to the servers."""
    path = workdir / "replay.json"
    rows = [{"port": r.port, "target": r.target, "headers": r.headers} for r in requests]
    path.write_text(json.dumps(rows))
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--replay",
        str(path),
        "--threads",
        str(threads),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


# --- the crawl -------------------------------------------------------------------------------


@dataclass
class CrawlRun:
    wall: float
    cpu: float
    peak_rss_mb: float
    server_cpu: float
    output: str
    returncode: int


def crawl(
    base_urls: Mapping[str, str],
    store: Path,
    workdir: Path,
    extra: list[str],
    profile: str | None = None,
    wrap: str | None = None,
    budgets: Mapping[str, tuple[int, float]] | None = None,
) -> CrawlRun:
    """The crawl, gates off; with ``budgets``, gates and AutoThrottle on, at those budgets."""
    settings = {
        **base_urls,
        "STORE_URI": f"sqlite:///{store}",
        "TRAWL_CACHE_DIR": "",  # collinfo.json from the server on every run
        "LOG_LEVEL": "INFO",
    }
    if budgets is None:
        settings.update(RATE_LIMITS_ENABLED="False", AUTOTHROTTLE_ENABLED="False")
    else:
        limits = {name: f"{count}/{period:g}s" for name, (count, period) in budgets.items()}
        settings["RATE_LIMITS"] = json.dumps(limits)
    # --wrap: a sampling profiler that sees every thread and native frames (cProfile sees the reactor's only).
    command = [*shlex.split(wrap), sys.executable] if wrap else [sys.executable]
    if profile:
        command += ["-m", "cProfile", "-o", str(Path(profile).resolve())]
    command += ["-m", "trawl.cli", "crawl", "all", "-a", f"domain={DOMAIN}"]  # as `trawl crawl` runs it
    command += ["-a", "sources=" + ",".join(SOURCES), "-a", "filters=false", "-a", "cc_indexes=0"]
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    command += [arg for setting in extra for arg in ("-s", setting)]
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings", OTX_API_KEY=OTX_KEY)
    env["URLSCAN_API_KEY"] = URLSCAN_KEY
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    self_before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(command, cwd=workdir, env=env, stdout=log, stderr=log, text=True)
        peak = watch_peak_rss(process)  # returns once the process is reaped
        wall = time.perf_counter() - started
        log.seek(0)
        output = log.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    self_after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    server_cpu = (self_after.ru_utime - self_before.ru_utime) + (self_after.ru_stime - self_before.ru_stime)
    return CrawlRun(wall, cpu, peak, server_cpu, output, process.returncode or 0)


def default_budgets(scale: float = 1.0) -> dict[str, tuple[int, float]]:
    """Each source's default budget (the service's real limit), its period times ``scale``."""
    budgets = {}
    for name, spider in SPIDERS.items():
        count, period = parse_rate(spider.default_rate_limit)
        budgets[name] = (count, period * scale)
    return budgets


def limits_floor(servers: Mapping[str, Any], budgets: Mapping[str, tuple[int, float]]) -> dict[str, Any]:
    """Per source: requests, the budget's floor for them, the span of their arrivals,
    and the most arrivals in any window of the budget's period."""
    out = {}
    for name, server in servers.items():
        count, period = budgets[name]
        arrivals = sorted(record.time for record in server.requests)
        n = len(arrivals)
        busiest, first = 0, 0
        for last, at in enumerate(arrivals):
            while at - arrivals[first] >= period:
                first += 1
            busiest = max(busiest, last - first + 1)
        out[name] = {
            "requests": n,
            "budget": f"{count}/{period:g}s",
            "floor": (n - 1) // count * period if n else 0.0,
            "span": arrivals[-1] - arrivals[0] if n else 0.0,
            "busiest": busiest,
            "allowed": count,
        }
    return out


def summary_lines(output: str) -> Iterator[str]:
    """The per-source table ``crawl all`` prints at the end."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("source ") and "state" in line:
            yield from (x for x in lines[i:] if x.strip() and "[" not in x)
            return


def check_store(store: Path, data: Dataset, expected: set[str]) -> tuple[str, bool]:
    with sqlite3.connect(store) as con:
        rows = con.execute("SELECT url, sources FROM urls").fetchall()
    stored = {url for url, _ in rows}
    duplicates = len(rows) - len(stored)
    wrong_sources = sum(
        1 for url, sources in rows if frozenset(sources.split(",")) != data.sources_of.get(url)
    )
    missing, extra = len(expected - stored), len(stored - expected)
    ok = not (missing or extra or duplicates or wrong_sources)
    match = "exact match" if stored == expected else f"MISMATCH: {missing:,} missing, {extra:,} unexpected"
    text = (
        f"recall: {len(stored & expected):,} of {len(expected):,} expected URLs stored ({match}); "
        f"{duplicates} duplicate row(s); {wrong_sources} row(s) with the wrong sources"
    )
    return text, ok


def print_limits(run: CrawlRun, limits: Mapping[str, Mapping[str, Any]], replay_seconds: float) -> None:
    for name, row in limits.items():
        span = f"{row['span'] / row['floor']:.2f}x" if row["floor"] else "-"
        print(
            f"  {name:<12} {row['requests']:4} requests at {row['budget']:>9}: floor {row['floor']:6.1f} s, "
            f"arrivals spanned {row['span']:6.1f} s ({span}); most in a window {row['busiest']} "
            f"(allowed {row['allowed']})"
        )
    worst = max(row["floor"] for row in limits.values())
    print(
        f"limits' floor: {worst:.1f} s (the slowest source's budget); trawl {run.wall:.2f} s wall = "
        f"{run.wall / worst:.2f}x it (target <= 1.1x); with the replay's {replay_seconds:.2f} s added: "
        f"{run.wall / (worst + replay_seconds):.2f}x; {run.cpu:.2f} s CPU; "
        "load " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=200_000, help="distinct URLs (default 200,000)")
    parser.add_argument("--overlap", type=float, default=0.4, help="share of URLs in 2+ sources (0.4)")
    parser.add_argument("--crawls", type=int, default=3, help="Common Crawl indexes (1-5, default 3)")
    parser.add_argument("--page-lines", type=int, default=5_000, help="Wayback CDX lines a page")
    parser.add_argument("--block-lines", type=int, default=1_000, help="Common Crawl lines a ZipNum block")
    parser.add_argument("--threads", type=int, default=8, help="threads of the replay client")
    parser.add_argument(
        "--latency", type=float, default=0.0, help="seconds each server waits before answering (default 0)"
    )
    parser.add_argument("--store-dir", default=None, help="where bench.db goes (default: a new temp dir)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="extra setting")
    parser.add_argument(
        "--no-prerender", action="store_true", help="servers render every page when asked (as in the issue)"
    )
    parser.add_argument("--profile", default=None, metavar="FILE", help="run the crawl under cProfile")
    parser.add_argument(
        "--wrap",
        default=None,
        metavar="COMMAND",
        help="run the crawl under COMMAND, e.g. 'py-spy record --threads --gil -f raw -o x.txt --'",
    )
    parser.add_argument("--log", default=None, metavar="FILE", help="write the crawl's output there")
    parser.add_argument(
        "--spans", default=None, metavar="FILE", help="write each server's request spans there"
    )
    parser.add_argument(
        "--limits", action="store_true", help="gates on at the services' real limits, against their floor"
    )
    parser.add_argument(
        "--limits-scale", type=float, default=1.0, metavar="F", help="multiply the budgets' periods by F"
    )
    parser.add_argument("--replay", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.replay:  # the child process of run_replay
        print(json.dumps(replay(json.loads(Path(args.replay).read_text()), args.threads)))
        return
    if not 1 <= args.crawls <= len(CRAWL_IDS):
        parser.error(f"--crawls must be between 1 and {len(CRAWL_IDS)}")

    print("load average (1, 5, 15 min) at the start: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    started = time.perf_counter()
    data = build_dataset(args.urls, args.overlap, args.crawls, sources=SOURCES)
    expected = expected_urls(data, DOMAIN)
    assert expected == set(data.sources_of), "the generated URLs are not all canonical and in scope"
    several = sum(1 for found in data.sources_of.values() if len(found) > 1)
    per_source = ", ".join(f"{name} {count:,}" for name, count in data.per_source().items())
    print(
        f"dataset: {len(expected):,} distinct URLs for {DOMAIN}, {several / len(expected):.0%} in 2+ sources "
        f"({per_source}); {len(data.wayback):,} Wayback captures, "
        f"{sum(map(len, data.commoncrawl.values())):,} Common Crawl records in {args.crawls} indexes "
        f"({time.perf_counter() - started:.1f} s to build)"
    )

    with ExitStack() as stack:
        servers = start_servers(stack, data, args.page_lines, args.block_lines)
        for server in servers.values():
            server.latency = args.latency
        if args.no_prerender:
            servers["wayback"].prerender = False
            print("servers: every page rendered when asked for")
        else:
            t0 = time.perf_counter()
            pages = prerender(*servers.values(), crawls=args.crawls)
            print(
                "servers: pages pre-rendered: "
                + ", ".join(f"{name} {count}" for name, count in pages.items())
                + f" ({time.perf_counter() - t0:.1f} s)"
            )
        base_urls = base_url_settings(servers)
        workdir = Path(tempfile.mkdtemp(prefix="trawl-bench-sources-"))
        store = Path(args.store_dir or workdir) / "bench.db"
        store.unlink(missing_ok=True)

        budgets = default_budgets(args.limits_scale) if args.limits else None
        run = crawl(base_urls, store, workdir, args.set, args.profile, args.wrap, budgets)
        limits = limits_floor(servers, budgets) if budgets else None
        if args.log:
            Path(args.log).write_text(run.output)
        if run.returncode != 0:
            print(run.output[-4000:])
            raise SystemExit(f"crawl failed with exit status {run.returncode}")
        in_flight = {name: server.max_in_flight() for name, server in servers.items()}
        if args.spans:
            Path(args.spans).write_text(json.dumps({name: server.spans for name, server in servers.items()}))
        requests = logged_requests(servers)
        per_server = {name: len(server.requests) for name, server in servers.items()}
        floor = run_replay(requests, args.threads, workdir)

    print("\n".join(summary_lines(run.output)))
    recall, ok = check_store(store, data, expected)
    print(f"{recall} ({store})")
    print(
        f"requests: {len(requests)} ("
        + ", ".join(f"{name} {count}" for name, count in per_server.items())
        + "); most in flight at once: "
        + ", ".join(f"{name} {count}" for name, count in in_flight.items())
    )
    print(
        f"floor: {floor['seconds']:.2f} s to replay them with {args.threads} threads "
        f"({floor['bytes'] / 1e6:,.0f} MB, statuses {floor['statuses']}, client CPU {floor['cpu']:.2f} s)"
    )
    if limits is not None:
        print_limits(run, limits, floor["seconds"])
    print(
        f"trawl: {run.wall:.2f} s wall = {run.wall / floor['seconds']:.2f}x the floor (target <= 1.5x); "
        f"{run.cpu:.2f} s CPU = {run.cpu / floor['seconds']:.2f}x the floor; "
        f"peak RSS {run.peak_rss_mb:,.0f} MB; the servers used {run.server_cpu:.2f} s CPU meanwhile"
    )
    print("load average (1, 5, 15 min) at the end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
