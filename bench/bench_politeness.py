"""Politeness and resilience figures, measured from local fault-injecting servers.

Prints:
* recall, duplicates and requests sent inside a pause of a crawl of three sources at
  once (wayback, otx, urlscan: 220 pages) under 5% 5xx, 2% resets, 2% truncated
  bodies, 2% corrupted bodies and bursts of 429 with Retry-After;
* the highest number of requests the CDX server saw in any window of the budget's
  period, against the configured limit;
* pages fetched twice after a ``kill -9`` and a resumed rerun (``JOBDIR``),
  against the pages in flight at the kill;
* wayback against a server that limits like the Internet Archive (15 requests a
  minute, 429 without Retry-After, three in a row and the connection is refused
  for 120 s), every duration scaled by ``--scale``: recall, bans, and the wall
  time against pages / (15 per minute).

    python bench/bench_politeness.py [--scale 0.1]
"""

from __future__ import annotations

import argparse
import os
import random
import re
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
    corrupted_body,
    cut_transfer,
    make_capture,
    service_unavailable,
    truncated_body,
)
from tests.servers.ia_limits import LimitingCdxServer  # noqa: E402
from tests.servers.otx import (  # noqa: E402
    FakeOtxServer,
    OtxUrl,
    corrupted_json,
    otx_throttled,
    server_error,
    truncated_json,
)
from tests.servers.otx import connection_reset as api_reset  # noqa: E402
from tests.servers.urlscan import FakeUrlscanServer, make_result  # noqa: E402
from trawl.records.canonical import canonicalize  # noqa: E402

# TRAWL_STORE_URI: each run stores into its work directory's trawl.db, not the user's default store.
ENV = dict(
    os.environ,
    SCRAPY_SETTINGS_MODULE="trawl.settings",
    TRAWL_STORE_URI="sqlite:///trawl.db",
    OTX_API_KEY="",
    URLSCAN_API_KEY="",
)
#: A request that arrives within this of a 429 may have been sent before the 429 was read:
#: both processes stamp times late when a loaded 2-core machine deschedules them (50-150 ms
#: measured with nice -n 19). Pauses last PAUSE s, so most of each is checked.
GRACE = 0.25
PAUSE = 2


def crawl_command(source: str, *extra: str, **settings: object) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        source,
        "-a",
        "domain=example.com",
        "-a",
        "filters=false",
    ]
    command += ["-s", "LOG_LEVEL=INFO", *extra]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    return command


def dataset(pages: int, per_page: int) -> list:
    return [
        make_capture(f"http://example.com/p{p:04d}/u{r:03d}", "20200101000000")
        for p in range(pages)
        for r in range(per_page)
    ]


def stored(db: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(db) as con:
        return [(row[0], row[1]) for row in con.execute("SELECT url, captures FROM urls")]


def max_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    best = start = 0
    for end, t in enumerate(times):
        while times[start] <= t - window:
            start += 1
        best = max(best, end - start + 1)
    return best


def fault_mix(pages: int, seed: int, fivexx, reset, truncated, corrupted) -> dict[int, list]:
    """Per page, one fault at most: 5% 5xx, 2% resets, 2% truncated, 2% corrupted bodies."""
    rng = random.Random(seed)
    faults: dict[int, list] = {}
    for page in range(pages):
        roll = rng.random()
        for bound, make in ((0.05, fivexx), (0.07, reset), (0.09, truncated), (0.11, corrupted)):
            if roll < bound:
                faults[page] = [make()]
                break
    return faults


def inside_pauses(times: list[float], pauses: list[tuple[float, float]]) -> tuple[int, int]:
    """Requests that arrived while the server had asked for a pause (after GRACE), and within GRACE."""
    inside = sum(1 for t in times for start, length in pauses if start + GRACE < t < start + length)
    near = sum(1 for t in times for start, _ in pauses if start < t <= start + GRACE)
    return inside, near


def first_request_of(times_by_page: dict[int, float], pages: range) -> list[float]:
    return [times_by_page[p] for p in pages if p in times_by_page]


def faults_run(workdir: Path) -> None:
    # wayback: 100 CDX pages of 20 URLs, pages 0-based.
    cdx_pages = 100
    captures = dataset(cdx_pages, 20)
    cut = iter(random.Random(3).choices([truncated_body, cut_transfer], k=cdx_pages))
    cdx_faults = fault_mix(
        cdx_pages, 1, service_unavailable, connection_reset, lambda: next(cut)(), corrupted_body
    )
    hinted = (
        429,
        b"<html>Too Many Requests</html>",
        {"Content-Type": "text/html", "Retry-After": str(PAUSE)},
    )
    cdx_burst = range(50, 56)
    for page in cdx_burst:
        cdx_faults.setdefault(page, []).insert(0, hinted)
    # otx: 60 pages of 50 URLs, pages 1-based.
    otx_pages = 60
    otx_urls = [
        OtxUrl(f"https://example.com/otx/{i:05d}", "2021-01-01T00:00:00") for i in range(otx_pages * 50)
    ]
    otx_faults = {
        page + 1: fault
        for page, fault in fault_mix(
            otx_pages, 2, lambda: server_error(503), api_reset, truncated_json, corrupted_json
        ).items()
    }
    otx_burst = range(20, 25)
    for page in otx_burst:
        otx_faults.setdefault(page, []).insert(0, otx_throttled(PAUSE))
    # urlscan: 60 pages of 20 results, pages 1-based.
    scan_pages = 60
    results = [
        make_result(
            f"https://example.com/scan/{i:05d}",
            f"2023-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
        )
        for i in range(scan_pages * 20)
    ]
    scan_faults = {
        page + 1: fault
        for page, fault in fault_mix(
            scan_pages, 4, lambda: server_error(503), api_reset, truncated_json, corrupted_json
        ).items()
    }
    limited = (
        429,
        b'{"message": "Rate limit exceeded", "description": "Reset in %d seconds.", "status": 429}' % PAUSE,
        {"Content-Type": "application/json", "X-Rate-Limit-Reset-After": str(PAUSE)},
    )
    scan_burst = range(30, 34)
    for page in scan_burst:
        scan_faults.setdefault(page, []).insert(0, limited)

    expected = {canonicalize(c.original) for c in captures} | {canonicalize(u.url) for u in otx_urls}
    expected |= {canonicalize(r["page"]["url"]) for r in results}
    injected = sum(len(v) for f in (cdx_faults, otx_faults, scan_faults) for v in f.values())
    limit, period = 40, 1.0
    with (
        FakeCdxServer(captures, lines_per_page=20) as cdx,
        FakeOtxServer(urls=otx_urls, max_limit=50, fail_pages=otx_faults) as otx,
        FakeUrlscanServer(results=results, fail_pages=scan_faults) as scan,
    ):
        cdx.fail_pages = cdx_faults
        started = time.monotonic()
        budgets = ", ".join(f'"{s}": "{limit}/{period:g}s"' for s in ("wayback", "otx", "urlscan"))
        command = crawl_command(
            "all",
            "-a",
            "sources=wayback,otx,urlscan",
            WAYBACK_BASE_URL=cdx.base_url,
            OTX_BASE_URL=otx.base_url,
            URLSCAN_BASE_URL=scan.base_url,
            URLSCAN_PAGE_SIZE=20,
            RETRY_BACKOFF_BASE=0.05,
            RETRY_BACKOFF_MAX=1.0,
            RATE_LIMITS=f"{{{budgets}}}",
            AUTOTHROTTLE_ENABLED=False,
        )
        done = subprocess.run(command, cwd=workdir, env=ENV, capture_output=True, text=True, check=False)
        elapsed = time.monotonic() - started
        cdx_times = sorted(r.time for r in cdx.requests)
        cdx_first: dict[int, float] = {}
        for record, page in zip(cdx.requests, cdx.pages_requested(), strict=True):
            if page is not None:
                cdx_first.setdefault(page, record.time)
        otx_first: dict[int, float] = {}
        for record, page in zip(otx.requests, otx.pages_requested(), strict=True):
            otx_first.setdefault(page, record.time)
        otx_times = sorted(r.time for r in otx.requests)
        scan_first: dict[int, float] = {}
        for record in scan.search_requests():
            after = record.param("search_after")
            page = 1 if after is None else 1 + sum(1 for r in results if _after(r, after))
            scan_first.setdefault(page, record.time)
        scan_times = sorted(r.time for r in scan.search_requests())
        left = sum(len(v) for f in (cdx.fail_pages, otx.fail_pages, scan.fail_pages) for v in f.values())
    rows = stored(workdir / "trawl.db")
    urls = {url for url, _ in rows}
    duplicates = sum(captures - 1 for _, captures in rows)
    cdx_pauses = [(t, float(PAUSE)) for t in first_request_of(cdx_first, cdx_burst)]
    otx_pauses = [(t, float(PAUSE)) for t in first_request_of(otx_first, otx_burst)]
    scan_pauses = [(t, float(PAUSE)) for t in first_request_of(scan_first, scan_burst)]
    counts = [
        inside_pauses(times, pauses)
        for times, pauses in ((cdx_times, cdx_pauses), (otx_times, otx_pauses), (scan_times, scan_pauses))
    ]
    inside, near = sum(c[0] for c in counts), sum(c[1] for c in counts)
    gave_up = re.findall(r"'trawl/gave_up': (\d+)", done.stderr)
    requests = len(cdx_times) + len(otx_times) + len(scan_times)
    found = len(urls & expected)
    print(
        f"fault mix: {injected} faults over {cdx_pages + otx_pages + scan_pages} pages of 3 sources "
        f"({requests} requests, {elapsed:.1f} s, exit {done.returncode}, {left} faults not served)"
    )
    print(
        f"  recall {found / len(expected):.4f} ({found:,} of {len(expected):,} URLs), "
        f"duplicates {duplicates}, unexpected {len(urls - expected)}, gave up {sum(map(int, gave_up))}"
    )
    pauses = len(cdx_pauses) + len(otx_pauses) + len(scan_pauses)
    print(
        f"  requests inside a pause: {inside} ({pauses} pauses of {PAUSE} s; {near} more arrived within "
        f"{GRACE:g} s of the 429, in flight when it came)"
    )
    busiest = max_in_window(cdx_times, period)
    print(f"  wayback: max requests in any {period:g} s window: {busiest} (limit {limit})")


def _after(result: dict, search_after: str) -> bool:
    """Is ``result`` at or before the ``search_after`` position (urlscan serves newest first)?"""
    ms, _, scan_id = search_after.partition(",")
    return (int(result["sort"][0]), str(result["sort"][1])) >= (int(ms), scan_id)


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
            crawl_command("wayback", WAYBACK_BASE_URL=server.base_url, **settings),
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
            crawl_command("wayback", WAYBACK_BASE_URL=server.base_url, **settings),
            cwd=workdir,
            env=ENV,
            capture_output=True,
            check=False,
        )
        second = {dict(r.params).get("page") for r in server.requests[mark:]} - {None}
    urls = [url for url, _ in stored(db)]
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


def ia_run(workdir: Path, scale: float, strikes: int, label: str) -> None:
    """wayback at trawl's defaults, scaled, against a server that limits like the Internet Archive."""
    pages, per_minute = 40, 15
    captures = dataset(pages, 1)
    expected = {canonicalize(c.original) for c in captures}
    settings = {
        "RATE_LIMITS": f'{{"wayback": "60/{60 * scale:g}s"}}',
        "RETRY_BAN_PAUSE": 120 * scale,
        "RETRY_MAX_PAUSE": 3600 * scale,
        "RETRY_BACKOFF_BASE": 1 * scale,
        "RETRY_BACKOFF_MAX": 60 * scale,
        "AUTOTHROTTLE_START_DELAY": 1 * scale,
        "AUTOTHROTTLE_MAX_DELAY": 60 * scale,
    }
    with LimitingCdxServer(captures, lines_per_page=1, time_factor=scale, strikes=strikes) as server:
        server_url = server.base_url
        done = subprocess.run(
            crawl_command("wayback", WAYBACK_BASE_URL=server_url, **settings),
            cwd=workdir,
            env=ENV,
            capture_output=True,
            text=True,
            check=False,
        )
        bans, limited, served = len(server.bans), len(server.limited), len(server.served)
    summary = next(
        (
            line
            for line in done.stderr.splitlines()
            if "wayback: complete" in line or "wayback: partial" in line
        ),
        "",
    )
    match = re.search(r"in ([\d.]+) s:", summary)
    wall = float(match.group(1)) if match else float("nan")
    ideal = pages / per_minute * 60 * scale
    refused = re.findall(r"'downloader/exception_type_count/[\w.]*(?:Refused|Failed)\w*': (\d+)", done.stderr)
    urls = {url for url, _ in stored(workdir / "trawl.db")}
    waited = summary.split("; ", 1)[1] if "; " in summary else "no pause"
    print(
        f"IA-like server ({label}; 15 requests/min, 429 without Retry-After, ban after {strikes} in a row; "
        f"scale {scale:g}): exit {done.returncode}"
    )
    print(
        f"  recall {len(urls & expected) / len(expected):.3f}, bans {bans}, 429s {limited}, served {served}, "
        f"refused or reset {sum(map(int, refused))}"
    )
    print(f"  wall {wall:.1f} s against {pages} pages / (15 per minute) = {ideal:.1f} s: {wall / ideal:.2f}x")
    print(f"  {waited}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scale", type=float, default=0.1, help="time factor of the IA-like runs (1: real time)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        faults_run(Path(one))
        kill_run(Path(two), Path(two) / "job")
    with tempfile.TemporaryDirectory() as three, tempfile.TemporaryDirectory() as four:
        ia_run(Path(three), args.scale, 3, "three 429s in a row ban")
        ia_run(Path(four), args.scale, 1, "stricter: the first 429 bans")


if __name__ == "__main__":
    main()
