"""End-to-end throughput of the wayback spider into a fresh SQLite store.

Serves a generated CDX index (default 1,000,000 captures over 500,000 URL keys,
with duplicate captures, http/https and :80/:443 variants) from the local fake
Internet Archive CDX server, runs ``scrapy crawl wayback`` against it as a user
would, and prints captures per second end to end (process start to exit) and
the crawl process's peak RSS. Pages are rendered before the clock starts, so
the server costs the crawler as little CPU as a remote server would.

Then *the floor*, in the same run: a bare paged client (its own process, 4
threads, one keep-alive connection each) fetches the same pages, gzip as the
crawler asks for them, splits the lines and keeps the URLs in a set: what any
client must do, nothing trawl adds (canonical form, provenance, a store).

Targets on a 2-core machine: at 500,000 captures, wall <= 3x the floor and peak
RSS <= 400 MB; at 2,000,000 captures, peak RSS <= 1.25x that at 250,000 (and
>= 150,000 captures/s with the store on).

    python bench/bench_wayback.py [--captures N] [--distinct N] [--page-lines N] [--profile FILE]
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import resource
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# trawl, Scrapy and the fake server are imported where used: the floor's process (this script
# with --bare-client) must pay for none of them (0.8 s of CPU a run, counted against the floor).


def expected_urls(captures: list, domain: str) -> set[str]:
    from trawl.records.canonical import canonicalize, host_of
    from trawl.sources.target import parse_target

    target = parse_target(domain)
    urls = {canonicalize(c.original) for c in captures}
    return {u for u in urls if u and target.in_scope(host_of(u))}


def page_query(domain: str) -> list[tuple[str, str]]:
    """The exact query the spider sends, so that pre-rendered pages are cache hits."""
    from trawl.sources.cdx.wayback import WaybackSpider

    spider = WaybackSpider.__new__(WaybackSpider)
    settings = {"WAYBACK_BASE_URL": "http://127.0.0.1", "FILTER_CODE": "", "FILTER_MIME": ""}
    spider.configure(settings, {"domain": domain, "filters": "false"})
    return spider.query(spider.endpoints[0])


def thread_cpu(pid: int, seen: dict[str, float]) -> None:
    """Each thread's CPU seconds (user + system) so far into ``seen``, by thread name: which
    core's worth is the reactor's, the store writer's, the checkpointer's."""
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            name = (task / "comm").read_text().strip()
        except (OSError, IndexError):
            continue
        seconds = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        key = "reactor (main thread)" if task.name == str(pid) else f"{name} {task.name}"
        seen[key] = max(seen.get(key, 0.0), seconds)


def watch_peak_rss(
    process: subprocess.Popen,
    samples: list[tuple[float, float]] | None = None,
    threads: dict[str, float] | None = None,
) -> float:
    """Peak RSS (VmHWM, MB) of the crawl process itself, read until it exits.

    ``getrusage(RUSAGE_CHILDREN)`` would also count the pages the child shared
    with this (large) process between fork and exec. ``samples`` (if given)
    gets (seconds since the start, RSS MB) every 50 ms: what grows with the run;
    ``threads`` each thread's CPU seconds, as last seen (:func:`thread_cpu`).
    """
    peak = 0.0
    started = time.perf_counter()
    status = Path(f"/proc/{process.pid}/status")
    while process.poll() is None:
        if threads is not None:
            thread_cpu(process.pid, threads)
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) / 1024)
                elif line.startswith("VmRSS:") and samples is not None:
                    samples.append((time.perf_counter() - started, int(line.split()[1]) / 1024))
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    return peak


def bare_client(base_url: str, targets: list[str], threads: int) -> dict[str, float]:
    """The floor: every page fetched (gzip), split into lines, each line's URL kept in a set."""
    parts = urlsplit(base_url)
    local: dict[int, http.client.HTTPConnection] = {}
    headers = {"Accept-Encoding": "gzip"}

    def fetch(target: str) -> set[bytes]:
        connection = local.get(threading.get_ident())
        if connection is None:
            connection = local[threading.get_ident()] = http.client.HTTPConnection(parts.hostname, parts.port)
        connection.request("GET", target, headers=headers)
        response = connection.getresponse()
        body = response.read()
        if response.getheader("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        return {line.split(b" ", 1)[0] for line in body.splitlines() if line}

    started = time.perf_counter()
    urls: set[bytes] = set()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for found in pool.map(fetch, targets):
            urls |= found
    return {"seconds": time.perf_counter() - started, "urls": len(urls), "cpu": time.process_time()}


SCRAPY_PEER = """
import json, sys, time
import scrapy
from scrapy.crawler import CrawlerProcess

job = json.loads(sys.argv[1])


class Pages(scrapy.Spider):
    name = "pages"
    urls: set = set()

    async def start(self):
        for target in job["targets"]:
            yield scrapy.Request(job["origin"] + target, dont_filter=True)

    def parse(self, response):
        self.urls.update(line.split(b" ", 1)[0] for line in response.body.splitlines() if line)


process = CrawlerProcess({
    "LOG_LEVEL": "ERROR", "TELNETCONSOLE_ENABLED": False, "ROBOTSTXT_OBEY": False,
    "CONCURRENT_REQUESTS": job["threads"], "CONCURRENT_REQUESTS_PER_DOMAIN": job["threads"],
    "DOWNLOAD_MAXSIZE": 0, "DOWNLOAD_WARNSIZE": 0,
    # Off as in trawl's crawl: Scrapy loads its remote control's web server (aiohttp) otherwise.
    "REMOTE_CONTROL_ENABLED": False,
    "EXTENSIONS": {"scrapy.extensions.remote_control.RemoteControl": None},
})
process.crawl(Pages)
process.start()
print(json.dumps({"urls": len(Pages.urls)}))
"""


def run_scrapy_peer(base_url: str, targets: list[str], threads: int) -> dict[str, float]:
    """The peer a Scrapy framework cannot beat: a bare Scrapy spider in a process of its own,
    start to exit, that fetches the same pages (gzip, Scrapy's default middlewares), splits
    the lines and keeps the URLs in a set. Its start-up (interpreter, Scrapy, Twisted's
    reactor) is counted, as the crawl's is."""
    parts = urlsplit(base_url)
    origin = f"{parts.scheme}://{parts.netloc}"
    payload = json.dumps({"origin": origin, "targets": targets, "threads": threads})
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", SCRAPY_PEER, payload], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the bare Scrapy spider failed: {done.stderr[-2000:]}")
    return {"seconds": seconds, **json.loads(done.stdout.strip().splitlines()[-1])}


def load() -> str:
    """The load average (1, 5, 15 min), printed beside every figure: the machine is shared."""
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_bare_client(base_url: str, targets: list[str], threads: int) -> dict[str, float]:
    """:func:`bare_client` in a process of its own, as the crawl is: this one serves the pages."""
    payload = json.dumps({"base_url": base_url, "targets": targets, "threads": threads})
    command = [sys.executable, str(Path(__file__).resolve()), "--bare-client", payload]
    return json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def main() -> None:
    if sys.argv[1:2] == ["--bare-client"]:  # the child process of run_bare_client
        job = json.loads(sys.argv[2])
        print(json.dumps(bare_client(job["base_url"], job["targets"], job["threads"])))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captures", type=int, default=1_000_000)
    parser.add_argument("--distinct", type=int, default=500_000)
    parser.add_argument("--page-lines", type=int, default=5_000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--store-dir", default=None, help="where bench.db goes (default: a new temp dir)")
    parser.add_argument("--profile", default=None, metavar="FILE", help="run the crawl under cProfile")
    parser.add_argument("--log", default=None, metavar="FILE", help="write the crawl's output there")
    parser.add_argument(
        "--wrap", default=None, metavar="COMMAND", help="run the crawl under COMMAND (py-spy record ... --)"
    )
    parser.add_argument("--output", default=None, metavar="FILE", help="also export the URLs with -o FILE")
    parser.add_argument("--rss-curve", default=None, metavar="FILE", help="write (seconds, RSS MB) samples")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra Scrapy setting for the crawl (repeatable)",
    )
    args = parser.parse_args()

    from tests.servers.ia_cdx import FakeCdxServer, generate_dataset

    domain = "example.com"
    started = time.perf_counter()
    captures = generate_dataset(args.captures, args.distinct, domain=domain)
    expected = expected_urls(captures, domain)
    print(
        f"dataset: {len(captures):,} captures, {len(expected):,} distinct canonical URLs "
        f"in scope ({time.perf_counter() - started:.1f} s to build)"
    )

    with FakeCdxServer(captures, lines_per_page=args.page_lines, log_requests=False) as server:
        query = page_query(domain)
        pages = server.prerender_pages(query)
        targets = [f"{server.endpoint_path}?{urlencode([*query, ('page', str(n))])}" for n in range(pages)]
        print(f"server: {pages} pages of {args.page_lines:,} lines pre-rendered at {server.base_url}")
        workdir = Path(tempfile.mkdtemp(prefix="trawl-bench-"))
        store_dir = Path(args.store_dir or workdir)
        (store_dir / "bench.db").unlink(missing_ok=True)
        profile = ["-m", "cProfile", "-o", str(Path(args.profile).resolve())] if args.profile else []
        command = [
            *(shlex.split(args.wrap) if args.wrap else []),
            sys.executable,
            *profile,
            "-m",
            "trawl.cli",  # what `trawl crawl` runs: only the crawl command's module is imported
            "crawl",
            "wayback",
            "-a",
            f"domain={domain}",
            "-a",
            "filters=false",
            "-s",
            f"WAYBACK_BASE_URL={server.base_url}",
            "-s",
            f"STORE_URI=sqlite:///{store_dir / 'bench.db'}",
            "-s",
            f"CONCURRENT_REQUESTS_PER_DOMAIN={args.concurrency}",
            "-s",
            "LOG_LEVEL=INFO",
            # A local server: no politeness budget to respect (measure trawl, not its pacing).
            "-s",
            "RATE_LIMITS_ENABLED=False",
            "-s",
            "AUTOTHROTTLE_ENABLED=False",
        ]
        env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
        command += [arg for extra in args.set for arg in ("-s", extra)]
        if args.output:
            command += ["-o", str(Path(args.output).resolve())]
        load_before = load()
        cpu_before = children_cpu()
        samples: list[tuple[float, float]] = []
        threads: dict[str, float] = {}
        t0 = time.perf_counter()
        with tempfile.TemporaryFile("w+") as log:
            process = subprocess.Popen(command, cwd=workdir, env=env, stdout=log, stderr=log, text=True)
            peak_rss_mb = watch_peak_rss(process, samples, threads)  # returns once the process is reaped
            elapsed = time.perf_counter() - t0
            log.seek(0)
            output = log.read()
        crawl_cpu = children_cpu() - cpu_before
        cpu_before = children_cpu()
        floor = run_bare_client(server.base_url, targets, args.concurrency)
        floor_cpu = children_cpu() - cpu_before
        cpu_before = children_cpu()
        peer = run_scrapy_peer(server.base_url, targets, args.concurrency)
        peer_cpu = children_cpu() - cpu_before
    if args.log:
        Path(args.log).write_text(output)
    if args.rss_curve:
        Path(args.rss_curve).write_text("".join(f"{t:.2f} {mb:.1f}\n" for t, mb in samples))
    if process.returncode != 0:
        print(output[-3000:])
        raise SystemExit(f"crawl failed with exit status {process.returncode}")
    summary = [line for line in output.splitlines() if "wayback: complete" in line]
    with sqlite3.connect(store_dir / "bench.db") as con:
        stored = {row[0] for row in con.execute("SELECT url FROM urls")}
    shutil.rmtree(workdir, ignore_errors=True)  # a 2,000,000-capture store is 250 MB of /tmp
    print(summary[-1] if summary else "(no summary line)")
    print(
        f"stored URLs: {len(stored):,} (expected {len(expected):,}; "
        f"{'exact match' if stored == expected else 'MISMATCH'})"
    )
    print(
        f"end to end: {elapsed:.2f} s for {len(captures):,} captures = "
        f"{len(captures) / elapsed:,.0f} captures/s (target >= 150,000)"
    )
    print(
        f"floor: a bare paged client ({args.concurrency} threads) took {floor['seconds']:.2f} s for the same"
        f" {pages} pages ({floor['urls']:,} distinct raw URLs); trawl = {elapsed / floor['seconds']:.2f}x"
        " the floor (target <= 3x)"
    )
    print(
        f"CPU (user + system): trawl {crawl_cpu:.2f} s ({crawl_cpu / elapsed:.2f} cores over its wall),"
        f" the floor {floor_cpu:.2f} s; trawl = {crawl_cpu / floor_cpu:.2f}x the floor's CPU"
    )
    print(
        f"a bare Scrapy spider (start to exit, {peer['urls']:,} distinct raw URLs): {peer['seconds']:.2f} s,"
        f" {peer_cpu:.2f} s CPU = {peer['seconds'] / floor['seconds']:.2f}x the floor;"
        f" trawl = {elapsed / peer['seconds']:.2f}x the bare Scrapy spider"
    )
    busy = sorted(threads.items(), key=lambda item: -item[1])[:8]
    print(
        "CPU by thread (as last seen, every 50 ms): "
        + ", ".join(f"{name} {seconds:.2f} s ({seconds / elapsed:.0%} of the wall)" for name, seconds in busy)
    )
    print(f"peak RSS of the crawl process: {peak_rss_mb:,.0f} MB (target <= 400 MB; 1 GB at 10M captures)")
    print(f"{load_before} at the start, {load()} at the end")


if __name__ == "__main__":
    main()
