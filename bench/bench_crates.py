"""Loading a crates.io db-dump of realistic shape, against the floor of decompressing it.

Generates a dump (:mod:`bench.crates_gen`; at ``--scale 1`` the real dump's shape:
200,000 crates, 2,000,000 versions, 12,000,000 dependencies, 90 days of
version downloads for 10% of the versions), serves it from a local HTTP
server, and times in the same run:

* the floor: ``gzip -dc DUMP > /dev/null`` (the zip: every member read);
* ``trawl crawl crates`` into Parquet only (``CRATES_PARQUET_DIR``, no store);
* a bare SQLite load (:mod:`bench.crates_sqlite_peer`: polars and ADBC into one file, nothing
  else), the least a one-file SQLite store's load costs with trawl's libraries;
* ``trawl crawl crates`` into the SQLite store (and Parquet unless ``--no-parquet``);

each crawl in a process of its own, with its peak RSS and its CPU time
(``wait4``: on a shared machine the CPU seconds say more than the wall clock,
which other processes stretch), and the load average beside every figure.
Targets at full scale: Parquet <= 2x the floor, SQLite and Parquet <= 4x,
peak RSS under 1 GB.

    python bench/bench_crates.py [--scale 0.1] [--zip] [--keep DIR] [--code CHECKOUT] [--no-sqlite]

``--code`` runs the crawls with another checkout's trawl (e.g. main, for a
before/after figure).
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass


def serve(folder: Path) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _cpu(usage: object) -> float:
    return float(usage.ru_utime + usage.ru_stime)  # type: ignore[attr-defined]


def load() -> str:
    """The load averages (1, 5, 15 minutes), as ``uptime`` prints them: the figures' context."""
    return "load " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


def floor(archive: Path) -> tuple[float, float]:
    """Seconds (wall, CPU) to decompress the archive and throw the bytes away."""
    start = time.perf_counter()
    if archive.suffix == ".zip":
        code = (
            "import sys, zipfile\n"
            "with zipfile.ZipFile(sys.argv[1]) as z:\n"
            "    for name in z.namelist():\n"
            "        with z.open(name) as member:\n"
            "            while member.read(1 << 20): pass\n"
        )
        proc = subprocess.Popen([sys.executable, "-c", code, str(archive)])
    else:
        proc = subprocess.Popen(["gzip", "-dc", str(archive)], stdout=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - start, _cpu(usage)


def sqlite_peer(archive: Path, workdir: Path) -> tuple[float, float, int, float]:
    """The bare SQLite load (:mod:`bench.crates_sqlite_peer`): seconds (wall, CPU), its rows and
    the seconds it spent binding them (one writer, no journal: a one-file store's least)."""
    workdir.mkdir(parents=True, exist_ok=True)
    store = workdir / "peer.db"
    store.unlink(missing_ok=True)
    command = [sys.executable, str(ROOT / "bench" / "crates_sqlite_peer.py"), str(archive), str(store)]
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    said = proc.stdout.read() if proc.stdout is not None else ""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the bare SQLite load failed ({os.waitstatus_to_exitcode(status)})")
    store.unlink(missing_ok=True)
    rows, binding = said.split()
    return seconds, _cpu(usage), int(rows), float(binding)


def crawl(workdir: Path, code: Path, url: str, settings: dict[str, str]) -> tuple[float, float, float, str]:
    """Seconds (wall, CPU), peak RSS in MB and the last log lines of one ``trawl crawl crates``."""
    workdir.mkdir(parents=True, exist_ok=True)
    # As `trawl crawl` runs it: only the crawl command is imported (python -m scrapy imports them all).
    args = [sys.executable, "-m", "trawl.cli", "crawl", "crates", "-s", f"CRATES_DUMP_URL={url}"]
    for key, value in settings.items():
        args += ["-s", f"{key}={value}"]
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings", PYTHONPATH=str(code))
    log = workdir / "crawl.log"
    start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(args, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    lines = log.read_text().splitlines()
    said = ("crates:", "ERROR", "ingest process")  # the last: the store's writing process, its CPU
    tail = "\n".join(line for line in lines if any(word in line for word in said))[-2000:]
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"crawl failed ({os.waitstatus_to_exitcode(status)}):\n" + "\n".join(lines[-40:]))
    return seconds, _cpu(usage), usage.ru_maxrss / 1024, tail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1.0: 200,000 crates, the real dump's shape")
    parser.add_argument("--zip", action="store_true", help="the .zip variant instead of the tar.gz")
    parser.add_argument("--keep", type=Path, help="generate into (or reuse) this folder")
    parser.add_argument("--code", type=Path, default=ROOT, help="the trawl checkout to run")
    parser.add_argument("--no-parquet", action="store_true", help="SQLite alone (a checkout without Parquet)")
    parser.add_argument("--no-sqlite", action="store_true", help="the Parquet-only crawl alone")
    parser.add_argument("--no-peer", action="store_true", help="without the bare SQLite load (tar.gz only)")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-crates-"))
    name = "db-dump.zip" if args.zip else "db-dump.tar.gz"
    archive = base / name
    if not archive.exists():
        start = time.perf_counter()
        # In a process of its own: a crawl forked from a bench that holds the generated tables
        # would count them in its peak RSS (Linux keeps the high-water mark across the exec).
        generate = ROOT / "bench" / "crates_gen.py"
        command = [sys.executable, str(generate), str(base), "--scale", str(args.scale)]
        subprocess.run(command + (["--zip"] if args.zip else []), check=True, stdout=subprocess.DEVNULL)
        took = time.perf_counter() - start
        print(f"generated {archive} ({archive.stat().st_size / 1e6:.0f} MB) in {took:.0f} s")
    server, url = serve(base)
    try:
        floor_s, floor_cpu = floor(archive)
        print(f"floor (decompress only): {floor_s:.1f} s, CPU {floor_cpu:.1f} s ({load()})")
        runs: list[tuple[str, dict[str, str]]] = []
        if not args.no_parquet:
            # STORE_URI empty: no store (not the user's default one).
            runs.append(
                ("parquet", {"STORE_URI": "", "CRATES_PARQUET_DIR": str(base / "work-parquet" / "pq")})
            )
        sqlite = {"STORE_URI": "sqlite:///crates.db"}
        if not args.no_parquet:
            sqlite["CRATES_PARQUET_DIR"] = str(base / "work-sqlite" / "pq")
        if not args.no_sqlite:
            runs.append(("sqlite" + ("" if args.no_parquet else "+parquet"), sqlite))
        if not (args.no_sqlite or args.no_peer or args.zip):
            floor_s, floor_cpu = floor(archive)
            seconds, cpu, rows, binding = sqlite_peer(archive, base / "work-peer")
            print(
                f"bare SQLite load (peer, one process, no Parquet): {seconds:.1f} s ="
                f" {seconds / floor_s:.2f}x the floor, CPU {cpu:.1f} s = {cpu / floor_cpu:.2f}x;"
                f" binding {rows:,} rows {binding:.1f} s"
                f" ({binding / rows * 1e6:.2f} us a row) = {binding / floor_s:.2f}x the floor ({load()})"
            )
        for label, settings in runs:
            workdir = base / f"work-{label.split('+')[0]}"
            shutil.rmtree(workdir, ignore_errors=True)
            # The floor again just before each crawl: on a shared machine the load moves between runs.
            floor_s, floor_cpu = floor(archive)
            print(f"floor before {label}: {floor_s:.1f} s, CPU {floor_cpu:.1f} s ({load()})")
            seconds, cpu, rss, tail = crawl(workdir, args.code, f"{url}/{name}", settings)
            print(
                f"{label}: {seconds:.1f} s = {seconds / floor_s:.2f}x the floor, CPU {cpu:.1f} s ="
                f" {cpu / floor_cpu:.2f}x the floor's, peak RSS {rss:.0f} MB ({load()})"
            )
            print("   " + tail.replace("\n", "\n   "))
    finally:
        server.shutdown()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
