"""``trawl serve`` on a 5,000,000-URL store: the search page with its six facets, beside its floor.

Builds a store of ``--urls`` URLs (default 5,000,000) with the store's own schema
(:data:`trawl.stores.sqlite.schema.SCHEMA`), rows as the crawls leave them: 2,000
hosts of one domain, 1 to 3 of 6 sources, statuses, mime types, first and last
seen over 1998-2026, in WAL mode. Then times what ``trawl serve`` does at start
(the pages' indexes, the full-text side file) and, against a running ``trawl
serve``, each page over HTTP (median of ``--runs``), beside the floor: the same
query's first 100 URLs alone, no count and no facets, on a connection of this
process. Each figure is printed with the load (``uptime``) beside it; the
target is a faceted page under 1 s. A facet that does not finish in its budget
is shown "timed out" on the page: the line says how many of the six did.

    python bench/bench_serve.py [--urls 5000000] [--runs 5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trawl.serve import finder, fts, plugin, store  # noqa: E402
from trawl.stores.sqlite.schema import SCHEMA  # noqa: E402

SOURCES = ("commoncrawl", "ghostarchive", "otx", "urlscan", "virustotal", "wayback")
EXTS = ("", "", "", ".html", ".php", ".js", ".json", ".css", ".png", ".aspx")
MIMES = {"": "text/html", ".html": "text/html", ".php": "text/html", ".js": "application/javascript",
         ".json": "application/json", ".css": "text/css", ".png": "image/png",
         ".aspx": "text/html"}  # fmt: skip
WORDS = ("api", "admin", "login", "static", "assets", "user", "account", "search", "docs", "v1", "v2")
HOSTS = 2000
#: The pages timed: (label, query).
PAGES = (
    ("every URL", "*"),
    ("one host", "host:h17.example.com"),
    ("one host, js", "host:h17.example.com ext:js"),
    ("a status", "status:404"),
    ("a year", "first_seen:2015"),
)


def uptime() -> str:
    return (
        subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip().split("load average:")[-1]
    )


def rows(count: int, seed: int = 7):
    rng = random.Random(seed)
    for n in range(count):
        host = f"h{rng.randrange(HOSTS)}.example.com"
        ext = rng.choice(EXTS)
        path = "/".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
        query = f"?id={n}" if n % 5 == 0 else ""
        url = f"https://{host}/{path}/{n:08x}{ext}{query}"
        first = rng.randrange(1998, 2027)
        last = min(2026, first + rng.randrange(0, 6))
        sources = ",".join(sorted(rng.sample(SOURCES, rng.randint(1, 3))))
        status = rng.choice(("200", "200", "200", "301", "404", "200,404"))
        yield (url, host, sources, f"{first}0{rng.randint(1, 9)}15120000", f"{last}1101000000",
               rng.randint(1, 40), status, MIMES[ext], "{}", 1, 1, 1.0e9 + n, 1.0e9 + n)  # fmt: skip


def build(file: Path, count: int) -> float:
    started = time.perf_counter()
    con = sqlite3.connect(file)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")
    con.executescript(SCHEMA)
    con.execute(
        "INSERT INTO runs (run_id, source, domain, started_at, finished_at, finish_reason, stats, job)"
        " VALUES ('bench', 'wayback', 'example.com', 1.0e9, 1.0e9, 'finished', '{}', 'bench')"
    )
    with con:
        con.executemany("INSERT OR IGNORE INTO urls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", rows(count))
    con.close()
    return time.perf_counter() - started


def get(url: str) -> tuple[float, str]:
    """Seconds and body; an HTTP error's body too (datasette answers 400 to a query past its limit)."""
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            body = response.read().decode()
    except urllib.error.HTTPError as exc:
        body = f"HTTP {exc.code}: " + exc.read().decode(errors="replace")
    return time.perf_counter() - started, body


def floor(file: Path, query: str, runs: int) -> float:
    con = sqlite3.connect(store.read_only(file), uri=True)
    plugin.prepare(con, None)
    where = finder.where_of(query)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        finder.page(con, where)
        times.append(time.perf_counter() - started)
    con.close()
    return statistics.median(times)


def serve(file: Path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "trawl.cli", "serve", "--store", f"sqlite:///{file}", "--port", "0"],
        cwd=file.parent, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings"),
    )  # fmt: skip
    assert process.stderr is not None
    for line in process.stderr:
        print(f"  {line.rstrip()}")
        found = re.search(r"at (http://\S+/) ", line)
        if found:
            return process, found.group(1)
    raise SystemExit(f"trawl serve did not start (exit {process.wait()})")


def page(base: str, file: Path, label: str, query: str, runs: int) -> None:
    url = f"{base}trawl/search?{urlencode({'q': query})}"
    get(url)  # warm: the first page also warms the page cache
    times, body = [], ""
    for _ in range(runs):
        took, body = get(url)
        times.append(took)
    shown = body.count('class="trawl-facet"') - body.count('class="trawl-timeout"')
    counted = "counted" if "can be counted" not in body else "count timed out"
    if "trawl-counting" in body:
        counted = "count and facets being counted in the background"
    print(
        f"page {label:14} {query!r:32} {statistics.median(times):.2f} s (min {min(times):.2f},"
        f" max {max(times):.2f}), {shown}/6 facets, {counted};"
        f" floor (100 URLs, no facets) {floor(file, query, runs):.3f} s  (load {uptime()})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=5_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="build the store in DIR and keep it (reused if there)")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-serve-"))
    folder.mkdir(parents=True, exist_ok=True)
    file = folder / "trawl.db"
    if not file.exists():
        print(f"building {args.urls:,} URLs (load {uptime()})", flush=True)
        print(f"store built in {build(file, args.urls):.0f} s (load {uptime()})", flush=True)
    started = time.perf_counter()
    unmade = store.ensure_indexes(file)
    print(
        f"indexes made in {time.perf_counter() - started:.1f} s, unmade: {unmade or 'none'} (load {uptime()})"
    )
    update = fts.update(file)
    size = update.file.stat().st_size if update.file else 0
    print(
        f"full-text side file: {update.added:,} URLs in {update.seconds:.1f} s, {size / 2**20:,.0f} MB"
        f" beside a {file.stat().st_size / 2**20:,.0f} MB store {update.problem} (load {uptime()})",
        flush=True,
    )
    process, base = serve(file)
    served_at = time.perf_counter()
    try:
        for label, query in PAGES:
            page(base, file, label, query, args.runs)
        deadline = time.perf_counter() + 900
        while time.perf_counter() < deadline and "trawl-counted-at" not in get(f"{base}trawl/search")[1]:
            time.sleep(1)  # a benchmark's poll of a background count, not a test
        took = time.perf_counter() - served_at
        print(
            f"every URL's count, facets and charts made in the background in {took:.0f} s (load {uptime()})"
        )
        page(base, file, "every URL", "*", args.runs)
        for name in ("hosts", "new_since_last_run", "runs_by_source"):
            took, body = get(f"{base}{file.stem}/{name}")
            state = body[:60].replace("\n", " ") if body.startswith("HTTP ") else "ok"
            print(f"view {name:24} {took:.2f} s {state} (load {uptime()})", flush=True)
        for label, query in (("one host", "host:h17.example.com"), ("every URL", "*")):
            took, body = get(f"{base}trawl/charts?{urlencode({'q': query})}")
            drawn = body.count('class="trawl-chart"') - body.count('class="trawl-timeout"')
            print(f"charts of {label}: {took:.2f} s, {drawn}/3 drawn (load {uptime()})", flush=True)
        took, body = get(f"{base}trawl/search?{urlencode({'q': 'host:h17.example.com', 'words': 'admin'})}")
        print(f"words 'admin' in one host: {took:.2f} s (load {uptime()})", flush=True)
    finally:
        process.terminate()
        process.wait(timeout=30)
    started = time.perf_counter()
    process, base = serve(file)
    try:
        while time.perf_counter() - started < 900 and "trawl-counted-at" not in get(f"{base}trawl/search")[1]:
            time.sleep(0.2)  # a benchmark's poll of a background count, not a test
        took = time.perf_counter() - started
        print(f"restart on the unchanged store: serving, with every URL's facets kept, in {took:.1f} s"
              f" (load {uptime()})", flush=True)  # fmt: skip
    finally:
        process.terminate()
        process.wait(timeout=30)


if __name__ == "__main__":
    main()
