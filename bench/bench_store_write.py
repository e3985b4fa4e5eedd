"""The SQLite store's write path alone, phase by phase, without a crawl.

Writes ``--urls`` distinct URLs in ``--batch``-row batches from two sources
into a fresh store file, the second source reporting ``--overlap`` of the
first's URLs (so half its batches merge known URLs, as in ``crawl all``), and
prints the CPU time of each phase of :meth:`SqliteStore._write`: staging
(from Arrow columns loaded into the bulk scratch file first, phase ``load``;
with ``--rows`` bound a row at a time by ``executemany``), the upsert,
reading known URLs back, putting the merged
values on the batch (polars), and the commit. All on this thread: the figures
are the writer thread's own cost, with no reactor competing for the GIL.

    python bench/bench_store_write.py [--urls N] [--batch N] [--overlap F] [--shuffle] [--rows] [--cache-mb N]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scrapy.settings import Settings  # noqa: E402

from trawl.pipeline.context import RunContext  # noqa: E402
from trawl.records.batches import UrlBatch  # noqa: E402
from trawl.stores.sqlite import SqliteStore  # noqa: E402
from trawl.stores.sqlite import bulk as bulk_module  # noqa: E402
from trawl.stores.sqlite import merge as merge_module  # noqa: E402
from trawl.stores.sqlite.bulk import BulkStage  # noqa: E402

DOMAIN = "example.com"


class _Stats:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get_stats(self) -> dict[str, Any]:
        return self.values

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count


def open_store(path: Path, source: str, cache_mb: int | None = None) -> SqliteStore:
    values: dict[str, Any] = {"SQLITE_SYNCHRONOUS": "NORMAL"}
    if cache_mb is not None:
        values["SQLITE_CACHE_MB"] = cache_mb
    crawler = SimpleNamespace(settings=Settings(values), stats=_Stats())
    context = RunContext(
        crawler=crawler,  # type: ignore[arg-type]
        spider=SimpleNamespace(name=source),  # type: ignore[arg-type]
        run_id=f"bench-{source}",
        plugins=None,  # type: ignore[arg-type]
        inputs={"target": SimpleNamespace(domain=DOMAIN)},
    )
    store = SqliteStore(f"sqlite:///{path}", context)
    store.open()
    return store


def batch(urls: list[str], source: str) -> UrlBatch:
    n = len(urls)
    return UrlBatch.from_columns(
        source=source,
        urls=urls,
        hosts=[DOMAIN] * n,
        first_seen=["20100101000000"] * n,
        last_seen=["20200101000000"] * n,
        captures=[2] * n,
        statuses=["200" if i % 3 else "200,404" for i in range(n)],
        mimes=["text/html"] * n,
    )


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(phases: dict[str, float], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            phases[name] += time.process_time() - started

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--urls", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--overlap", type=float, default=0.4)
    parser.add_argument("--shuffle", action="store_true", help="URLs in random order (as SURT order)")
    parser.add_argument("--rows", action="store_true", help="stage with executemany, not through Arrow")
    parser.add_argument("--cache-mb", type=int, default=None, help="SQLITE_CACHE_MB (default: the store's)")
    args = parser.parse_args()
    phases: dict[str, float] = defaultdict(float)
    for name in ("stage", "upsert", "read_known", "with_merged"):
        setattr(merge_module, name, timed(phases, name, getattr(merge_module, name)))
    BulkStage.put = timed(phases, "load", BulkStage.put)  # type: ignore[method-assign]
    if args.rows:
        bulk_module.available = lambda path: False
    urls = [f"https://{DOMAIN}/path/{i}?q={i % 97}" for i in range(args.urls)]
    if args.shuffle:
        random.Random(7).shuffle(urls)
    second = urls[: int(args.urls * args.overlap)] + [
        u + "&other" for u in urls[int(args.urls * args.overlap) :]
    ]
    batches = {
        source: [batch(rows[start : start + args.batch], source) for start in range(0, len(rows), args.batch)]
        for source, rows in (("wayback", urls), ("otx", second))
    }
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        total = time.process_time()
        wall = time.perf_counter()
        for source, made in batches.items():
            store = open_store(path, source, args.cache_mb)
            for one in made:
                store.write_batch(one)
            store.close("finished")
        total = time.process_time() - total
        wall = time.perf_counter() - wall
    written = 2 * args.urls
    how = "executemany" if args.rows else "Arrow"
    print(
        f"{written:,} rows in {args.batch:,}-row batches{', shuffled' if args.shuffle else ''},"
        f" staged by {how}:"
        f" {total:.2f} s CPU, {wall:.2f} s wall, peak RSS {peak_rss_mb():.0f} MB ({load()})"
    )
    for name, seconds in phases.items():
        print(f"  {name:<12} {seconds:6.2f} s  {seconds / written * 1e6:5.1f} µs a row")
    rest = total - sum(phases.values())
    print(f"  {'the rest':<12} {rest:6.2f} s  (transaction, ledger, commit, thread hand-over)")


if __name__ == "__main__":
    main()
