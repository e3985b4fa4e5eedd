# ruff: noqa: E501
"""``trawl crawl probe`` at scale: requests a second and peak RSS, and a 1,000,000-URL store streamed.

    PYTHONPATH=. python bench/bench_probe.py                 # 100,000 URLs, then the 1M store
    PYTHONPATH=. python bench/bench_probe.py --urls 20000 --store-urls 1000000

1. ``--urls`` URLs on ``--hosts`` host names (``hN.bench.example.com``, resolved to
   127.0.0.1 by bench/probe_resolver.py), one asyncio server in its own process
   answering every request after ``--delay`` seconds with a 1 KB page. The probe
   runs with its defaults (gate, AutoThrottle, 2 per host, 32 in all) and
   ``-a all=true``: requests a second, and the crawl's peak RSS.
2. A store of ``--store-urls`` URLs, each its own path pattern (the picker's worst
   case: one 64-bit hash kept per URL), probed with ``-a limit=--store-limit``: the
   selection streams the store while requests go out; peak RSS of that crawl, and
   of the selection alone read to its end (both passes of ``all=true``, 2M URLs
   through the picker) in a process of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scrapy.settings import Settings  # noqa: E402

from trawl.pipeline.context import RunContext  # noqa: E402
from trawl.records.batches import UrlBatch  # noqa: E402
from trawl.stores.sqlite import SqliteStore  # noqa: E402

PAGE = (
    b"<html><head><title>bench</title></head><body>" + b"<p>some words of a page</p>" * 36 + b"</body></html>"
)


def serve(port_queue: multiprocessing.Queue, delay: float) -> None:
    """A keep-alive HTTP/1.1 server answering every GET after ``delay`` seconds."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if not head:
                    return
                await asyncio.sleep(delay)
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nServer: bench\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(PAGE), PAGE)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        port_queue.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def seed(db: Path, urls_of: object, total: int, chunk: int = 100_000) -> None:
    stats = SimpleNamespace(values={}, get_stats=dict, inc_value=lambda *a, **k: None)
    crawler = SimpleNamespace(settings=Settings({}), stats=stats)
    context = RunContext(crawler=crawler, spider=SimpleNamespace(name="wayback"), run_id="seed", plugins=None)  # type: ignore[arg-type]
    store = SqliteStore(f"sqlite:///{db}", context)
    store.open()
    for start in range(0, total, chunk):
        urls = [urls_of(i) for i in range(start, min(total, start + chunk))]  # type: ignore[operator]
        hosts = [u.split("/")[2].split(":")[0] for u in urls]
        n = len(urls)
        none: list[str | None] = [None] * n
        store.write_batch(
            UrlBatch.from_columns(
                "wayback",
                urls,
                hosts,
                none,
                none,
                [1] * n,
                ["200"] * n,
                [""] * n,
                page=f"seed-{start}",
                page_rows=n,
            )  # fmt: skip
        )
    store.close("finished")


def crawl(workdir: Path, *args: str) -> tuple[float, float, str]:
    """(seconds, peak RSS in MB, stderr) of one ``trawl crawl probe`` in its own process."""
    command = [sys.executable, "-c", _MEASURED, "crawl", "probe", "-s", "STORE_URI=sqlite:///trawl.db",
               "-s", "DNS_RESOLVER=bench.probe_resolver.LoopbackResolver", "-s", "LOG_LEVEL=INFO", *args]  # fmt: skip
    env = dict(
        os.environ,
        SCRAPY_SETTINGS_MODULE="trawl.settings",
        PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}",
    )
    started = time.monotonic()
    proc = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    rss = next(
        (float(line.split()[1]) for line in proc.stdout.splitlines() if line.startswith("PEAK_RSS_MB")), 0.0
    )
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
    return seconds, rss, proc.stderr


#: Runs Scrapy's command line, then prints this process's peak RSS.
_MEASURED = """
import resource, sys, atexit
atexit.register(lambda: print("PEAK_RSS_MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
from trawl.cli import main
sys.argv = ["trawl", *sys.argv[1:]]
main()
"""

#: Reads the whole selection (both passes of all=true) as the probe's start() does, without requests.
_SELECTION = """
import resource, sys, time
from scrapy.settings import Settings
from trawl.pipeline.manager import plugin_manager_from_settings
from trawl.sources.probe.spider import ProbeSpider
from trawl.sources.selection import open_reader
settings = Settings({"STORE_URI": "sqlite:///trawl.db"})
spider = ProbeSpider.__new__(ProbeSpider)
spider.configure(settings, {"domain": "bench.example.com", "all": "true"})
started = time.monotonic()
with open_reader(spider.uri, settings, plugin_manager_from_settings(settings)) as searcher:
    count = sum(1 for _ in spider._selected(searcher))
print("SELECTED", count, round(time.monotonic() - started, 1))
print("PEAK_RSS_MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def _word(i: int) -> str:
    """``i`` in letters (a path without digits: every URL its own pattern)."""
    out = ""
    while True:
        out = chr(97 + i % 26) + out
        i //= 26
        if not i:
            return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--urls", type=int, default=100_000, help="URLs probed in part 1 (default 100,000)")
    parser.add_argument("--hosts", type=int, default=100, help="host names they are spread over")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds the server takes to answer")
    parser.add_argument("--store-urls", type=int, default=1_000_000, help="URLs in part 2's store")
    parser.add_argument("--store-limit", type=int, default=20_000, help="URLs part 2's crawl asks")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-probe-"))
    queue: multiprocessing.Queue = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(queue, args.delay), daemon=True)
    server.start()
    port = queue.get(timeout=30)
    try:
        one = base / "one"
        one.mkdir()
        seed(
            one / "trawl.db", lambda i: f"http://h{i % args.hosts}.bench.example.com:{port}/p/{i}", args.urls
        )
        seconds, rss, log = crawl(one, "-a", "domain=bench.example.com", "-a", "all=true")
        asked = _count(one / "trawl.db")
        print(f"part 1: {asked:,} URLs on {args.hosts} hosts answering in {args.delay * 1000:.0f} ms:"
              f" {seconds:.1f} s with start-up, {asked / seconds:.0f} requests/s; peak RSS {rss:.0f} MB")  # fmt: skip
        two = base / "two"
        two.mkdir()
        started = time.monotonic()
        seed(
            two / "trawl.db",
            lambda i: f"http://h{i % args.hosts}.bench.example.com:{port}/{_word(i)}/x",
            args.store_urls,
        )
        print(f"part 2: seeded {args.store_urls:,} URLs in {time.monotonic() - started:.0f} s")
        seconds, rss, log = crawl(two, "-a", "domain=bench.example.com", "-a", f"limit={args.store_limit}")
        print(
            f"part 2: probe of {_count(two / 'trawl.db'):,} of them (-a limit): {seconds:.1f} s, peak RSS {rss:.0f} MB"
        )
        env = dict(os.environ, PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}")
        proc = subprocess.run(
            [sys.executable, "-c", _SELECTION], cwd=two, env=env, capture_output=True, text=True
        )
        print(
            "part 2: selection read to its end (all=true, both passes):",
            " ".join(proc.stdout.split()),
            proc.stderr[-2000:],
        )
    finally:
        server.terminate()
        shutil.rmtree(base, ignore_errors=True)


def _count(db: Path) -> int:
    import sqlite3

    with sqlite3.connect(db) as con:
        return int(con.execute("SELECT count(*) FROM probe_records").fetchone()[0])


if __name__ == "__main__":
    main()
