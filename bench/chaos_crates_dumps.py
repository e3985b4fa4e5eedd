"""The two dumps bench/chaos_crates.py loads, and the local server that serves them.

A and B are :mod:`bench.crates_gen`'s tables at two sizes (B 1.4 times A's rows,
so a load of B is the longer), B newer and with other values in every table,
even those whose rows do not depend on the counts: a live table that is A's
where the others are B's is then told apart. Each is a tar.gz packed as
crates.io packs it (``tar | gzip``); B also cut at a byte and without each core
table. ``/slow/NAME`` serves a file at :data:`RATE`, and holds it while
:data:`FLOWING` is cleared.
"""

from __future__ import annotations

import functools
import json
import subprocess
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl

from bench import crates_gen

CORE = ("crates", "versions", "dependencies")
SNAPSHOTS = {
    "A": ("2026-09-01-020003", "2026-09-01T02:00:03Z"),
    "B": ("2026-09-02-020001", "2026-09-02T02:00:01Z"),
}
#: The dumps' sizes against scale 1 (crates_gen.COUNTS): B is bigger, so a load of it is longer.
SIZES = {"A": 1.0, "B": 1.4}
#: Bytes a second the faulted load of B is served at: its load lasts size / RATE seconds (10 MB:
#: about 7 s) on a busy machine as on an idle one, so a random offset lands inside it.
RATE = 1_500_000
#: Cleared, the slow path sends nothing more until it is set: a load held mid-dump.
FLOWING = threading.Event()
FLOWING.set()


def _variant_b(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    """B's values where A's tables would be the same whatever the counts (fixed-size tables)."""
    bumped = {
        "keywords": pl.col("crates_cnt") + 1,
        "categories": pl.col("crates_cnt") + 1,
        "teams": pl.lit("Team B"),
        "deleted_crates": pl.lit("gone in B"),
        "metadata": pl.col("total_downloads") + 1,
    }
    column = {"teams": "name", "deleted_crates": "message"}.get(name)
    if name not in bumped:
        return frame
    target = column or ("total_downloads" if name == "metadata" else "crates_cnt")
    return frame.with_columns(bumped[name].alias(target))


def write_tables(out: Path, which: str, scale: float) -> list[str]:
    """Dump ``which``'s CSVs under ``out/<snapshot>/``; its members in archive order."""
    snapshot, timestamp = SNAPSHOTS[which]
    size = scale * SIZES[which]
    n_crates, n_versions, n_deps = (max(10, int(crates_gen.COUNTS[k] * size)) for k in crates_gen.COUNTS)
    folder = out / snapshot
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "README.md").write_text("# crates.io database dump\n")
    (folder / "metadata.json").write_text(json.dumps({"timestamp": timestamp, "crates_io_commit": "0" * 40}))
    tables = {
        "crates": crates_gen.crates(n_crates),
        "versions": crates_gen.versions(n_versions, n_crates),
        "dependencies": crates_gen.dependencies(n_deps, n_versions, n_crates),
        "version_downloads": crates_gen.version_downloads(n_versions),
        **crates_gen.small_tables(n_crates, n_versions),
    }
    for name, frame in tables.items():
        if which == "B":
            frame = _variant_b(name, frame)
        frame.write_csv(folder / "data" / f"{name}.csv", null_value="", quote_style="necessary")
    return ["README.md", "metadata.json", *(f"data/{n}.csv" for n in sorted(tables))]


def pack(out: Path, which: str, members: list[str], target: Path) -> Path:
    """``members`` of dump ``which`` as a tar.gz at ``target`` (tar | gzip, as crates.io packs it)."""
    snapshot = SNAPSHOTS[which][0]
    with target.open("wb") as sink:
        tar = subprocess.Popen(
            ["tar", "-C", str(out), "-cf", "-", *(f"{snapshot}/{m}" for m in members)], stdout=subprocess.PIPE
        )
        subprocess.run(["gzip", "-1"], stdin=tar.stdout, stdout=sink, check=True)
        tar.wait()
    return target


class _Quiet(SimpleHTTPRequestHandler):
    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass  # a load stopped, killed or refused hangs up mid-body

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if not self.path.startswith("/slow/"):
            super().do_GET()
            return
        body = Path(self.directory, self.path.removeprefix("/slow/")).read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "application/gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        started = time.monotonic()
        for at in range(0, len(body), 1 << 16):
            FLOWING.wait()
            self.wfile.write(body[at : at + (1 << 16)])
            ahead = started + (at + (1 << 16)) / RATE - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)  # the pace of a slow mirror: the load lasts as long whatever the CPU

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass


def serve(folder: Path) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def prepare(folder: Path, scale: float, rng_cuts: list[tuple[int, float]]) -> None:
    """The dumps the rounds serve: A, B, B cut at each round's byte, B without each core table."""
    members = {which: write_tables(folder / which, which, scale) for which in ("A", "B")}
    pack(folder / "A", "A", members["A"], folder / "a.tar.gz")
    whole = pack(folder / "B", "B", members["B"], folder / "b.tar.gz").read_bytes()
    for number, fraction in rng_cuts:
        (folder / f"b-cut-{number}.tar.gz").write_bytes(whole[: int(len(whole) * fraction)])
    for member in CORE:
        kept = [m for m in members["B"] if m != f"data/{member}.csv"]
        pack(folder / "B", "B", kept, folder / f"b-no-{member}.tar.gz")
