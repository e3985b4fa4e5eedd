"""Politeness and resilience figures, measured from a local fault-injecting CDX server.

Prints:
* recall and duplicates of a 200-page crawl under 5% random 5xx, bursts of 429
  with Retry-After, connection resets and cut-off bodies;
* the highest number of requests the server saw in any window of the budget's
  period, against the configured limit;
* pages fetched twice after a ``kill -9`` and a resumed rerun (``JOBDIR``),
  against the pages in flight at the kill.

    python bench/bench_politeness.py
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.servers.ia_cdx import (  # noqa: E402
    FakeCdxServer,
    connection_reset,
    cut_transfer,
    make_capture,
    service_unavailable,
)
from trawl.canonical import canonicalize  # noqa: E402

ENV = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")


def crawl_command(base_url: str, **settings: object) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "wayback",
        "-a",
        "domain=example.com",
        "-a",
        "filters=false",
        "-s",
        f"WAYBACK_BASE_URL={base_url}",
        "-s",
        "LOG_LEVEL=WARNING",
    ]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    return command


def dataset(pages: int, per_page: int) -> list:
    return [
        make_capture(f"http://example.com/p{p:04d}/u{r:03d}", "20200101000000")
        for p in range(pages)
        for r in range(per_page)
    ]


def stored(db: Path) -> list[str]:
    with sqlite3.connect(db) as con:
        return [row[0] for row in con.execute("SELECT url FROM urls")]


def max_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    best = start = 0
    for end, t in enumerate(times):
        while times[start] <= t - window:
            start += 1
        best = max(best, end - start + 1)
    return best


def faults_run(workdir: Path) -> None:
    pages = 200
    captures = dataset(pages, 20)
    expected = {canonicalize(c.original) for c in captures}
    rng = random.Random(1)
    faults: dict[int, list] = {}
    for page in range(pages):
        roll = rng.random()
        if roll < 0.05:
            faults.setdefault(page, []).append(service_unavailable())
        elif roll < 0.07:
            faults.setdefault(page, []).append(connection_reset())
        elif roll < 0.09:
            faults.setdefault(page, []).append(cut_transfer())
    for page in range(50, 56):
        faults.setdefault(page, []).append(
            (429, b"<html>Too Many Requests</html>", {"Content-Type": "text/html", "Retry-After": "1"})
        )
    limit, period = 40, 1.0
    with FakeCdxServer(captures, lines_per_page=20) as server:
        server.fail_pages = faults
        injected = sum(len(v) for v in faults.values())
        started = time.monotonic()
        subprocess.run(
            crawl_command(
                server.base_url,
                RETRY_TIMES=6,
                RETRY_BACKOFF_BASE=0.05,
                RATE_LIMITS=f'{{"wayback": "{limit}/{period:g}s"}}',
                SOURCE_CONCURRENCY='{"wayback": 4}',
                AUTOTHROTTLE_ENABLED=False,
            ),
            cwd=workdir,
            env=ENV,
            capture_output=True,
            check=False,
        )
        elapsed = time.monotonic() - started
        times = [r.time for r in server.requests]
    urls = stored(workdir / "trawl.db")
    print(f"faults: {injected} injected over {pages} pages ({len(times)} requests, {elapsed:.1f} s)")
    print(
        f"  recall {len(set(urls) & expected) / len(expected):.2%} "
        f"({len(set(urls) & expected):,} of {len(expected):,} URLs), "
        f"duplicates {len(urls) - len(set(urls))}, unexpected {len(set(urls) - expected)}"
    )
    print(f"  max requests in any {period:g} s window: {max_in_window(times, period)} (limit {limit})")


def kill_run(workdir: Path, jobdir: Path) -> None:
    pages = 120
    captures = dataset(pages, 20)
    expected = {canonicalize(c.original) for c in captures}
    concurrency = 4
    settings = {
        "JOBDIR": jobdir,
        "SOURCE_CONCURRENCY": f'{{"wayback": {concurrency}}}',
        "RATE_LIMITS": '{"wayback": "1000/1s"}',
        "AUTOTHROTTLE_ENABLED": False,
    }
    db = workdir / "trawl.db"
    with FakeCdxServer(captures, lines_per_page=20, latency=0.05) as server:
        process = subprocess.Popen(
            crawl_command(server.base_url, **settings),
            cwd=workdir,
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        kill_at = random.Random().randint(200, 1600)  # rows committed before the kill
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                    if con.execute("SELECT COUNT(*) FROM urls").fetchone()[0] >= kill_at:
                        break
            except sqlite3.Error:
                pass
            time.sleep(0.005)
        process.send_signal(signal.SIGKILL)
        process.wait()
        first = {dict(r.params).get("page") for r in server.requests} - {None}
        with sqlite3.connect(db) as con:
            ledger = {row[0].split("=")[1] for row in con.execute("SELECT page FROM pages")}
            integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        in_flight = first - ledger
        mark = len(server.requests)
        subprocess.run(
            crawl_command(server.base_url, **settings), cwd=workdir, env=ENV, capture_output=True, check=False
        )
        second = {dict(r.params).get("page") for r in server.requests[mark:]} - {None}
    urls = stored(db)
    print(
        f"kill -9 after {len(ledger)} of {pages} pages stored: integrity_check {integrity}, "
        f"{len(in_flight)} page(s) in flight"
    )
    print(
        f"  rerun fetched {len(second)} page(s); fetched twice: {len(first & second)} "
        f"(<= in flight: {len(first & second) <= len(in_flight)})"
    )
    print(
        f"  final: {len(set(urls)):,} of {len(expected):,} URLs, duplicates {len(urls) - len(set(urls))}, "
        f"exact set: {set(urls) == expected}"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        faults_run(Path(one))
        kill_run(Path(two), Path(two) / "job")


if __name__ == "__main__":
    main()
