"""Peak RSS and wall time of ``trawl crawl all`` with every source's upstream hostile at once.

Under Scrapy's bound alone, one endless chunked CDX page took a crawl to 1.17 GB of RSS, a
gzip bomb the same; with every source hostile at once the bound was about 16 GB
(Scrapy's 1 GiB ``DOWNLOAD_MAXSIZE`` per answer in flight). Each source now has
a limit that fits its API (trawl.politeness.bounds); the target is a peak RSS
under 1 GB with all of them hostile.

One :class:`tests.servers.hostile.HostileServer` per source (wayback,
commoncrawl, otx, urlscan, virustotal, intelx, ghostarchive), each source
pointed at its own with its ``*_BASE_URL`` setting and given a dummy key. What a
CDX source needs to reach its data pages is answered properly (``collinfo.json``
with ``--cc-indexes`` crawl indexes, a page count of ``--pages``), so both CDX
sources keep two pages in flight; every other request gets the hostile answer:

* ``endless``: 64 KiB chunks until the client hangs up;
* ``bomb``: 1 GiB of zeros in 1 MB of gzip;
* ``mixed``: the CDX sources and urlscan endless, the others bombs;
* ``dribble``: 16 bytes every 0.2 s (with ``SOURCE_DOWNLOAD_TIMEOUT`` 2 s for every source).

Each run is ``python -m trawl.cli crawl all`` into a fresh SQLite store, gates
off; the crawl's peak RSS is read from ``/proc/PID/status`` (VmHWM) until it
exits (:func:`bench.bench_wayback.watch_peak_rss`).

    python bench/bench_hostile.py [--mode endless|bomb|mixed|dribble|all] [--pages N]
        [--cc-indexes N] [--set NAME=VALUE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_wayback import watch_peak_rss  # noqa: E402
from tests.servers.hostile import HostileServer, Mode  # noqa: E402

SOURCES = ("wayback", "commoncrawl", "otx", "urlscan", "virustotal", "intelx", "ghostarchive")
KEYS = {
    "OTX_API_KEY": "bench-otx",
    "URLSCAN_API_KEY": "bench-urlscan",
    "VIRUSTOTAL_API_KEY": "bench-virustotal",
    "INTELX_API_KEY": "bench-intelx",
}
MIXED: dict[str, Mode] = {
    "wayback": "endless",
    "commoncrawl": "endless",
    "urlscan": "endless",
    "otx": "bomb",
    "virustotal": "bomb",
    "intelx": "bomb",
    "ghostarchive": "bomb",
}


def cdx_answers(pages: int, cc_indexes: int) -> Callable[[str], bytes | None]:
    """The CDX requests answered properly: collinfo.json and the page counts."""
    collinfo = json.dumps(
        [{"id": f"CC-MAIN-2025-{n:02d}", "name": f"crawl {n}"} for n in range(cc_indexes, 0, -1)]
    ).encode()

    def answer(path: str) -> bytes | None:
        if path.startswith("/collinfo.json"):
            return collinfo
        if "showNumPages=true" in path:
            if "-index?" in path:  # Common Crawl's pywb
                return json.dumps({"pages": pages, "pageSize": 5, "blocks": pages * 5}).encode()
            return f"{pages}\n".encode()
        return None

    return answer


def run(mode: str, pages: int, cc_indexes: int, extra: list[str]) -> None:
    modes: dict[str, Mode] = MIXED if mode == "mixed" else dict.fromkeys(SOURCES, mode)  # type: ignore[arg-type]
    normal = cdx_answers(pages, cc_indexes)
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="trawl-bench-hostile-") as workdir:
        servers = {
            name: stack.enter_context(
                HostileServer(modes[name], normal=normal if name in ("wayback", "commoncrawl") else None)
            )
            for name in SOURCES
        }
        settings = {f"{name.upper()}_BASE_URL": server.base_url for name, server in servers.items()}
        settings |= {
            "STORE_URI": f"sqlite:///{workdir}/trawl.db",
            "RATE_LIMITS_ENABLED": "False",
            "AUTOTHROTTLE_ENABLED": "False",
            "TRAWL_CACHE_DIR": "",
            "RETRY_BACKOFF_BASE": "0.1",
            "RETRY_BACKOFF_MAX": "1",
            "INTELX_POLL_INTERVAL": "0.1",
        }
        if mode == "dribble":
            settings["SOURCE_DOWNLOAD_TIMEOUT"] = json.dumps(dict.fromkeys(SOURCES, 2))
        command = [sys.executable, "-m", "trawl.cli", "crawl", "all", "-a", "domain=example.com"]
        command += ["-a", "sources=" + ",".join(SOURCES), "-a", f"cc_indexes={cc_indexes}"]
        command += [arg for name, value in settings.items() for arg in ("-s", f"{name}={value}")]
        command += [arg for setting in extra for arg in ("-s", setting)]
        env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings", **KEYS)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
        started = time.perf_counter()
        with tempfile.TemporaryFile("w+") as log:
            process = subprocess.Popen(command, cwd=workdir, env=env, stdout=log, stderr=log, text=True)
            peak = watch_peak_rss(process)
            wall = time.perf_counter() - started
            log.seek(0)
            output = log.read()
        sent = sum(server.sent for server in servers.values())
    table = [line for line in output.splitlines() if line and not line.startswith("20") and "  " in line]
    too_large = sum(1 for line in output.splitlines() if "answer over the size limit" in line)
    still = sum(1 for line in output.splitlines() if "answer still arriving" in line and "ERROR" in line)
    tracebacks = output.count("Traceback")
    print(f"== {mode}: peak RSS {peak:,.0f} MB, wall {wall:.1f} s, exit {process.returncode}")
    print(
        f"   {too_large} page(s) over the size limit, {still} still arriving at the timeout, "
        f"{sent / (1 << 20):,.0f} MiB sent by the servers, {tracebacks} traceback(s)"
    )
    for line in table:
        print("   " + line)
    if peak >= 1000:
        print("   OVER the 1 GB target")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("endless", "bomb", "mixed", "dribble", "all"), default="all")
    parser.add_argument("--pages", type=int, default=8, help="pages each CDX index says it has")
    parser.add_argument("--cc-indexes", type=int, default=3, help="Common Crawl indexes listed")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="an extra -s")
    args = parser.parse_args()
    modes = ("endless", "bomb", "mixed") if args.mode == "all" else (args.mode,)
    for mode in modes:
        run(mode, args.pages, args.cc_indexes, args.set)


if __name__ == "__main__":
    main()
