# ruff: noqa: E501
"""``trawl crawl live`` at scale: pages a second and peak RSS on a generated site.

    PYTHONPATH=. python bench/bench_live.py                      # 5,000 pages on 20 hosts, 50 ms each
    PYTHONPATH=. python bench/bench_live.py --pages 20000 --hosts 50 --delay 0.1

The site: ``--pages`` HTML pages spread over ``--hosts`` host names
(``hN.bench.example.com``), a tree of ``--fanout`` links a page (page ``i`` links
pages ``i*fanout+1 .. i*fanout+fanout``, the root page ``0`` is
``http://bench.example.com/``), each page also linking the root and an
out-of-scope URL. Paths are letters only, so each page is its own pattern (the
trap guard never bites). One asyncio server in its own process answers every
request after ``--delay`` seconds; the crawl reaches it as its proxy
(``PROXY_LIST``: the request line names the host), so the host names need no
DNS. The crawl runs with its defaults (2 requests per host, 8 in all,
AutoThrottle off as in the tests, robots.txt obeyed: each host's robots.txt is a
404) and ``-a depth=`` deep enough for the whole tree. Pages a second are over the
crawl's own time (its summary line), start-up aside. ``BENCH_PROFILE=FILE``
writes a cProfile of the crawl there.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def word(i: int) -> str:
    out = ""
    while True:
        out = chr(97 + i % 26) + out
        i //= 26
        if not i:
            return out


def page_url(i: int, hosts: int) -> str:
    if i == 0:
        return "http://bench.example.com/"
    return f"http://h{i % hosts}.bench.example.com/p/{word(i)}"


def serve(port_queue: multiprocessing.Queue, delay: float, pages: int, hosts: int, fanout: int) -> None:
    """A keep-alive HTTP/1.1 forward-proxy-shaped server: the page a request line names, after ``delay``."""
    index = {page_url(i, hosts).split("/", 2)[2]: i for i in range(pages)}

    def body(i: int) -> bytes:
        children = range(i * fanout + 1, min(pages, i * fanout + fanout + 1))
        links = "".join(f'<a href="{page_url(c, hosts)}">page {c}</a> ' for c in children)
        return (
            f"<html><head><title>page {i}</title></head><body><p>Words of page {word(i)} and more words.</p>"
            f'{links}<a href="/">home</a> <a href="http://bench.example.com/">root</a>'
            f' <a href="https://elsewhere.example.org/{word(i)}">out</a></body></html>'
        ).encode()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                target = head.split(b" ", 2)[1].decode()
                await asyncio.sleep(delay)
                key = target.split("://", 1)[-1]
                i = index.get(key)
                if i is None:
                    status, payload = b"404 Not Found", b"<html><body>not found</body></html>"
                else:
                    status, payload = b"200 OK", body(i)
                writer.write(
                    b"HTTP/1.1 %s\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s"
                    % (status, len(payload), payload)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, IndexError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        port_queue.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


#: Runs trawl's command line, then prints this process's peak RSS.
_MEASURED = """
import resource, sys, atexit, os
if os.environ.get("BENCH_PROFILE"):
    import cProfile, pstats
    _prof = cProfile.Profile(); _prof.enable()
    atexit.register(lambda: (_prof.disable(), pstats.Stats(_prof, stream=open(os.environ["BENCH_PROFILE"], "w")).sort_stats("tottime").print_stats(40)))
atexit.register(lambda: print("PEAK_RSS_MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
from trawl.cli import main
sys.argv = ["trawl", *sys.argv[1:]]
main()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=5000, help="pages of the site (default 5,000)")
    parser.add_argument("--hosts", type=int, default=20, help="host names they are spread over")
    parser.add_argument("--fanout", type=int, default=10, help="links to new pages a page holds")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds the server takes to answer")
    args = parser.parse_args()
    depth, reach = 0, 1
    while reach < args.pages:
        depth += 1
        reach = reach * args.fanout + 1
    work = Path(tempfile.mkdtemp(prefix="bench-live-"))
    queue: multiprocessing.Queue = multiprocessing.Queue()
    server = multiprocessing.Process(
        target=serve, args=(queue, args.delay, args.pages, args.hosts, args.fanout), daemon=True
    )
    server.start()
    port = queue.get(timeout=30)
    try:
        command = [sys.executable, "-c", _MEASURED, "crawl", "live", "-a", "domain=bench.example.com",
                   "-a", f"depth={depth + 1}", "-s", f"PROXY_LIST=http://127.0.0.1:{port}",
                   "-s", "STORE_URI=sqlite:///trawl.db", "-s", "LOG_LEVEL=INFO",
                   "-s", "RATE_LIMITS_ENABLED=False", "-s", "AUTOTHROTTLE_ENABLED=False"]  # fmt: skip
        env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings",
                   PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}")  # fmt: skip
        started = time.monotonic()
        proc = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
        seconds = time.monotonic() - started
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
        rss = next((float(l.split()[1]) for l in proc.stdout.splitlines() if l.startswith("PEAK_RSS_MB")), 0.0)  # noqa: E741
        with sqlite3.connect(work / "trawl.db") as con:
            fetched = con.execute("SELECT count(*) FROM link_records WHERE status = 200 AND url LIKE '%/p/%' OR url = 'http://bench.example.com/'").fetchone()[0]
            requests = con.execute("SELECT count(*) FROM link_records WHERE status IS NOT NULL").fetchone()[0]
        summary = next((l for l in proc.stderr.splitlines() if " pages fetched (" in l), "")  # noqa: E741
        took = re.search(r"complete \(\w+\) in ([\d.]+) s", proc.stderr)
        crawl_s = float(took.group(1)) if took else seconds
        print(f"{fetched:,} of {args.pages:,} pages on {args.hosts} hosts answering in {args.delay * 1000:.0f} ms"
              f" ({requests:,} URLs fetched, sitemaps included): {crawl_s:.1f} s crawling ({seconds:.1f} s with"
              f" start-up), {requests / crawl_s:.0f} pages/s; peak RSS {rss:.0f} MB")  # fmt: skip
        print(summary.split("INFO: ", 1)[-1])
    finally:
        server.terminate()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
