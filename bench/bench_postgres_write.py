"""The PostgreSQL store's write path alone, phase by phase, without a crawl.

The data of ``bench_store_write.py`` (the SQLite store's): ``--urls`` distinct
URLs in ``--batch``-row batches from two sources, the second reporting
``--overlap`` of the first's URLs (its batches merge known URLs, as in
``crawl all``). Prints rows merged a second, and the wall time of each phase
of :meth:`PostgresStore._write_once`: the CSV polars makes (``to_csv``), the
``COPY`` into the staging table (``stage``, which includes the CSV), the
merge statement (``merge``: the server's ``INSERT ... ON CONFLICT`` and the
merged rows read back), putting them on the batch (``with_merged``), and the
rest (the transaction, the ledger, the commit). Wall time, not CPU: most of a
batch is spent in the server, another process.

Then ``--writers`` stores write the same data at once (each source's batches
split between them, as workers of one run would), on threads with their own
connections: rows merged a second when writers run in parallel.

A real server: ``--uri postgresql://...`` (a database trawl may fill), or by
default a throw-away PostgreSQL 15 started as the tests start it.

    python bench/bench_postgres_write.py [--urls N] [--batch N] [--overlap F] [--writers N] [--uri URI]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scrapy.settings import Settings  # noqa: E402

from bench.bench_store_write import DOMAIN, _Stats, batch  # noqa: E402
from trawl.pipeline.context import RunContext  # noqa: E402
from trawl.records.batches import UrlBatch  # noqa: E402
from trawl.stores.postgresql import PostgresStore  # noqa: E402
from trawl.stores.postgresql import merge as merge_module  # noqa: E402

PHASES = ("to_csv", "stage", "merge", "with_merged")


def open_store(uri: str, source: str, run_id: str, settings: dict[str, Any]) -> PostgresStore:
    crawler = SimpleNamespace(settings=Settings(settings), stats=_Stats())
    context = RunContext(
        crawler=crawler,  # type: ignore[arg-type]
        spider=SimpleNamespace(name=source),  # type: ignore[arg-type]
        run_id=run_id,
        plugins=None,  # type: ignore[arg-type]
        inputs={"target": SimpleNamespace(domain=DOMAIN)},
    )
    store = PostgresStore(uri, context)
    store.open()
    return store


def timed(phases: dict[str, float], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args)
        finally:
            phases[name] += time.perf_counter() - started

    return wrapper


def make_batches(urls: int, size: int, overlap: float) -> dict[str, list[UrlBatch]]:
    first = [f"https://{DOMAIN}/path/{i}?q={i % 97}" for i in range(urls)]
    cut = int(urls * overlap)
    second = first[:cut] + [u + "&other" for u in first[cut:]]
    return {
        source: [batch(rows[start : start + size], source) for start in range(0, len(rows), size)]
        for source, rows in (("wayback", first), ("otx", second))
    }


def fresh_database(uri: str) -> str:
    """A new database on the server of ``uri``: every measurement starts from an empty store."""
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(uri, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    return uri.rsplit("/", 1)[0] + "/" + name


def sequential(uri: str, args: argparse.Namespace, settings: dict[str, Any]) -> None:
    phases: dict[str, float] = defaultdict(float)
    originals = {name: getattr(merge_module, name) for name in PHASES}
    for name in PHASES:
        setattr(merge_module, name, timed(phases, name, originals[name]))
    batches = make_batches(args.urls, args.batch, args.overlap)
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        for source, made in batches.items():
            store = open_store(uri, source, f"bench-{source}", settings)
            for one in made:
                store.write_batch(one)
            store.close("finished")
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        for name, function in originals.items():
            setattr(merge_module, name, function)
    written = 2 * args.urls
    print(
        f"one writer: {written:,} rows in {args.batch:,}-row batches: {wall:.2f} s wall,"
        f" {cpu:.2f} s CPU here, {written / wall:,.0f} rows/s merged"
    )
    phases["stage"] -= phases["to_csv"]  # stage() calls to_csv(): the COPY alone
    for name in PHASES:
        print(f"  {name:<12} {phases[name]:6.2f} s  {phases[name] / written * 1e6:5.1f} µs a row")
    rest = wall - sum(phases.values())
    print(f"  {'the rest':<12} {rest:6.2f} s  (transaction, ledger, commit, thread hand-over)")


def parallel(uri: str, args: argparse.Namespace, settings: dict[str, Any]) -> None:
    """``--writers`` stores per source, all writing at once (the batches dealt out round-robin)."""
    batches = make_batches(args.urls, args.batch, args.overlap)
    work: list[tuple[str, list[UrlBatch]]] = []
    for source, made in batches.items():
        for n in range(args.writers):
            work.append((source, made[n :: args.writers]))
    stores = [open_store(uri, source, f"bench-{source}", settings) for source, _ in work]
    start = threading.Barrier(len(work) + 1)

    def write(index: int) -> None:
        start.wait()
        for one in work[index][1]:
            stores[index].write_batch(one)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(work))]
    for thread in threads:
        thread.start()
    start.wait()
    wall = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - wall
    for store in stores:
        store.close("finished")
    written = 2 * args.urls
    print(f"{len(work)} writers at once ({args.writers} per source): {written:,} rows in {wall:.2f} s wall,"
          f" {written / wall:,.0f} rows/s merged")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--urls", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--overlap", type=float, default=0.4)
    parser.add_argument("--writers", type=int, default=2, help="stores per source in the parallel run")
    parser.add_argument("--uri", default="", help="a server to use (default: start one)")
    parser.add_argument("--synchronous-commit", default="on", help="POSTGRES_SYNCHRONOUS_COMMIT")
    args = parser.parse_args()
    settings = {"POSTGRES_SYNCHRONOUS_COMMIT": args.synchronous_commit}
    with ExitStack() as stack:
        base = args.uri
        if not base:
            from tests.servers.postgres_server import PostgresServer

            server = stack.enter_context(PostgresServer())
            base = server.uri("postgres")
            print(f"PostgreSQL 15 started in {server.folder} (fsync=off: a test server)")
        sequential(fresh_database(base), args, settings)
        parallel(fresh_database(base), args, settings)


if __name__ == "__main__":
    main()
