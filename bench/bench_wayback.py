"""End-to-end throughput of the wayback spider into a fresh SQLite store.

Serves a generated CDX index (default 1,000,000 captures over 500,000 URL keys,
with duplicate captures, http/https and :80/:443 variants) from the local fake
Internet Archive CDX server, runs ``scrapy crawl wayback`` against it as a user
would, and prints captures per second end to end (process start to exit) and
the crawl process's peak RSS. Pages are rendered before the clock starts, so
the server costs the crawler as little CPU as a remote server would.

Target on a 2-core machine: >= 200,000 captures/s and peak RSS <= 400 MB (<= 1 GB for
10,000,000 captures over 5,000,000 URLs).

    python bench/bench_wayback.py [--captures N] [--distinct N] [--page-lines N]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.servers.ia_cdx import FakeCdxServer, generate_dataset  # noqa: E402
from trawl.records.canonical import canonicalize, host_of  # noqa: E402
from trawl.sources.cdx.wayback import WaybackSpider  # noqa: E402
from trawl.sources.target import parse_target  # noqa: E402


def expected_urls(captures: list, domain: str) -> set[str]:
    target = parse_target(domain)
    urls = {canonicalize(c.original) for c in captures}
    return {u for u in urls if u and target.in_scope(host_of(u))}


def page_query(domain: str) -> list[tuple[str, str]]:
    """The exact query the spider sends, so that pre-rendered pages are cache hits."""
    spider = WaybackSpider.__new__(WaybackSpider)
    settings = {"WAYBACK_BASE_URL": "http://127.0.0.1", "FILTER_CODE": "", "FILTER_MIME": ""}
    spider.configure(settings, {"domain": domain, "filters": "false"})
    return spider.query(spider.endpoints[0])


def watch_peak_rss(process: subprocess.Popen) -> float:
    """Peak RSS (VmHWM, MB) of the crawl process itself, read until it exits.

    ``getrusage(RUSAGE_CHILDREN)`` would also count the pages the child shared
    with this (large) process between fork and exec.
    """
    peak = 0.0
    status = Path(f"/proc/{process.pid}/status")
    while process.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) / 1024)
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captures", type=int, default=1_000_000)
    parser.add_argument("--distinct", type=int, default=500_000)
    parser.add_argument("--page-lines", type=int, default=5_000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--store-dir", default=None, help="where bench.db goes (default: a new temp dir)")
    parser.add_argument("--profile", default=None, metavar="FILE", help="run the crawl under cProfile")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra Scrapy setting for the crawl (repeatable)",
    )
    args = parser.parse_args()

    domain = "example.com"
    started = time.perf_counter()
    captures = generate_dataset(args.captures, args.distinct, domain=domain)
    expected = expected_urls(captures, domain)
    print(
        f"dataset: {len(captures):,} captures, {len(expected):,} distinct canonical URLs "
        f"in scope ({time.perf_counter() - started:.1f} s to build)"
    )

    with FakeCdxServer(captures, lines_per_page=args.page_lines, log_requests=False) as server:
        pages = server.prerender_pages(page_query(domain))
        print(f"server: {pages} pages of {args.page_lines:,} lines pre-rendered at {server.base_url}")
        workdir = Path(tempfile.mkdtemp(prefix="trawl-bench-"))
        store_dir = Path(args.store_dir or workdir)
        (store_dir / "bench.db").unlink(missing_ok=True)
        profile = ["-m", "cProfile", "-o", str(Path(args.profile).resolve())] if args.profile else []
        command = [
            sys.executable,
            *profile,
            "-m",
            "scrapy",
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
        t0 = time.perf_counter()
        with tempfile.TemporaryFile("w+") as log:
            process = subprocess.Popen(command, cwd=workdir, env=env, stdout=log, stderr=log, text=True)
            peak_rss_mb = watch_peak_rss(process)
            elapsed = time.perf_counter() - t0
            log.seek(0)
            output = log.read()
    if process.returncode != 0:
        print(output[-3000:])
        raise SystemExit(f"crawl failed with exit status {process.returncode}")
    summary = [line for line in output.splitlines() if "wayback: complete" in line]
    with sqlite3.connect(store_dir / "bench.db") as con:
        stored = {row[0] for row in con.execute("SELECT url FROM urls")}
    print(summary[-1] if summary else "(no summary line)")
    print(
        f"stored URLs: {len(stored):,} (expected {len(expected):,}; "
        f"{'exact match' if stored == expected else 'MISMATCH'})"
    )
    print(
        f"end to end: {elapsed:.2f} s for {len(captures):,} captures = "
        f"{len(captures) / elapsed:,.0f} captures/s (target >= 200,000)"
    )
    print(f"peak RSS of the crawl process: {peak_rss_mb:,.0f} MB (target <= 400 MB; 1 GB at 10M captures)")


if __name__ == "__main__":
    main()
