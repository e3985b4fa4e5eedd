"""trawl against waymore on the same four local sources, in one run.

One dataset (``tests/servers/devdata.py``: by default 200,000 distinct URLs for one
domain over the Wayback Machine, Common Crawl, OTX and urlscan, 40% of them in two
sources or more) served by the fakes of ``bench/bench_sources.py``, every page both
tools ask for rendered before the clock starts. Then, one after the other:

- **trawl**: ``scrapy crawl all`` over the four sources, no limits, no filters, into a
  fresh SQLite store (what ``bench_sources.py`` runs);
- **waymore** (PyPI, ``WAYMORE_VERSION``, installed on first use into its own venv under
  the gitignored ``.cache/``): ``-mode U -f -lcc 0`` (``-f``: no status, MIME or URL
  filter on the links; ``-ko`` would *add* a keyword filter; ``-lcc 0``: every Common
  Crawl index) with a config whose ``FILTER_URL`` is empty. waymore's upstream URLs are
  hardcoded https constants and Common Crawl's come from ``collinfo.json`` (which names
  the real host), so it runs under ``bench/waymore_shim.py``, which rewrites each
  request's URL prefix to the local fake inside ``requests`` and calls waymore's
  ``main()``; neither tool pays TLS.

Printed for each: wall, CPU (user + system, children included), peak RSS, requests
sent, URLs found and recall (the share of the dataset's canonical URLs found; waymore's
raw lines are canonicalized by trawl's canonicalizer first), with the load average
beside each run. Targets: trawl's wall <= waymore's, recall 1.000.

waymore asks Common Crawl's index without ``page=``, which pywb answers with the first
page only, so its recall stays below 1 by design. Its output goes to a file, not a
terminal: waymore then also writes each link to stdout (a pipe's worth of lines).

The machine is shared: ``--rounds N`` runs the pair N times, the order swapped each round,
and prints each round's ratios and their median.

    python bench/bench_vs_waymore.py [--urls N] [--crawls N] [--processes N] [--order trawl,waymore]
        [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_sources import (  # noqa: E402
    base_url_settings,
    check_store,
    crawl,
    prerender,
    start_servers,
    summary_lines,
)
from bench.bench_wayback import watch_peak_rss  # noqa: E402
from tests.servers.commoncrawl import _parse_query as cc_query  # noqa: E402
from tests.servers.devdata import CRAWL_IDS, DOMAIN, build_dataset, expected_urls  # noqa: E402
from trawl.records.canonical import canonicalize  # noqa: E402

WAYMORE_VERSION = "8.9"
VENV = ROOT / ".cache" / "waymore-venv"
SHIM = ROOT / "bench" / "waymore_shim.py"
URLSCAN_KEY = "bench-urlscan-key"  # the same key trawl's run gets (bench_sources)

#: waymore's queries, as 8.9 builds them with ``-f`` (no filters) for ``-i DOMAIN``.
WAYBACK_FIELDS = "timestamp,original,mimetype,statuscode,digest"
CC_FIELDS = "timestamp,url,mime,status,digest"
OTX_LIMIT = 500
URLSCAN_SIZE = 10_000


def load() -> str:
    return "load " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def ensure_waymore() -> Path:
    """waymore's interpreter, its venv created and the pinned version installed if missing."""
    python = VENV / "bin" / "python"
    check = [str(python), "-c", "import importlib.metadata as m; print(m.version('waymore'))"]
    if python.exists():
        done = subprocess.run(check, capture_output=True, text=True)
        if done.stdout.strip() == WAYMORE_VERSION:
            return python
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q", f"waymore=={WAYMORE_VERSION}"]
    subprocess.run(pip, check=True)
    return python


def prerender_waymore(servers: Mapping[str, Any], crawls: int) -> None:
    """Render waymore's pages too, so that neither tool waits on a live render."""
    servers["wayback"].prerender_pages({"url": f"*.{DOMAIN}/*", "fl": WAYBACK_FIELDS})
    cc = servers["commoncrawl"]
    pairs = [("output", "json"), ("fl", CC_FIELDS), ("url", f"*.{DOMAIN}/*")]
    for crawl_id in CRAWL_IDS[:crawls]:
        # No ``page=`` (page 0): the fake's public prerender keys pages by number.
        for gzip_ok in (False, True):
            answer = cc._cdx(cc.indexes[crawl_id], cc_query(pairs, cc.max_blocks), gzip_ok)
            cc._cache[(crawl_id, tuple(sorted(pairs)), gzip_ok)] = answer
    servers["otx"].prerender_pages("domain", DOMAIN, OTX_LIMIT)
    servers["urlscan"].prerender_pages(f"domain:{DOMAIN}", URLSCAN_SIZE)


def waymore_config(workdir: Path) -> Path:
    """No URL filter (``-f`` skips the status and MIME ones), the urlscan key, output in ``workdir``."""
    path = workdir / "waymore-config.yml"
    lines = {
        "FILTER_CODE": '""',
        "FILTER_MIME": '""',
        "FILTER_URL": '""',
        "FILTER_KEYWORDS": '""',
        "URLSCAN_API_KEY": URLSCAN_KEY,
        "VIRUSTOTAL_API_KEY": '""',
        "INTELX_API_KEY": '""',
        "CONTINUE_RESPONSES_IF_PIPED": "True",
        "DEFAULT_OUTPUT_DIR": str(workdir),
    }
    path.write_text("".join(f"{k}: {v}\n" for k, v in lines.items()))
    return path


@dataclass
class Run:
    wall: float
    cpu: float
    peak_rss_mb: float
    output: str
    returncode: int


def run_waymore(python: Path, servers: Mapping[str, Any], workdir: Path, processes: int) -> tuple[Run, Path]:
    hosts = {
        "https://web.archive.org": servers["wayback"].base_url,
        "https://index.commoncrawl.org": servers["commoncrawl"].base_url,
        "https://otx.alienvault.com": servers["otx"].base_url,
        "https://urlscan.io": servers["urlscan"].base_url,
    }
    out = workdir / "waymore.txt"
    out.unlink(missing_ok=True)
    # waymore caches collinfo.json beside its module for a month: fetched on every run, as trawl's is.
    for cached in VENV.glob("lib/python*/site-packages/waymore/collinfo.json"):
        cached.unlink()
    command = [str(python), str(SHIM), json.dumps(hosts), "-i", DOMAIN, "-mode", "U", "-f", "-lcc", "0"]
    command += ["--providers", "wayback,commoncrawl,otx,urlscan", "-p", str(processes)]
    command += ["-oU", str(out), "-ow", "-c", str(waymore_config(workdir))]
    # tldextract's bundled Public Suffix List, as once a user's cache holds it: no network lookup.
    env = dict(os.environ, TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS="")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            command, cwd=workdir, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL, text=True
        )
        peak = watch_peak_rss(process)
        wall = time.perf_counter() - started
        log.seek(0)
        output = log.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu, peak, output, process.returncode or 0), out


def waymore_recall(out: Path, expected: set[str]) -> tuple[int, int]:
    """(distinct lines waymore wrote, how many of the expected canonical URLs they give)."""
    lines = {line.strip() for line in out.read_text(errors="replace").splitlines() if line.strip()}
    return len(lines), len({canonicalize(u) for u in lines} & expected)


def request_counts(servers: Mapping[str, Any]) -> dict[str, int]:
    return {name: len(server.requests) for name, server in servers.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=200_000, help="distinct URLs (default 200,000)")
    parser.add_argument("--overlap", type=float, default=0.4, help="share of URLs in 2+ sources (0.4)")
    parser.add_argument("--crawls", type=int, default=3, help="Common Crawl indexes (1-5, default 3)")
    parser.add_argument("--page-lines", type=int, default=5_000, help="Wayback CDX lines a page")
    parser.add_argument("--block-lines", type=int, default=1_000, help="Common Crawl lines a ZipNum block")
    parser.add_argument("--processes", type=int, default=2, help="waymore's -p threads (its default: 2)")
    parser.add_argument("--order", default="trawl,waymore", help="which runs first (default trawl,waymore)")
    parser.add_argument("--rounds", type=int, default=1, help="pairs of runs, the order swapped each round")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="extra trawl setting"
    )
    parser.add_argument(
        "--wrap", default=None, metavar="COMMAND", help="run trawl under COMMAND (py-spy ...)"
    )
    parser.add_argument(
        "--log", default=None, metavar="PREFIX", help="write each tool's output to PREFIX.<tool>"
    )
    args = parser.parse_args()
    order = args.order.split(",")
    if sorted(order) != ["trawl", "waymore"]:
        parser.error("--order takes trawl,waymore or waymore,trawl")

    python = ensure_waymore()
    print(f"waymore {WAYMORE_VERSION} in {VENV}; {load()}")
    data = build_dataset(
        args.urls, args.overlap, args.crawls, sources=("wayback", "commoncrawl", "otx", "urlscan")
    )
    expected = expected_urls(data, DOMAIN)
    per_source = ", ".join(f"{name} {count:,}" for name, count in data.per_source().items())
    print(f"dataset: {len(expected):,} distinct URLs for {DOMAIN} ({per_source}), {args.crawls} CC indexes")

    results: list[dict[str, tuple[Run, int, int, str, dict[str, int]]]] = []
    with ExitStack() as stack:
        servers = start_servers(stack, data, args.page_lines, args.block_lines)
        t0 = time.perf_counter()
        prerender(*servers.values(), crawls=args.crawls)
        prerender_waymore(servers, args.crawls)
        print(f"servers: both tools' pages pre-rendered ({time.perf_counter() - t0:.1f} s)")
        workdir = Path(tempfile.mkdtemp(prefix="trawl-bench-vs-waymore-"))
        for tool, rounds in ((tool, i) for i in range(args.rounds) for tool in order[:: 1 - 2 * (i % 2)]):
            if len(results) <= rounds:
                results.append({})
            counts = request_counts(servers)
            at_start = load()
            if tool == "trawl":
                store = workdir / "bench.db"
                store.unlink(missing_ok=True)
                c = crawl(base_url_settings(servers), store, workdir, args.set, None, args.wrap)
                run = Run(c.wall, c.cpu, c.peak_rss_mb, c.output, c.returncode)
                recall_text, _ = check_store(store, data, expected)
                with sqlite3.connect(store) as con:
                    stored = {u for (u,) in con.execute("SELECT url FROM urls")}
                found, hits = len(stored), len(stored & expected)
                note = recall_text + "\n" + "\n".join(summary_lines(c.output))
            else:
                run, out = run_waymore(python, servers, workdir, args.processes)
                found, hits = waymore_recall(out, expected) if out.exists() else (0, 0)
                note = "\n".join(line for line in run.output.splitlines() if "Links found" in line)
            sent = {name: n - counts[name] for name, n in request_counts(servers).items()}
            results[rounds][tool] = (run, found, hits, at_start, sent)
            if args.log:
                Path(f"{args.log}.{tool}").write_text(run.output)
            if run.returncode != 0:
                print(run.output[-3000:])
                raise SystemExit(f"{tool} failed with exit status {run.returncode}")
            print(f"--- {tool}, round {rounds + 1} ({at_start} at the start, {load()} at the end)\n{note}")

    print()
    header = ("tool", "wall s", "CPU s", "RSS MB", "found", "recall")
    print("{:8} {:>7} {:>7} {:>7} {:>9} {:>7}".format(*header) + "  requests; load at the start")
    walls, cpus = [], []
    for pair in results:
        for tool, (run, found, hits, at_start, sent) in pair.items():
            recall = hits / len(expected)
            per_server = ", ".join(f"{k} {v}" for k, v in sent.items())
            print(
                f"{tool:8} {run.wall:7.2f} {run.cpu:7.2f} {run.peak_rss_mb:7.0f} {found:9,} {recall:7.3f}  "
                f"{sum(sent.values())} ({per_server}); {at_start}"
            )
        trawl, waymore = pair["trawl"][0], pair["waymore"][0]
        walls.append(trawl.wall / waymore.wall)
        cpus.append(trawl.cpu / waymore.cpu)
        print(
            f"trawl / waymore: wall {walls[-1]:.2f}x (target <= 1.00x), CPU {cpus[-1]:.2f}x, "
            f"peak RSS {trawl.peak_rss_mb / waymore.peak_rss_mb:.2f}x; {load()}"
        )
    if len(results) > 1:
        print(
            f"median of {len(results)} rounds: wall {statistics.median(walls):.2f}x, "
            f"CPU {statistics.median(cpus):.2f}x"
        )


if __name__ == "__main__":
    main()
