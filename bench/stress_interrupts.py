"""Interrupted runs, then the same command again: does the store end exact?

Each round starts ``trawl crawl wayback -s JOBDIR=...`` against a local fake CDX
server (slow pages; in every other round one page answers ``429 Retry-After:
900`` first, so the signal often lands during a pause), sends a random signal
(SIGINT, two SIGINTs, SIGTERM or SIGKILL) 0-5 s after the spider opened, then runs the
same command with the same ``JOBDIR`` until it completes. A round is exact when
the store then holds exactly the expected URLs with their true capture counts,
first and last seen and source, under one run (the first one, resumed); it also
reports the exit status of the interrupted process and how long it took to exit.

    python bench/stress_interrupts.py [--rounds 20] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.resume import dataset, expected_rows  # noqa: E402
from tests.interrupts import Trawl  # noqa: E402
from tests.servers.ia_cdx import FakeCdxServer  # noqa: E402

LINES_PER_PAGE = 50
KINDS = ("SIGINT", "SIGINTx2", "SIGTERM", "SIGKILL")
SIGNAL_OF = {
    "SIGINT": signal.SIGINT,
    "SIGINTx2": signal.SIGINT,
    "SIGTERM": signal.SIGTERM,
    "SIGKILL": signal.SIGKILL,
}


def args_for(base_url: str, jobdir: Path) -> list[str]:
    settings = {
        "WAYBACK_BASE_URL": base_url,
        "JOBDIR": jobdir,
        "STORE_URI": "sqlite:///trawl.db",
        "RATE_LIMITS": '{"wayback": "1000/1s"}',
        "SOURCE_CONCURRENCY": '{"wayback": 3}',
        "AUTOTHROTTLE_ENABLED": False,
        "BATCH_COALESCE_ROWS": 0,
        "PROGRESS_INTERVAL": 0,
        "TRAWL_LOG_ALL": True,
    }
    args = ["crawl", "wayback", "-a", "domain=example.com", "-a", "filters=false"]
    for name, value in settings.items():
        args += ["-s", f"{name}={value}"]
    return args


def stored(db: Path) -> tuple[dict[str, tuple], int]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT url, captures, first_seen, last_seen, sources FROM urls").fetchall()
        runs = con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    finally:
        con.close()
    found = {url: (n, first, last, "wayback" in sources) for url, n, first, last, sources in rows}
    return found, runs


def one_round(number: int, rng: random.Random, caps: list, expected: dict) -> bool:
    kind = rng.choice(KINDS)
    delay = rng.uniform(0.0, 5.0)
    paused = number % 2 == 1
    work = Path(tempfile.mkdtemp(prefix="trawl-stress-"))
    jobdir = work / "job"
    fail = {rng.randrange(1, 20): [(429, b"slow down", {"Retry-After": "900"})]} if paused else {}
    with FakeCdxServer(caps, lines_per_page=LINES_PER_PAGE, latency=0.3, fail_pages=fail) as srv:
        args = args_for(srv.base_url, jobdir)
        with Trawl(work, *args) as trawl:
            trawl.wait_for("Spider opened")  # the crawl has started; then a random moment
            try:
                trawl.proc.wait(timeout=delay)  # a random moment: the delay is the experiment
            except Exception:  # noqa: BLE001 - still running: signal it
                trawl.send(SIGNAL_OF[kind])
                if kind == "SIGINTx2":  # once the first is handled: two at once arrive as one
                    try:
                        trawl.wait_for("shutting down gracefully", timeout=10)
                        trawl.send(signal.SIGINT)
                    except AssertionError:  # it ended first
                        pass
            code, took = trawl.finish(timeout=120)
        state_file = jobdir / "trawl-wayback.json"
        first_finished = state_file.exists() and bool(json.loads(state_file.read_text()).get("finished"))
        srv.fail_pages = {}
        with Trawl(work, *args) as rerun:
            again, _ = rerun.finish(timeout=600)
    db = work / "trawl.db"
    rows, runs = stored(db) if db.exists() else ({}, 0)
    want = {url: (*values, True) for url, values in expected.items()}
    # A crawl that completed before (or as) its signal came leaves a finished JOBDIR: the same
    # command again is a new run by design (trawl.common.jobdir), and must change nothing in the rows.
    exact = again == 0 and rows == want and runs == (2 if first_finished else 1)
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    print(
        f"round {number + 1:2d}: {kind:<8} at +{delay:3.1f} s{' (429 page)' if paused else '':<11} "
        f"exit {code} in {took:5.1f} s; rerun exit {again}; {len(rows)}/{len(want)} URLs, {runs} run(s), "
        f"JOBDIR finished={state.get('finished')}: {'exact' if exact else 'INEXACT'}",
        flush=True,
    )
    return exact


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    caps = dataset()
    expected = expected_rows(caps)
    results = [one_round(number, rng, caps, expected) for number in range(options.rounds)]
    print(f"exact: {sum(results)}, inexact: {len(results) - sum(results)} (of {len(results)} rounds)")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
