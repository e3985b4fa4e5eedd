"""How long each read command takes to answer on a small store, beside Python's own start.

A read command's whole run is its start-up: importing what it needs, reading the
settings, opening a small store. The target is 0.5 s each (median of 5). The store is
made once in a scratch folder as the tests make theirs: a wayback crawl and a
``responses`` crawl (mined endpoints and parameters) against the fake archive of
``tests/test_mining_pipeline.py``. It holds no crates.io data, so ``crates top``
answers with its one "holds no crates.io data" line (exit 1) after reading the store, and
no Redis is named, so ``queue`` answers with its one "TRAWL_REDIS_URL is not set" line (exit 2).

Each command runs as ``python -m trawl.cli ...`` in that folder, one warm-up then
``--runs`` timed runs: the median wall (min, max) and the median CPU seconds (user + system),
with the load average beside each row, and the CPU as a multiple of ``python -c 'import scrapy'``
(what any Scrapy command pays, measured in the same run; ``python -c pass`` is the other floor).
On a loaded machine compare CPU, not wall: at load 8 on 2 cores a run waits for a core as long
as it runs. ``--before REV`` times that revision's trawl (``git archive REV trawl``) on the same
store, each command right before the checkout's, for a before and after in one run;
``--pythonpath DIR`` times another copy of trawl instead of the checkout's. The runs use compiled
bytecode, as an installed trawl does (``PYTHONDONTWRITEBYTECODE`` is dropped: the warm-up writes it).

    python bench/bench_commands.py [--runs 5] [--before REV] [--pythonpath DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_mining_pipeline import archive, crawl_responses, store_urls  # noqa: E402

#: The read commands, as a user asks them of a store holding example.com.
COMMANDS: dict[str, list[str]] = {
    "version": ["version"],
    "list": ["list"],
    "search --help": ["search", "--help"],
    "search": ["search", "*"],
    "report": ["report", "new", "--domain", "example.com"],
    "endpoints": ["endpoints", "-a", "domain=example.com"],
    "params": ["params", "-a", "domain=example.com"],
    "responses list": ["responses", "list", "-a", "domain=example.com"],
    "crates top": ["crates", "top"],
    "plugins": ["plugins"],
    "queue": ["queue"],
}


def seed(folder: Path) -> None:
    """A store with example.com's URLs, its archived responses and what was mined from them."""
    with archive() as server:
        store_urls(folder, server)
        result = crawl_responses(folder, server)
        if result.returncode != 0:
            raise SystemExit(f"seeding the store failed: {result.stderr[-2000:]}")


def timed(argv: list[str], cwd: Path, env: dict[str, str], runs: int) -> tuple[list[float], float, int]:
    """Wall seconds of ``runs`` runs after one warm-up, their median CPU seconds, the last exit status.

    CPU (user + system of the child) is the figure to compare on a busy machine: at load 8 on
    2 cores a run waits for a core as long as it runs, and its wall doubles.
    """
    walls: list[float] = []
    cpus: list[float] = []
    status = 0
    for i in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if i:
            walls.append(wall)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        status = done.returncode
    return walls, statistics.median(cpus), status


def row(name: str, walls: list[float], cpu: float, status: int, floor: float) -> str:
    wall = statistics.median(walls)
    load = os.getloadavg()[0]
    return (
        f"{name:<22} {wall:7.3f} {min(walls):6.3f} {max(walls):6.3f} {cpu:7.3f} {cpu / floor:6.2f}x"
        f"  {status:>4}  {load:5.2f}"
    )


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def extracted(rev: str, stack: ExitStack) -> Path:
    """``rev``'s ``trawl`` package in a scratch folder, to put on ``PYTHONPATH``."""
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench_commands_rev_")))
    archive = subprocess.run(["git", "archive", rev, "trawl"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", metavar="REV", help="also time this revision's trawl, command by command")
    parser.add_argument("--pythonpath", help="time the trawl in this folder instead of the checkout's")
    opts = parser.parse_args()
    # The store the commands read: $TRAWL_STORE_URI is STORE_URI's default (trawl.stores.location).
    env = dict(os.environ, TRAWL_STORE_URI="sqlite:///trawl.db")
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    env.pop("PYTHONPATH", None)
    # An installed trawl runs from its compiled bytecode: the warm-up run writes it, for the
    # checkout and for --before's copy alike. With PYTHONDONTWRITEBYTECODE set, every run
    # compiled each module changed since its .pyc again (all of them in --before's fresh copy).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench_commands_")))
        seed(folder)
        copies: dict[str, dict[str, str]] = {}
        if opts.before:
            copies[f"@{opts.before}"] = dict(env, PYTHONPATH=str(extracted(opts.before, stack)))
        after = dict(env, PYTHONPATH=str(Path(opts.pythonpath).resolve())) if opts.pythonpath else env
        copies["" if not opts.before else "@now"] = after
        size = (folder / "trawl.db").stat().st_size
        print(f"store: {size / 1e6:.2f} MB; trawl from {opts.pythonpath or ROOT}")
        print(f"load before: {uptime()}")
        print(
            f"{'command':<22} {'median':>7} {'min':>6} {'max':>6} {'cpu':>7} {'/scrapy':>7}  exit  load"
            f"  (s, {opts.runs} runs)"
        )
        floors = {"python -c pass": ["-c", "pass"], "import scrapy": ["-c", "import scrapy"]}
        measured = {name: timed([sys.executable, *a], folder, env, opts.runs) for name, a in floors.items()}
        floor = measured["import scrapy"][1]
        for name, figures in measured.items():
            print(row(name, *figures, floor))
        for name, args in COMMANDS.items():
            for label, copy_env in copies.items():
                figures = timed([sys.executable, "-m", "trawl.cli", *args], folder, copy_env, opts.runs)
                print(row(f"{name} {label}".strip(), *figures, floor))
        print(f"load after: {uptime()}")


if __name__ == "__main__":
    main()
