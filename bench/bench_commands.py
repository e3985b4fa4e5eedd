"""How long each read command takes to answer on a small store, beside Python's own start.

A read command's whole run is its start-up: importing what it needs, reading the
settings, opening a small store. The target is 0.5 s each (median of 5). The store is
made once in a scratch folder as the tests make theirs: a wayback crawl and a
``responses`` crawl (mined endpoints and parameters) against the fake archive of
``tests/test_mining_pipeline.py``. It holds no crates.io data, so ``crates top``
answers with its one "holds no crates.io data" line (exit 1) after reading the store.

Each command runs as ``python -m trawl.cli ...`` in that folder, one warm-up then
``--runs`` timed runs: the median wall (min, max) and the median CPU seconds, beside
``python -c pass`` (the floor) and ``python -c 'import scrapy'`` (what any Scrapy
command pays), with ``uptime`` before and after. ``--pythonpath DIR`` times another
copy of trawl (``git archive REV trawl | tar -x -C DIR``) on the same store, for a
before and after.

    python bench/bench_commands.py [--runs 5] [--pythonpath DIR]
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


def row(name: str, walls: list[float], cpu: float, status: int) -> str:
    wall = statistics.median(walls)
    return f"{name:<16} {wall:7.3f} {min(walls):6.3f} {max(walls):6.3f} {cpu:7.3f}  {status:>4}"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pythonpath", help="time the trawl in this folder instead of the checkout's")
    opts = parser.parse_args()
    env = dict(os.environ, STORE_URI="sqlite:///trawl.db")
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    if opts.pythonpath:
        env["PYTHONPATH"] = str(Path(opts.pythonpath).resolve())
    with tempfile.TemporaryDirectory(prefix="bench_commands_") as scratch:
        folder = Path(scratch)
        seed(folder)
        size = (folder / "trawl.db").stat().st_size
        print(f"store: {size / 1e6:.2f} MB; trawl from {opts.pythonpath or ROOT}")
        print(f"load before: {uptime()}")
        print(f"{'command':<16} {'median':>7} {'min':>6} {'max':>6} {'cpu':>7}  exit  (s, {opts.runs} runs)")
        floors = {"python -c pass": ["-c", "pass"], "import scrapy": ["-c", "import scrapy"]}
        for name, args in floors.items():
            print(row(name, *timed([sys.executable, *args], folder, env, opts.runs)))
        for name, args in COMMANDS.items():
            print(row(name, *timed([sys.executable, "-m", "trawl.cli", *args], folder, env, opts.runs)))
        print(f"load after: {uptime()}")


if __name__ == "__main__":
    main()
