# ruff: noqa: E501
"""``trawl crawl live`` against a plain Scrapy ``CrawlSpider`` on a real documentation site.

    apt-get download python3.11-doc && dpkg-deb -x python3.11-doc_*.deb /tmp/pydoc
    PYTHONPATH=. .venv/bin/python bench/bench_live_vs_scrapy.py            # finds /tmp/pydoc/...
    PYTHONPATH=. .venv/bin/python bench/bench_live_vs_scrapy.py --site DIR --rounds 2

The site: a Debian documentation package's HTML (python3.11-doc: 530 pages,
a 3.6 MB ``searchindex.js``, two dangling symlinks that answer 404 to
everyone), served by ``python -m http.server``. Both crawlers reach it as
``http://docs.example.com/`` through the logging forward proxy of the tests
(tests/servers/website.py ``HostProxy``: the request line names the host, so
no DNS), trawl with ``PROXY_LIST``, the CrawlSpider with ``http_proxy``. Each
with its defaults (robots.txt obeyed by both), trawl with ``-a depth=100`` so
that depth is no limit, as it is none for the CrawlSpider.

Figures from the server's own log (each request line and status): pages
fetched (distinct paths, robots.txt and trawl's random soft-404 path aside),
repeats (requests past the first of a path), 404s split by cause: ``linked``
(the path is a link in the site's markup: ``href``/``src`` of a page reachable
from ``/``, such as the package's dangling symlinks) and ``invented`` (no page
links it: a guessed ``/sitemap.xml``, a path made from a script's text), and
``unfetched``: pages reachable from ``/`` through ``<a href>`` that the crawler
never asked (each crawler should fetch every one); wall, CPU (user+system of
the process and its children) and peak RSS and PSS (each the sum over the
process tree, sampled every 50 ms, so any worker process counts; PSS splits the
pages the pool's processes share instead of counting them in each). ``BENCH_PROFILE=FILE``
writes a cProfile of trawl's crawl process there; ``BENCH_TIMELINE=1`` prints
each crawl's RSS every 5 s; ``BENCH_TRACEMALLOC=SECONDS`` with
``BENCH_TRACEMALLOC_OUT=FILE`` writes trawl's biggest Python allocations then
(slow: tracemalloc costs trawl 10 times its time); ``--only trawl`` and
``--set NAME=VALUE`` (a trawl setting) for experiments.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.servers.website import HostProxy  # noqa: E402

HOST = "docs.example.com"
SITES = ("/tmp/pydoc/x/usr/share/doc/python3.11/html", "/usr/share/doc/python3.11/html",
         "/usr/share/doc/python3-doc/html")  # fmt: skip
RANDOM = re.compile(r"^/[0-9a-f]{24}$")
#: A tag's href or src (the site is Sphinx's regular markup: a regex reads it 20 times faster than lxml).
MARKUP_LINK = re.compile(r"<(\w+)\s[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.IGNORECASE)
LOG_LINE = re.compile(r'"GET (\S+) HTTP/1\.[01]" (\d{3})')

SPIDER = """
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class Docs(CrawlSpider):
    name = "docs"
    allowed_domains = ["docs.example.com"]
    start_urls = ["http://docs.example.com/"]
    custom_settings = {"ROBOTSTXT_OBEY": True, "LOG_LEVEL": "INFO", "TELNETCONSOLE_ENABLED": False}
    rules = (Rule(LinkExtractor(), callback="parse_item", follow=True),)

    def parse_item(self, response):
        yield {"url": response.url, "status": response.status}
"""

#: Runs trawl's command line in this process (profiled when BENCH_PROFILE names a file).
MEASURED = r"""
import sys, atexit, os
if __name__ == "__main__":  # as a program that runs trawl from Python should
    if os.environ.get("BENCH_PROFILE"):
        import cProfile, pstats
        _prof = cProfile.Profile(); _prof.enable()
        atexit.register(lambda: (_prof.disable(), pstats.Stats(_prof, stream=open(os.environ["BENCH_PROFILE"], "w")).sort_stats("cumulative").print_stats(60)))
    if os.environ.get("BENCH_TRACEMALLOC"):  # the biggest live allocations, N seconds in
        import threading, time, tracemalloc
        tracemalloc.start(8)
        def _snap():
            time.sleep(float(os.environ["BENCH_TRACEMALLOC"]))
            top = tracemalloc.take_snapshot().statistics("traceback")[:12]
            with open(os.environ["BENCH_TRACEMALLOC_OUT"], "w") as out:
                for stat in top:
                    out.write(f"{stat.size >> 20} MB {stat.count} blocks\n" + "\n".join(stat.traceback.format()[-8:]) + "\n\n")
        threading.Thread(target=_snap, daemon=True).start()
    from trawl.cli import main
    sys.argv = ["trawl", *sys.argv[1:]]
    main()
"""


def tree_memory(pid: int, by_process: dict[str, int] | None = None) -> tuple[int, int]:
    """Resident and proportional (PSS) bytes of ``pid`` and its descendants (from /proc).

    The RSS sum counts a page shared by several processes of the tree (the mining
    pool's forkserver and workers share the interpreter's) once in each; PSS splits it.
    ``by_process`` keeps each process's own peak RSS, by :func:`role`.
    """
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        rss[int(entry)] = int(fields[21]) * 4096
    total, pss, todo = 0, 0, [pid]
    while todo:
        current = todo.pop()
        total += rss.get(current, 0)
        pss += proportional(current)
        if by_process is not None and current in rss:
            name = next((n for n in by_process if n.endswith(f" {current}")), None)
            if name is None:  # named once: an ending process has no command line left
                name = "main" if current == pid else f"{role(current)} {current}"
            by_process[name] = max(by_process.get(name, 0), rss[current])
        todo.extend(children.get(current, ()))
    return total, pss


def role(pid: int) -> str:
    """What a process of the tree is, from its command line (a forked worker has its parent's)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            words = cmdline.read().decode("utf-8", "replace").split("\0")
    except OSError:
        return "?"
    text = " ".join(words)
    for name in ("resource_tracker", "forkserver", "trawl.mining"):
        if name in text:
            return name
    return Path(words[0]).name if words and words[0] else "?"


def proportional(pid: int) -> int:
    """A process's PSS in bytes (0 once it has ended)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def measured(command: list[str], env: dict[str, str], cwd: Path) -> dict[str, float]:
    """Run ``command``; its wall, CPU and peak RSS (process tree), and its exit status."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=open(cwd / "crawl.log", "w"))  # fmt: skip
    peak, peak_pss, timeline, by_process = 0, 0, [], {}
    while proc.poll() is None:
        rss, pss = tree_memory(proc.pid, by_process)
        peak, peak_pss = max(peak, rss), max(peak_pss, pss)
        if not timeline or time.monotonic() - start >= timeline[-1][0] + 5:
            timeline.append((time.monotonic() - start, rss >> 20))
        time.sleep(0.05)
    wall = time.monotonic() - start
    if os.environ.get("BENCH_TIMELINE"):
        print(command[2] if len(command) > 2 else command[0], "RSS MB by second:", timeline)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "wall": wall,
        "cpu": cpu,
        "rss": peak / (1 << 20),
        "pss": peak_pss / (1 << 20),
        "rc": proc.returncode,
        "by_process": ", ".join(f"{name} {size >> 20}" for name, size in by_process.items()),
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def site_log(log: Path, offset: int) -> list[tuple[str, int]]:
    """(path, status) of every request the server logged past ``offset``."""
    with open(log, errors="replace") as handle:
        handle.seek(offset)
        return [(m.group(1), int(m.group(2))) for m in LOG_LINE.finditer(handle.read())]


@functools.cache
def resolved(folder: str, value: str) -> str | None:
    """The path a link in a page of ``folder`` names (None: the page itself, or another host)."""
    import html

    value = html.unescape(value.split("#", 1)[0]).strip()
    if not value or value.startswith("?"):
        return None  # the page itself (href="#..."): it is no other page's link
    target = urlsplit(urljoin(f"http://{HOST}{folder}", value))
    return unquote(target.path) if target.hostname == HOST else None


def site_links(site: str) -> tuple[set[str], set[str]]:
    """What the site's markup links, walked from ``/`` as a crawler would: (every path an
    ``href``/``src`` of a reachable page names, the HTML pages reachable through ``<a href>``)."""
    root = Path(site)

    def file_of(path: str) -> Path | None:
        local = root / unquote(path).lstrip("/")
        if path.endswith("/"):
            local = local / "index.html"
        return local if local.is_file() and local.suffix in (".html", ".htm") else None

    linked: set[str] = {"/"}
    pages: set[str] = {"/"}
    todo = ["/"]
    while todo:
        path = todo.pop()
        local = file_of(path)
        if local is None:
            continue
        folder = path[: path.rfind("/") + 1]
        for tag, value in MARKUP_LINK.findall(local.read_text(errors="replace")):
            target = resolved(folder, value)
            if target is None:
                continue
            linked.add(target)
            if tag.lower() in ("a", "area") and target not in pages and file_of(target):
                pages.add(target)
                todo.append(target)
    return linked, pages


def summary(asked: list[tuple[str, int]], linked: set[str], pages: set[str]) -> dict[str, object]:
    paths = Counter(path for path, _ in asked if not RANDOM.match(path) and path != "/robots.txt")
    missing = {p for p, s in asked if s == 404 and not RANDOM.match(p) and p != "/robots.txt"}
    plain = {unquote(urlsplit(p).path) for p in paths}
    return {
        "pages": len(paths),
        "repeats": sum(n - 1 for n in paths.values()),
        "repeated": sorted(p for p, n in paths.items() if n > 1)[:5],
        "404": len(missing),
        "linked404": len({p for p in missing if unquote(urlsplit(p).path) in linked}),
        "invented": sorted(p for p in missing if unquote(urlsplit(p).path) not in linked),
        "unfetched": sorted(pages - plain),
        "start": paths.get("/", 0),
        "robots": sum(1 for p, _ in asked if p == "/robots.txt"),
        "html": {p for p in paths if p.endswith((".html", "/"))},
        "missing404": sorted(p for p, s in asked if s == 404 and not RANDOM.match(p))[:12],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", help="the HTML folder of a documentation package")
    parser.add_argument("--rounds", type=int, default=1, help="crawls of each (alternating)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a trawl setting")
    parser.add_argument("--only", choices=("trawl", "scrapy"), help="crawl with this one only")
    args = parser.parse_args()
    site = args.site or next((s for s in SITES if Path(s, "index.html").is_file()), None)
    if not site or not Path(site, "index.html").is_file():
        sys.exit("bench: error: no documentation site: apt-get download python3.11-doc, "
                 "dpkg-deb -x it into /tmp/pydoc (or --site DIR)")  # fmt: skip
    linked, reachable = site_links(site)
    work = Path(tempfile.mkdtemp(prefix="bench-live-scrapy-"))
    (work / "docs_spider.py").write_text(SPIDER)
    (work / "measured.py").write_text(MEASURED)
    log = work / "site.log"
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "-d", site, str(port)],
        stdout=subprocess.DEVNULL, stderr=open(log, "w"),
    )  # fmt: skip
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    venv = Path(sys.executable).parent
    base_env = dict(os.environ, PYTHONPATH=f"{ROOT}:{os.environ.get('PYTHONPATH', '')}")
    results: dict[str, list[dict[str, object]]] = {
        w: [] for w in ("trawl", "scrapy") if args.only in (None, w)
    }
    try:
        with HostProxy(port, 1) as proxy:
            for round_ in range(args.rounds):
                for who in (args.only,) if args.only else ("trawl", "scrapy"):
                    run = work / f"{who}{round_}"
                    run.mkdir()
                    if who == "trawl":
                        env = dict(base_env, SCRAPY_SETTINGS_MODULE="trawl.settings")
                        env.pop("BENCH_PROFILE", None) if round_ else None
                        command = [sys.executable, str(work / "measured.py"), "crawl", "live",
                                   "-a", f"domain={HOST}", "-a", "depth=100",
                                   "-s", f"PROXY_LIST={proxy.url}",
                                   "-s", f"STORE_URI=sqlite:///{run / 'trawl.db'}"]  # fmt: skip
                        command += [arg for setting in args.set for arg in ("-s", setting)]
                    else:
                        env = dict(base_env, http_proxy=proxy.url)
                        env.pop("BENCH_PROFILE", None)
                        command = [str(venv / "scrapy"), "runspider", str(work / "docs_spider.py"),
                                   "-O", str(run / "items.jsonl")]  # fmt: skip
                    offset = log.stat().st_size
                    figures = measured(command, env, run)
                    time.sleep(0.3)  # the server's last log lines
                    figures.update(summary(site_log(log, offset), linked, reachable))
                    results[who].append(figures)
                    if figures["rc"]:
                        print(f"{who}: exit {figures['rc']}; see {run / 'crawl.log'}")
    finally:
        server.terminate()
        server.wait()
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"site: {site} as http://{HOST}/ ({sum(1 for _ in Path(site).rglob('*.html'))} HTML files, "
          f"{len(reachable)} reachable from / through <a href>)")  # fmt: skip
    print(
        f"{'':8} {'pages':>6} {'unfetched':>9} {'repeats':>8} {'/ asked':>7} {'404 linked':>10} "
        f"{'404 invented':>12} {'robots':>6} {'wall s':>7} {'CPU s':>6} {'RSS MB':>7} {'PSS MB':>7}"
    )
    for who, runs in results.items():
        for r in runs:
            print(f"{who:8} {r['pages']:>6} {len(r['unfetched']):>9} {r['repeats']:>8} {r['start']:>7} "
                  f"{r['linked404']:>10} {len(r['invented']):>12} {r['robots']:>6} "
                  f"{r['wall']:>7.1f} {r['cpu']:>6.1f} {r['rss']:>7.0f} {r['pss']:>7.0f}")  # fmt: skip
    for who, runs in results.items():
        for r in runs:
            print(f"{who} peak RSS MB of each process: {r['by_process']}")
    for who, runs in results.items():
        last = runs[-1]
        if last["repeated"]:
            print(f"{who} repeated: {', '.join(last['repeated'])}")
        print(f"{who} 404s: {', '.join(last['missing404']) or 'none'}")
        if last["invented"]:
            print(f"{who} invented (404, linked by no page): {', '.join(last['invented'][:8])}")
        if last["unfetched"]:
            print(f"{who} reachable pages not fetched: {', '.join(last['unfetched'][:8])}")
    if not args.only:
        missed = results["scrapy"][-1]["html"] - results["trawl"][-1]["html"]
        print(f"HTML pages the CrawlSpider fetched and trawl did not: {len(missed)} {sorted(missed)[:5]}")
    print(f"load: {load}")
    if os.environ.get("BENCH_KEEP"):
        print(f"work: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    threading.excepthook = lambda args: None  # the proxy's threads at shutdown
    main()
