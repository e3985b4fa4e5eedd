"""The live crawl and the probe against a hostile site: does every run end, bounded, exact?

Each round (seeded) picks a mix of hostile pages of ``example.org``
(tests/servers/hostile_site.py, the site's forward proxy is the runs'
``PROXY_LIST``): a gzip bomb (1 MB inflating to 1 GiB), a 200 MB page, a drip
(16 bytes every 0.2 s, for ever), 2 MB of random bytes served as ``text/html``,
endless generated links, a calendar, a redirect loop, redirects to
``evil.example.net`` and to ``127.0.0.1``, a 10 MB robots.txt (naming a sitemap
on ``evil.example.net``), and two sitemap indexes naming themselves and each
other. It runs ``trawl crawl live`` of the site, then ``trawl crawl probe`` of
its hostile URLs (seeded into the probe's store), as real processes. A round is
exact when both runs:

* end by themselves (within ``--timeout``, 300 s) with exit 0;
* peak under 600 MB of RSS (VmHWM of the process, polled from /proc);
* report each hostile page once, as each command reports it (:data:`EXPECT`):
  one link record (live) or probe record with its verdict, error or flag, one
  log line where the command says one, each page asked once (a drip: twice,
  its one retry; the probe's redirect loop: its 11 hops);
* send no request out of scope (the site's log: ``example.org`` only).

    python bench/hostile_live.py [--rounds 20] [--seed 1] [--timeout 300]

Prints a line a round and a summary (rounds exact, max RSS, max wall) with the
machine's load (``uptime``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.probe import seed  # noqa: E402
from tests.servers.hostile_site import DOMAIN, EVIL, HOSTILE, HostileSite, hostile_pages  # noqa: E402

RSS_LIMIT_MB = 600
#: The trap guard's cap for the runs (pages of one pattern), and the depth: small, to end soon.
PATTERN_CAP = 8
DEPTH = 6
#: Seconds a page may take: the drip is cut here (once retried).
TIMEOUT = 3
BASE = f"http://{DOMAIN}"


@dataclass
class Run:
    """One command's run: exit, peak RSS, wall time, its log and what it stored."""

    code: int | None
    rss: float
    wall: float
    log: str
    asked: list[tuple[str, str]] = field(default_factory=list)


def watch(command: list[str], cwd: Path, timeout: float) -> tuple[int | None, float, float, str]:
    """Run ``command``; its exit (None: killed at the timeout), peak RSS (MB), wall time, output."""
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    started = time.monotonic()
    peak = 0.0
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=log, text=True)
        status = Path(f"/proc/{process.pid}/status")
        while process.poll() is None:
            if time.monotonic() - started > timeout:
                process.kill()
                process.wait()
                break
            try:
                for line in status.read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) / 1024)
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        wall = time.monotonic() - started
        log.seek(0)
        output = log.read()
    code = process.returncode if wall <= timeout else None
    return code, peak, wall, output


def settings(site: HostileSite, db: Path) -> list[str]:
    values = {
        "PROXY_LIST": site.url,
        "STORE_URI": f"sqlite:///{db}",
        "RATE_LIMITS_ENABLED": "False",
        "AUTOTHROTTLE_ENABLED": "False",
        "TRAWL_CACHE_DIR": "",
        "RETRY_BACKOFF_BASE": "0.1",
        "RETRY_BACKOFF_MAX": "0.5",
        "SOURCE_DOWNLOAD_TIMEOUT": json.dumps({"live": TIMEOUT, "probe": TIMEOUT}),
        "LIVE_PATTERN_CAP": str(PATTERN_CAP),
        "PROGRESS_INTERVAL": "0",
    }
    return [arg for name, value in values.items() for arg in ("-s", f"{name}={value}")]


def run_live(site: HostileSite, work: Path, timeout: float) -> Run:
    command = [sys.executable, "-m", "trawl.cli", "crawl", "live", "-a", f"domain={DOMAIN}"]
    command += ["-a", f"depth={DEPTH}", *settings(site, work / "live.db")]
    before = len(site.requests)
    code, rss, wall, log = watch(command, work, timeout)
    return Run(code, rss, wall, log, site.requests[before:])


def run_probe(site: HostileSite, work: Path, mix: list[str], timeout: float) -> Run:
    db = work / "probe.db"
    seed(db, [f"{BASE}/", *(f"{BASE}{HOSTILE[name]}" for name in mix)])
    command = [sys.executable, "-m", "trawl.cli", "crawl", "probe", "-a", f"domain={DOMAIN}"]
    command += [*settings(site, db)]
    before = len(site.requests)
    code, rss, wall, log = watch(command, work, timeout)
    return Run(code, rss, wall, log, site.requests[before:])


def rows(db: Path, table: str) -> dict[str, dict]:
    if not db.exists():
        return {}
    with sqlite3.connect(db) as con:
        con.row_factory = sqlite3.Row
        try:
            return {row["url"]: dict(row) for row in con.execute(f"SELECT * FROM {table}")}  # noqa: S608
        except sqlite3.OperationalError:
            return {}


def requests_of(run: Run) -> dict[str, int]:
    counts: dict[str, int] = {}
    for host, path in run.asked:
        if host == DOMAIN:
            counts[path] = counts.get(path, 0) + 1
    return counts


def lines_with(log: str, *marks: str) -> list[str]:
    return [line for line in log.splitlines() if all(mark in line for mark in marks)]


def check_live(mix: list[str], run: Run, db: Path) -> list[str]:
    """What is not as it should be in a live crawl of the mix (empty: exact)."""
    problems: list[str] = []
    found = rows(db, "link_records")
    asked = requests_of(run)
    listed = [line.split("live:   ", 1)[1] for line in lines_with(run.log, "[live] INFO: live:   ")]

    def row(path: str, status: int | None, verdict: str) -> None:
        got = found.get(f"{BASE}{path}")
        if got is None or (got["status"], got["verdict"]) != (status, verdict):
            problems.append(
                f"{path} stored as {got and (got['status'], got['verdict'])}, not {status} {verdict}"
            )

    def once(path: str, times: int = 1) -> None:
        if asked.get(path, 0) != times:
            problems.append(f"{path} asked {asked.get(path, 0)} times, not {times}")

    def said(count: int, *marks: str) -> None:
        got = len(lines_with(run.log, *marks))
        if got != count:
            problems.append(f"{got} lines with {' '.join(marks)!r}, not {count}")

    for name in mix:
        path = HOSTILE[name]
        if name == "bomb":
            row(path, None, "error")
            once(path)
            said(1, "WARNING", "bomb.html", "answer over the size limit")
        elif name in ("huge", "binary"):
            row(path, 200, "page")
            once(path)
        elif name == "drip":
            row(path, None, "error")
            once(path, 2)  # its one retry (bounds.SLOW_ANSWER_RETRIES)
            said(1, "[live] INFO: live: http://example.org/drip.html: answer still arriving")
        elif name in ("gen", "calendar"):
            pattern = "example.org/gen/{n}?" if name == "gen" else "example.org/calendar/{n}/{n}?"
            said(1, f"live: trap: {pattern} capped at {PATTERN_CAP} pages")
            prefix = path.rsplit("/", 2 if name == "calendar" else 1)[0] + "/"
            fetched = [p for p in asked if p.startswith(prefix)]
            if len(fetched) != PATTERN_CAP or any(asked[p] != 1 for p in fetched):
                problems.append(f"{name}: {len(fetched)} pages fetched, not {PATTERN_CAP} once each")
        elif name == "loop":
            row("/loop-a", 302, "redirect")
            row("/loop-b", 301, "redirect")
            once("/loop-a")
            once("/loop-b")
        elif name == "redir-ext":
            row(path, 302, "redirect")
            once(path)
            if listed.count(f"http://{EVIL}/stolen") != 1:
                problems.append(f"http://{EVIL}/stolen listed {listed.count(f'http://{EVIL}/stolen')} times")
        elif name == "redir-local":
            row(path, 302, "redirect")
            once(path)
            if sum(1 for url in listed if url.endswith("/secret")) != 1:  # the proxy's address: masked
                problems.append("the redirect to 127.0.0.1 not listed once among the out-of-scope URLs")
        elif name == "robots":
            once(path)
            said(1, "WARNING", "robots.txt over 500 KiB")
        elif name == "sitemaps":
            for each in ("/sitemap.xml", "/sitemap-b.xml"):
                row(each, 200, "page")
                once(each)
    if "robots" not in mix:
        once("/robots.txt")
    return problems


def check_probe(mix: list[str], run: Run, db: Path, port: int) -> list[str]:
    """What is not as it should be in a probe of the mix's URLs (empty: exact)."""
    problems: list[str] = []
    found = rows(db, "probe_records")
    asked = requests_of(run)
    if len(found) != len(mix) + 1:
        problems.append(f"{len(found)} probe records, not {len(mix) + 1}")

    def record(path: str, status: int | None, truncated: int | None, error: str | None) -> None:
        got = found.get(f"{BASE}{path}")
        want = (status, truncated, error)
        have = got and (got["status"], got["truncated"], got["error"])
        if have != want and not (
            error and have and have[2] and have[2].startswith(error) and have[:2] == want[:2]
        ):
            problems.append(f"probe {path}: {have}, not {want}")

    def once(path: str, times: int = 1) -> None:
        if asked.get(path, 0) != times:
            problems.append(f"probe asked {path} {asked.get(path, 0)} times, not {times}")

    record("/", 200, 0, None)
    for name in mix:
        path = HOSTILE[name]
        if name in ("bomb", "huge", "binary", "robots"):
            record(path, 200, 1, None)
            once(path)
        elif name == "drip":
            record(path, None, None, "answer still arriving after")
            once(path, 2)
        elif name in ("gen", "calendar", "sitemaps"):
            record(path, 200, 0, None)
            once(path)
        elif name == "loop":
            record(path, None, None, "too many redirects")
            hops = asked.get("/loop-a", 0) + asked.get("/loop-b", 0)
            if hops != 11:
                problems.append(f"probe: the redirect loop took {hops} requests, not 11")
        elif name == "redir-ext":
            record(path, 302, 0, f"redirect out of scope, not followed: http://{EVIL}/stolen")
            once(path)
        elif name == "redir-local":
            record(path, 302, 0, f"redirect out of scope, not followed: http://127.0.0.1:{port}/secret")
            once(path)
    total = len(lines_with(run.log, "[probe] INFO: probe: ", " URLs: "))
    if total != 1:
        problems.append(f"{total} probe tables, not 1")
    return problems


def one_round(number: int, mix: list[str], timeout: float, verbose: bool) -> tuple[bool, list[Run]]:
    work = Path(tempfile.mkdtemp(prefix="trawl-hostile-live-"))
    with HostileSite(traps=True) as site:
        site.pages.update(hostile_pages(mix, site.port, seed=number))
        live = run_live(site, work, timeout)
        probe = run_probe(site, work, mix, timeout)
        outside = sorted({f"{host}{path}" for host, path in site.requests if host != DOMAIN})
        port = site.port
    problems = []
    for name, run in (("live", live), ("probe", probe)):
        if run.code != 0:
            problems.append(
                f"{name} exit {run.code}" + (" (killed at the timeout)" if run.code is None else "")
            )
        if run.rss >= RSS_LIMIT_MB:
            problems.append(f"{name} peak RSS {run.rss:.0f} MB")
        if "Traceback" in run.log:
            problems.append(f"{name}: a traceback")
    problems += check_live(mix, live, work / "live.db")
    problems += check_probe(mix, probe, work / "probe.db", port)
    problems += [f"asked out of scope: {url}" for url in outside]
    exact = not problems
    figures = "; ".join(
        f"{name} exit {run.code} {run.rss:4.0f} MB {run.wall:5.1f} s"
        for name, run in (("live", live), ("probe", probe))
    )
    print(
        f"round {number + 1:2d}: {','.join(mix):<62} {figures}: {'exact' if exact else 'INEXACT'}", flush=True
    )
    for problem in problems:
        print(f"          {problem}")
    if verbose or not exact:
        for name, run in (("live", live), ("probe", probe)):
            for line in run.log.splitlines():
                if f"[{name}]" in line or "WARNING" in line or "ERROR" in line:
                    print(f"          {line[20:]}")
            if "Traceback" in run.log:  # all of it: what failed, where
                print("          " + run.log[run.log.index("Traceback") :].replace("\n", "\n          "))
    return exact, [live, probe]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a run may take")
    parser.add_argument("--mix", help="comma-separated hostile pages, every round: " + ",".join(HOSTILE))
    parser.add_argument("--verbose", action="store_true", help="print each run's trawl lines")
    options = parser.parse_args()
    rng = random.Random(options.seed)
    results: list[bool] = []
    runs: list[Run] = []
    for number in range(options.rounds):
        mix = options.mix.split(",") if options.mix else sorted(rng.sample(list(HOSTILE), rng.randint(3, 7)))
        exact, ran = one_round(number, mix, options.timeout, options.verbose)
        results.append(exact)
        runs += ran
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(
        f"exact: {sum(results)} of {len(results)} rounds; max peak RSS {max(r.rss for r in runs):.0f} MB"
        f" (limit {RSS_LIMIT_MB}); max wall {max(r.wall for r in runs):.1f} s; load: {load}"
    )
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
