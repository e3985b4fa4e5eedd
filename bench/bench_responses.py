"""Files/s, MB/s and peak RSS of ``trawl crawl responses`` against a local replay server.

N archived files (default 10,000; ``--files`` scales down) of mixed sizes (70%
1 KiB, 25% 16 KiB, 5% 128 KiB), 30% of them sharing a digest with an earlier
file (the same bytes under another URL), one capture each, served by
:class:`tests.servers.ia_replay.FakeReplayServer` (CDX and ``id_`` replay on
127.0.0.1). Bodies are made on demand from the URL, so the server holds no
copy of them. First a wayback crawl stores the URLs, then the timed run:
``python -m trawl.cli crawl responses`` into a fresh ``FILES_STORE``, gates
off, ``SOURCE_CONCURRENCY`` 16; its peak RSS is read from ``/proc``
(:func:`bench.bench_wayback.watch_peak_rss`). Reported: files written, the
replays the server logged (each digest once), the crawl's time (its last line)
and the process's, archived files/s, MB/s stored, peak RSS.

Mining: the crawl mines what it stores (its ``responses/mined``
stats are reported); then the files written are mined again outside the crawl by
the same worker function (:func:`trawl.mining.work.mine_files`) in a process pool
of 1 and of 2 processes, batches of ``MINING_BATCH_FILES`` (32): MB/s mined,
per core, and the pool's speedup. ``--mining-only`` skips the crawl and mines N
generated files of the same sizes (the quick way to measure the readers).

    python bench/bench_responses.py [--files N] [--concurrency N] [--mining-only]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_wayback import watch_peak_rss  # noqa: E402
from tests.servers.ia_cdx import make_capture  # noqa: E402
from tests.servers.ia_replay import FakeReplayServer, Memento, content_digest  # noqa: E402

EXTRA = [a for s in os.environ.get("BENCH_SET", "").split() for a in ("-s", s)]
SIZES = ((0.70, 1 << 10), (0.25, 16 << 10), (0.05, 128 << 10))


def body_for(seed: int, size: int) -> bytes:
    """``size`` bytes of text that differ per seed (a JavaScript-looking line, repeated)."""
    line = f"var endpoint{seed} = '/api/v1/item/{seed}'; // {hashlib.sha1(str(seed).encode()).hexdigest()}\n"
    return (line * (size // len(line) + 1)).encode()[:size]


class LazyMementos(dict):  # type: ignore[type-arg]
    """(url, timestamp) -> Memento, the body built when asked for."""

    def __init__(self, plan: dict[str, tuple[int, int]]) -> None:
        super().__init__()
        self.plan = plan

    def get(self, key: tuple[str, str], default: object = None) -> object:  # type: ignore[override]
        found = self.plan.get(key[0])
        if found is None:
            return default
        return Memento(200, body_for(*found), "application/javascript")


def build(count: int) -> tuple[FakeReplayServer, int, int]:
    """The server, the distinct digests and their bytes in total."""
    plan: dict[str, tuple[int, int]] = {}
    captures = []
    seen: dict[int, int] = {}
    unique_bytes = 0
    for number in range(count):
        share = number % 10 < 3 and number >= 10  # 30%: the bytes of an earlier file
        if share:
            seed, size = plan[f"https://example.com/f/{number - 7}.js"]
        else:
            pick = (number * 7919 % 100) / 100
            size = SIZES[0][1] if pick < 0.70 else SIZES[1][1] if pick < 0.95 else SIZES[2][1]
            seed = number
        url = f"https://example.com/f/{number}.js"
        plan[url] = (seed, size)
        body = body_for(seed, size)
        if seed not in seen:
            seen[seed] = len(body)
            unique_bytes += len(body)
        captures.append(
            make_capture(
                url, "20230101000000", "application/javascript", "200", content_digest(body), str(size)
            )
        )
    server = FakeReplayServer(captures)
    server.mementos = LazyMementos(plan)  # type: ignore[assignment]
    return server, len(seen), unique_bytes


def mining_figures(root: Path, paths: list[str], batch: int = 32) -> dict[str, float]:
    """Mine ``paths`` (under ``root``) in a pool of 1 process, then of 2: MB/s, per core, speedup."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    from trawl.mining.work import DEFAULT_EXTRACTOR, mine_files

    jobs = [(str(n), p, f"https://example.com/{p}", "application/javascript") for n, p in enumerate(paths)]
    chunks = [jobs[i : i + batch] for i in range(0, len(jobs), batch)]
    size = sum((root / p).stat().st_size for p in paths)
    work = partial(mine_files, root=str(root), secrets=False, dotted=DEFAULT_EXTRACTOR, max_bytes=100 << 20)
    figures: dict[str, float] = {"mined_files": len(paths), "mined_mb": round(size / 1e6, 2)}
    seconds = {}
    for processes in (1, 2):
        context = multiprocessing.get_context("forkserver")
        with ProcessPoolExecutor(processes, mp_context=context) as pool:
            list(pool.map(work, [[]] * processes * 2))  # the workers started and the reader imported
            started = time.perf_counter()
            endpoints = sum(len(f.endpoints) for result in pool.map(work, chunks) for _, f, _ in result if f)
            seconds[processes] = time.perf_counter() - started
        figures[f"mined_mb_per_second_{processes}_process"] = round(size / seconds[processes] / 1e6, 2)
    figures["mined_mb_per_second_per_core"] = round(figures["mined_mb_per_second_2_process"] / 2, 2)
    figures["pool_speedup_2_vs_1"] = round(seconds[1] / seconds[2], 2)
    figures["endpoints_found"] = endpoints
    return figures


def mining_only(count: int) -> None:
    """``--mining-only``: ``count`` generated files of the bench's sizes, mined by the pool."""
    with tempfile.TemporaryDirectory(prefix="bench-mining-") as tmp:
        root = Path(tmp)
        paths = []
        for number in range(count):
            pick = (number * 7919 % 100) / 100
            size = SIZES[0][1] if pick < 0.70 else SIZES[1][1] if pick < 0.95 else SIZES[2][1]
            path = f"example.com/{number}.js"
            (root / "example.com").mkdir(exist_ok=True)
            (root / path).write_bytes(body_for(number, size))
            paths.append(path)
        print(json.dumps(mining_figures(root, paths), indent=2))


def crawl_mining(log: str) -> dict[str, int]:
    """What the crawl's mining line says: ``mined N files (B bytes; ...): E endpoints``."""
    found = re.search(r"mined ([\d,]+) files? \(([\d,]+) bytes;[^)]*\): ([\d,]+) endpoint", log)
    values = [int(v.replace(",", "")) for v in found.groups()] if found else [0, 0, 0]
    return dict(zip(("crawl_mined_files", "crawl_mined_bytes", "crawl_endpoints"), values, strict=True))


def trawl(workdir: Path, *args: str) -> subprocess.Popen:
    """A trawl command; its log to ``log.txt`` (a pipe nobody reads while it runs would fill and stall it)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), TRAWL_STORE_URI="sqlite:///trawl.db")
    log = (workdir / "log.txt").open("w")
    return subprocess.Popen(
        [sys.executable, "-m", "trawl.cli", *args],
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000, help="archived files (default 10000)")
    parser.add_argument("--concurrency", type=int, default=16, help="SOURCE_CONCURRENCY of the run")
    parser.add_argument("--mining-only", action="store_true", help="no crawl: mine N generated files")
    opts = parser.parse_args()
    if opts.mining_only:
        mining_only(opts.files)
        return
    server, digests, unique_bytes = build(opts.files)
    with tempfile.TemporaryDirectory(prefix="bench-responses-") as tmp, server:
        workdir = Path(tmp)
        common = ["-s", f"WAYBACK_BASE_URL={server.base_url}", "-s", "RATE_LIMITS_ENABLED=False"]
        urls = trawl(workdir, "crawl", "wayback", "-a", "domain=example.com", "-a", "filters=false", *common)
        urls.wait()
        err = (workdir / "log.txt").read_text()
        if urls.returncode:
            sys.exit(f"the wayback crawl failed: {err[-2000:]}")
        server.replays.clear()
        started = time.perf_counter()
        crawl = trawl(
            workdir,
            "crawl",
            "responses",
            "-a",
            "domain=example.com",
            *common,
            "-s",
            f'SOURCE_CONCURRENCY={{"responses": {opts.concurrency}}}',
            "-s",
            "AUTOTHROTTLE_ENABLED=False",
            *EXTRA,
            "-s",
            f"FILES_STORE={workdir / 'files'}",
        )
        peak = watch_peak_rss(crawl)
        crawl.wait()
        err = (workdir / "log.txt").read_text()
        elapsed = time.perf_counter() - started
        if os.environ.get("BENCH_LOG"):
            Path(os.environ["BENCH_LOG"]).write_text(err)
        if crawl.returncode:
            sys.exit(f"the responses crawl failed: {err[-2000:]}")
        # The crawl's own time, from its last line ("complete (finished) in 4.4 s"): the process
        # also spends seconds starting Python and Scrapy and closing.
        found = re.search(r"responses: complete \(finished\) in ([0-9.]+) s", err)
        crawl_seconds = float(found.group(1)) if found else elapsed
        written = [p for p in (workdir / "files").rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in written)
        replays = server.downloads()
        served = sum(server.mementos.plan[url][1] for _, url in replays)  # type: ignore[attr-defined]
        mining = mining_figures(
            workdir / "files", [p.relative_to(workdir / "files").as_posix() for p in written]
        )
    report = {
        "files_archived": opts.files,
        "distinct_digests": digests,
        "files_written": len(written),
        "replay_requests": len(replays),
        "bytes_written": size,
        "process_seconds": round(elapsed, 2),
        "crawl_seconds": crawl_seconds,
        "files_per_second": round(opts.files / crawl_seconds, 1),
        "stored_mb_per_second": round(size / crawl_seconds / 1e6, 2),
        "served_mb_per_second": round(served / crawl_seconds / 1e6, 2),
        "peak_rss_mb": round(peak, 1),
        **crawl_mining(err),
        **mining,
    }
    assert len(written) == digests == len(replays), report
    assert size == unique_bytes, report
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
