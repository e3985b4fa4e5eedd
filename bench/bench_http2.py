# ruff: noqa: E501
"""HTTP/2 against HTTP/1.1 for ``trawl crawl probe`` and ``trawl crawl live``, in one run.

    PYTHONPATH=. .venv/bin/python bench/bench_http2.py
    PYTHONPATH=. .venv/bin/python bench/bench_http2.py --hosts 8 --paths 50 --pages 300 --repeats 3

The site is tests/servers/h2site.py (Twisted's web server, h2 offered through
ALPN on TLS, a self-signed certificate), ``--hosts`` origins on as many ports of
127.0.0.1, each serving ``--pages`` generated pages of about 2 KB:

* **probe**: ``-a list=`` of ``--paths`` pages on each origin (each origin is also
  asked its random path and its favicon), with ``-a allow_private=true``;
* **live**: a crawl of one origin from its ``http://`` root (a 301 to https),
  depth 3, every page (``LIVE_PATTERN_CAP`` raised to the site's size).

``--server nginx`` serves the same pages from Debian's ``nginx-light`` (C,
``http2`` on each TLS port, ``tcp_nodelay``, plain http on the port answered
with a 301 to https): a server as sites run, so the figures are the client's;
the Twisted site's HTTP/2 is Python on both ends and costs it 1.5 times its
HTTP/1.1 CPU. Its access log gives the connections and protocols.

Loopback has no round trip, and a round trip is what a connection costs (TCP
and TLS 1.3: two before the first request): each origin is reached through a
relay in this process that delivers every chunk, both ways, ``--rtt``/2 later
(50 ms by default, a server on another continent's edge; 0: no relay).

Each is run with ``HTTP2_ENABLED=True`` and ``False``, alternately, ``--repeats``
times, at the sources' default per-host concurrency (2) and at
``--wide`` (8): the figures are the crawl's seconds (its ``complete ... in N s``
line: the process's start, several seconds on a loaded machine, left out) and
the process's wall, CPU seconds of the trawl process and of the server, TLS
connections the server accepted (its log), requests, and the share of them
over HTTP/2. Pacing is off (``AUTOTHROTTLE_ENABLED`` and
``RATE_LIMITS_ENABLED`` False), so the figures are the protocols', not the
politeness'. The machine is shared: ``uptime``'s load is printed beside each
figure, and the ratios (HTTP/2 over HTTP/1.1, same round) are the result.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.servers.h2site import H2Site, home_body, make_certificate, page_body  # noqa: E402

TRAWL = str(Path(sys.executable).with_name("trawl"))
FAST = ["-s", "AUTOTHROTTLE_ENABLED=False", "-s", "RATE_LIMITS_ENABLED=False"]
TICKS = os.sysconf("SC_CLK_TCK")


class Relay:
    """TCP relays, one per port, delivering each chunk ``rtt / 2`` seconds after it came, in order."""

    def __init__(self, targets: list[int], rtt: float) -> None:
        self.targets, self.delay = targets, rtt / 2
        self.ports: list[int] = []
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        for target in self.targets:
            server = self.loop.run_until_complete(
                asyncio.start_server(lambda r, w, t=target: self._serve(r, w, t), "127.0.0.1", 0)
            )
            self.ports.append(server.sockets[0].getsockname()[1])
        ready.set()
        self.loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, target: int) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
        await asyncio.gather(
            self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True
        )
        for one in (writer, up_writer):
            one.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    break
                if (wait := due - self.loop.time()) > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
            writer.close()

        task = asyncio.ensure_future(deliver())
        try:
            while data := await reader.read(65536):
                queue.put_nowait((self.loop.time() + self.delay, data))
        finally:
            queue.put_nowait((0.0, b""))
            await task


NGINX_SERVER = """
    server {{
        listen 127.0.0.1:{port} ssl http2;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        error_page 497 =301 https://$http_host$request_uri;
        root {root};
        location / {{ try_files $uri $uri/index.html =404; }}
    }}
"""
NGINX_CONF = """
user root;
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 4096; }}
http {{
    default_type text/html;
    tcp_nodelay on;
    client_body_temp_path {dir}/tmp;
    proxy_temp_path {dir}/tmp;
    fastcgi_temp_path {dir}/tmp;
    uwsgi_temp_path {dir}/tmp;
    scgi_temp_path {dir}/tmp;
    log_format bench '$server_port $connection https=$https $server_protocol $uri';
    access_log {dir}/access.log bench;
{servers}
}}
"""


class NginxSite:
    """The same pages from nginx, with :class:`H2Site`'s reading of its log."""

    def __init__(self, ports: int, pages: int, directory: Path) -> None:
        self.count, self.pages, self.dir = ports, pages, directory / "nginx"
        self.ports: list[int] = []
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> NginxSite:
        import socket

        root = self.dir / "site"
        (root / "p").mkdir(parents=True)
        (self.dir / "tmp").mkdir()
        (root / "index.html").write_bytes(home_body(self.pages))
        for number in range(self.pages):
            (root / "p" / str(number)).write_bytes(page_body(number, self.pages))
        cert, key = make_certificate(self.dir)
        for _ in range(self.count):
            with socket.socket() as spare:
                spare.bind(("127.0.0.1", 0))
                self.ports.append(spare.getsockname()[1])
        servers = "".join(NGINX_SERVER.format(port=p, cert=cert, key=key, root=root) for p in self.ports)
        conf = self.dir / "nginx.conf"
        conf.write_text(NGINX_CONF.format(dir=self.dir, servers=servers))
        self._process = subprocess.Popen(["nginx", "-c", str(conf), "-p", str(self.dir)])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.ports[-1]), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(10)

    def _rows(self) -> list[list[str]]:
        log = self.dir / "access.log"
        return [line.split() for line in log.read_text().splitlines()] if log.exists() else []

    def mark(self) -> int:
        return len(self._rows())

    def since(self, mark: int, kind: str) -> list[dict[str, object]]:
        rows = [
            {
                "port": r[0],
                "peer": r[1],
                "secure": r[2] == "https=on",
                "protocol": r[3].replace("HTTP/2.0", "HTTP/2"),
                "path": r[4],
            }
            for r in self._rows()[mark:]
        ]
        if kind == "tls":
            return [{"peer": peer} for peer in dict.fromkeys(r["peer"] for r in rows if r["secure"])]
        return rows


def load() -> str:
    """``uptime``'s three load averages."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def server_cpu(pid: int) -> float:
    """CPU seconds of the server process and its children (nginx's worker)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return (int(fields[11]) + int(fields[12])) / TICKS + sum(server_cpu(int(child)) for child in children)


def run(site: H2Site | NginxSite, args: list[str], workdir: Path) -> dict[str, float]:
    """One trawl run: wall, CPU (trawl, server), the server's TLS connections and requests."""
    mark = site.mark()
    assert site._process is not None
    server_before = server_cpu(site._process.pid)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        # The run's own store in its folder: never the user's default store.
        [TRAWL, "crawl", *args, *FAST, "-s", "LOG_LEVEL=INFO", "-s", "STORE_URI=sqlite:///trawl.db"],
        cwd=workdir, capture_output=True, text=True,
    )  # fmt: skip
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"trawl failed ({done.returncode}):\n{done.stderr[-2000:]}")
    requests = site.since(mark, "request")
    secure = [row for row in site.since(mark, "tls")]
    crawl = re.search(r"complete \(finished\) in ([0-9.]+) s", done.stderr)
    return {
        "crawl": float(crawl.group(1)) if crawl else float("nan"),
        "wall": wall,
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "server_cpu": server_cpu(site._process.pid) - server_before,
        "tls_connections": len(secure),
        "requests": len(requests),
        "h2_share": sum(row["protocol"] == "HTTP/2" for row in requests) / max(len(requests), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--paths", type=int, default=50, help="pages probed per host")
    parser.add_argument(
        "--pages", type=int, default=300, help="pages of the site (the live crawl fetches all)"
    )
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--wide", type=int, default=8, help="the second per-host concurrency measured")
    parser.add_argument("--only", choices=("probe", "live"), default=None)
    parser.add_argument("--server", choices=("twisted", "nginx"), default="twisted")
    parser.add_argument("--rtt", type=float, default=0.05, help="round-trip seconds the relay adds (0: none)")
    args = parser.parse_args()
    print(f"uptime load at start: {load()}", flush=True)
    with (
        tempfile.TemporaryDirectory(prefix="trawl-bench-h2-") as tmp,
        (
            NginxSite(args.hosts, args.pages, Path(tmp))
            if args.server == "nginx"
            else H2Site(ports=args.hosts, pages=args.pages, directory=Path(tmp))
        ) as site,
    ):
        ports = Relay(site.ports, args.rtt).ports if args.rtt > 0 else site.ports
        origins = [f"https://127.0.0.1:{port}" for port in ports]
        urls = [f"{origin}/p/{n}" for n in range(args.paths) for origin in origins]
        (Path(tmp) / "urls.txt").write_text("\n".join(urls) + "\n")
        jobs = {
            "probe": ["probe", "-a", "list=urls.txt", "-a", "allow_private=true", "-o", "probe.jsonl"],
            "live": [
                "live", "-a", f"domain=127.0.0.1:{ports[0]}", "-a", "allow_private=true",
                "-s", f"LIVE_PATTERN_CAP={args.pages + 10}", "-o", "live.txt",
            ],
        }  # fmt: skip
        per_host = {"probe": "PROBE_HOST_CONCURRENCY", "live": "LIVE_HOST_CONCURRENCY"}
        print(
            f"{len(urls)} probe URLs on {args.hosts} hosts; a live crawl of {args.pages} pages; "
            f"{args.repeats} rounds; per-host concurrency 2 and {args.wide}; round trip {args.rtt * 1000:.0f} ms; "
            f"server {args.server}",
            flush=True,
        )
        header = f"{'job':<6} {'host':>4} {'protocol':<9} {'crawl s':>7} {'wall s':>7} {'cpu s':>6} {'srv cpu':>7} {'TLS conns':>9} {'requests':>8} {'h2':>5}  load"
        print(header, flush=True)
        results: dict[tuple[str, int, bool], list[dict[str, float]]] = {}
        for name, job in jobs.items():
            if args.only and name != args.only:
                continue
            for wide in (2, args.wide):
                for round_number in range(args.repeats):
                    order = (True, False) if round_number % 2 == 0 else (False, True)
                    for on in order:
                        workdir = Path(tmp) / f"{name}-{wide}-{round_number}-{on}"
                        workdir.mkdir()
                        (workdir / "urls.txt").write_text((Path(tmp) / "urls.txt").read_text())
                        settings = ["-s", f"HTTP2_ENABLED={on}", "-s", f"{per_host[name]}={wide}"]
                        if name == "probe":
                            settings += [
                                "-s",
                                f'SOURCE_CONCURRENCY={{"probe": {max(32, wide * args.hosts)}}}',
                            ]
                        figures = run(site, [*job, *settings], workdir)
                        results.setdefault((name, wide, on), []).append(figures)
                        print(
                            f"{name:<6} {wide:>4} {'HTTP/2' if on else 'HTTP/1.1':<9} {figures['crawl']:>7.2f} {figures['wall']:>7.2f} "
                            f"{figures['cpu']:>6.2f} {figures['server_cpu']:>7.2f} {figures['tls_connections']:>9.0f} "
                            f"{figures['requests']:>8.0f} {figures['h2_share']:>5.2f}  {load()}",
                            flush=True,
                        )
        print("\nmedians, HTTP/2 over HTTP/1.1:", flush=True)
        for name, wide, on in results:
            if not on:
                continue
            two, one = results[(name, wide, True)], results[(name, wide, False)]
            ratio = {
                key: statistics.median(r[key] for r in two)
                / max(statistics.median(r[key] for r in one), 1e-9)
                for key in ("crawl", "wall", "cpu", "server_cpu", "tls_connections")
            }
            print(
                f"{name:<6} per host {wide}: crawl x{ratio['crawl']:.2f}, wall x{ratio['wall']:.2f}, trawl CPU x{ratio['cpu']:.2f}, "
                f"server CPU x{ratio['server_cpu']:.2f}, TLS connections "
                f"{statistics.median(r['tls_connections'] for r in two):.0f} against "
                f"{statistics.median(r['tls_connections'] for r in one):.0f}  (load {load()})",
                flush=True,
            )


if __name__ == "__main__":
    main()
