"""Faults against real crates.io db-dump loads: is the live snapshot always one whole dump?

Two dumps of realistic shape are generated (:mod:`bench.crates_gen`'s tables; B
newer than A, with other counts and other values in every table) and served by
a local HTTP server. Each round starts from an empty store on a tmpfs of its own,
loads A whole, then loads B under one fault chosen from the seed:

* ``SIGKILL`` / ``SIGINT`` / ``SIGINTx2`` / ``SIGTERM`` at a random offset into the load;
* ``concurrent``: a second load of B into the same store at a random offset;
* ``read-only``: the store's folder remounted read-only before the load;
* ``small-disk``: the store's tmpfs shrunk to what A uses plus a little;
* ``disk-fill``: a file fills the store's tmpfs at a random offset into the load;
* ``truncated``: B cut at a random byte; ``no-MEMBER``: B without one core table.

Then the fault is taken away and B is loaded again (the rerun). After the fault
and after the rerun, every table the loader keeps must hold exactly the rows of
A or of B (counts and a checksum of every row, against a clean load of each),
never a mix or a part; the newest ``crates_dump`` row must name that dump; every
signalled process must have exited within 10 s, with the status
docs/stopping.md gives (1 for a partial run, 137 for kill -9, one ERROR line for
a refused load); after the rerun no staging table, scratch file or lock record
of a dead load may be left.

    python bench/chaos_crates.py [--rounds 20] [--seed 1] [--scale 0.02]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import crates_gen  # noqa: E402
from tests.conftest import TEST_DEFAULTS, crawl_args  # noqa: E402
from tests.interrupts import Trawl  # noqa: E402

#: A signalled process must have exited within this many seconds (docs/stopping.md).
PROMPT = 10.0
SNAPSHOTS = {
    "A": ("2026-09-01-020003", "2026-09-01T02:00:03Z"),
    "B": ("2026-09-02-020001", "2026-09-02T02:00:01Z"),
}
#: The dumps' sizes against scale 1 (crates_gen.COUNTS): B is bigger, so a load of it is longer.
SIZES = {"A": 1.0, "B": 1.4}
CORE = ("crates", "versions", "dependencies")
SIGNALS = {
    "SIGKILL": signal.SIGKILL,
    "SIGINT": signal.SIGINT,
    "SIGINTx2": signal.SIGINT,
    "SIGTERM": signal.SIGTERM,
}
FAULTS = (*SIGNALS, "concurrent", "read-only", "small-disk", "disk-fill", "truncated", "no-member")
#: Columns that say which run wrote a row, not what the dump holds.
RUN_COLUMNS = {"first_run", "last_run"}
TMPFS_SIZE = "1g"
#: Bytes a second the faulted load of B is served at: its load lasts size / RATE seconds (10 MB:
#: about 7 s) on a busy machine as on an idle one, so a random offset lands inside it.
RATE = 1_500_000
#: Cleared, the slow path sends nothing more until it is set: a load held mid-dump.
FLOWING = threading.Event()
FLOWING.set()


# --- the dumps ------------------------------------------------------------------------------------


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


# --- the store ------------------------------------------------------------------------------------


def fingerprint(db: Path) -> dict[str, tuple[int, str]]:
    """Every live ``*_records`` table the loader switches: (rows, checksum of every row but the run
    columns); the checksum is the XOR of each row's hash, so it does not depend on row order."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)
    try:
        names = [
            r[0]
            for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%\\_records' ESCAPE '\\'"
                " AND name != 'crates_dump_records' ORDER BY name"
            )
        ]
        prints = {}
        for name in names:
            columns = [r[1] for r in con.execute(f"PRAGMA table_info({name})") if r[1] not in RUN_COLUMNS]
            total, rows = 0, 0
            for row in con.execute(f"SELECT {', '.join(columns)} FROM {name}"):
                digest = hashlib.blake2b(repr(row).encode(), digest_size=8).digest()
                total ^= int.from_bytes(digest, "big")
                rows += 1
            prints[name] = (rows, f"{total:016x}")
        return prints
    finally:
        con.close()


def newest_snapshot(db: Path) -> str | None:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)
    try:
        row = con.execute("SELECT max(snapshot) FROM crates_dump_records").fetchone()
        return row[0] if row else None
    except sqlite3.OperationalError:
        return None
    finally:
        con.close()


def staging_tables(db: Path) -> list[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)
    try:
        return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE name LIKE '%_records_next'")]
    finally:
        con.close()


def which_dump(db: Path, golden: dict[str, dict]) -> str:
    """``A`` or ``B`` when the live tables are exactly that dump's, else a word for what they are."""
    if not db.exists():
        return "none"
    prints = fingerprint(db)
    snapshot = newest_snapshot(db)
    for name, want in golden.items():
        if prints == want and snapshot == SNAPSHOTS[name][0]:
            return name
    mixed = {t for t in prints if any(prints[t] == g.get(t) for g in golden.values())}
    return f"MIX({len(mixed)}/{len(prints)} tables whole, snapshot {snapshot})"


# --- the processes --------------------------------------------------------------------------------


def settings(db: Path, url: str) -> dict[str, object]:
    return {
        **TEST_DEFAULTS,
        "STORE_URI": f"sqlite:///{db}",
        "CRATES_DUMP_URL": url,
        "PROGRESS_INTERVAL": 0,
    }


#: Every process of the round running now, its stderr kept for the log of an inexact round.
STARTED: list[Trawl] = []


def start(cwd: Path, db: Path, url: str) -> Trawl:
    run = Trawl(cwd, *crawl_args("crates", None, settings(db, url)))
    STARTED.append(run)
    return run


def keep_logs(rnd: Round, logs: Path) -> None:
    """The stderr of each process of an inexact round, in the order they started."""
    logs.mkdir(parents=True, exist_ok=True)
    for index, run in enumerate(STARTED, 1):
        path = logs / f"round-{rnd.number:02d}-{index}.log"
        path.write_text(f"{' '.join(run.proc.args)}\nexit {run.proc.returncode}\n\n{run.stderr}\n")
    rnd.problems.append(f"logs in {logs}/round-{rnd.number:02d}-*.log")


def status(code: int | None) -> int | None:
    """The shell's exit status: 128 + N for a process ended by signal N."""
    return None if code is None else (128 - code if code < 0 else code)


def errors(run: Trawl) -> list[str]:
    return [line for line in run.lines if "] ERROR:" in line or line.startswith("trawl: error:")]


def load(cwd: Path, db: Path, url: str, timeout: float = 600) -> tuple[int | None, Trawl]:
    with start(cwd, db, url) as run:
        code, _ = run.finish(timeout=timeout)
    return status(code), run


@dataclass
class Round:
    number: int
    fault: str
    offset: float = 0.0
    codes: list[int | None] = field(default_factory=list)
    took: float = 0.0
    after_fault: str = "?"
    after_rerun: str = "?"
    rerun_code: int | None = None
    problems: list[str] = field(default_factory=list)

    def check(self, ok: bool, problem: str) -> None:
        if not ok:
            self.problems.append(problem)

    def line(self) -> str:
        codes = "/".join(str(c) for c in self.codes)
        word = "exact" if not self.problems else "INEXACT: " + "; ".join(self.problems)
        return (
            f"round {self.number:2d}: {self.fault:<12} at +{self.offset:4.1f} s exit {codes:<7} "
            f"in {self.took:4.1f} s; live {self.after_fault}, rerun exit {self.rerun_code} -> "
            f"{self.after_rerun}: {word}"
        )


def wait_offset(run: Trawl, offset: float) -> bool:
    """Wait ``offset`` seconds after the spider opened; False when the process ended first."""
    run.wait_for("Spider opened", timeout=60)
    try:
        run.proc.wait(timeout=offset)
        return False
    except subprocess.TimeoutExpired:
        return True


def signal_round(rnd: Round, cwd: Path, db: Path, url: str) -> None:
    with start(cwd, db, url) as run:
        landed = wait_offset(run, rnd.offset)
        if landed:
            run.send(SIGNALS[rnd.fault])
            if rnd.fault == "SIGINTx2":
                try:
                    run.wait_for("shutting down gracefully", timeout=PROMPT)
                    run.send(signal.SIGINT)
                except AssertionError:
                    pass  # it ended first
        code, took = run.finish(timeout=120)
    rnd.codes, rnd.took = [status(code)], took
    rnd.check(landed, "the load ended before the signal")
    rnd.check(took <= PROMPT, f"exited {took:.1f} s after the signal")
    want = 137 if rnd.fault == "SIGKILL" else 1
    rnd.check(status(code) == want, f"exit {status(code)}, not {want}")
    rnd.check("Traceback" not in run.stderr, "a traceback")


def concurrent_round(rnd: Round, cwd: Path, db: Path, url: str) -> None:
    """The first load is held where the offset finds it (its download paused) until the second
    has ended: a second process takes seconds to start on a busy machine, and must meet the first
    still loading."""
    with start(cwd, db, url) as first:
        wait_offset(first, rnd.offset)
        FLOWING.clear()
        try:
            running = first.proc.poll() is None
            with start(cwd, db, url) as second:
                code2, _ = second.finish(timeout=120)
            running = running and first.proc.poll() is None
        finally:
            FLOWING.set()
        code1, _ = first.finish(timeout=600)
    rnd.codes = [status(code1), status(code2)]
    rnd.check(running, "the first load ended before the second did")
    refused = [run for run in (first, second) if any("another crates load" in e for e in errors(run))]
    rnd.check(len(refused) == 1, f"{len(refused)} loads refused")
    for run, code in ((first, code1), (second, code2)):
        if run in refused:
            rnd.check(status(code) == 1 and len(errors(run)) == 1, f"refused: exit {code}, {errors(run)}")
        else:
            rnd.check(status(code) == 0, f"the load that ran: exit {code}, {errors(run)[:2]}")
        rnd.check("Traceback" not in run.stderr, "a traceback")


def failing_round(rnd: Round, cwd: Path, db: Path, url: str, expect: str) -> None:
    """A load that must fail by itself: exit 1, one ERROR line containing ``expect``, no traceback."""
    started = time.monotonic()
    code, run = load(cwd, db, url, timeout=120)
    rnd.codes, rnd.took = [code], time.monotonic() - started
    errs = errors(run)
    rnd.check(code == 1, f"exit {code}, not 1")
    rnd.check(len(errs) == 1 and expect in errs[0], f"errors: {[e[-160:] for e in errs][:3]}")
    rnd.check("Traceback" not in run.stderr, "a traceback")


def fill_round(rnd: Round, cwd: Path, db: Path, url: str, mount: Path) -> None:
    """A file fills the store's disk ``offset`` s into the load."""
    with start(cwd, db, url) as run:
        landed = wait_offset(run, rnd.offset)
        signalled = time.monotonic()
        if landed:
            with (mount / "filler").open("wb") as filler:
                chunk = b"\0" * (1 << 20)
                try:
                    while True:
                        filler.write(chunk)
                        filler.flush()
                except OSError:
                    pass
        code, _ = run.finish(timeout=120)
    rnd.codes, rnd.took = [status(code)], time.monotonic() - signalled
    rnd.check(landed, "the load ended before the disk filled")
    rnd.check(rnd.took <= PROMPT, f"exited {rnd.took:.1f} s after the disk filled")
    rnd.check(status(code) == 1, f"exit {status(code)}, not 1")
    errs = errors(run)
    rnd.check(len(errs) == 1, f"{len(errs)} ERROR lines: {[e[-160:] for e in errs][:3]}")
    rnd.check("Traceback" not in run.stderr, "a traceback")


def mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)


def remount(path: Path, *options: str) -> None:
    subprocess.run(["mount", "-o", ",".join(("remount", *options)), str(path)], check=True)


def used_bytes(path: Path) -> int:
    stat = os.statvfs(path)
    return (stat.f_blocks - stat.f_bfree) * stat.f_frsize


def leftovers(db: Path) -> list[str]:
    """What a dead load left after the rerun: staging tables, scratch files, a lock record."""
    left = staging_tables(db)
    left += [p.name for p in db.parent.glob(f"{db.name}-load-*")]
    lock = db.parent / f"{db.name}-load.lock"
    if lock.exists() and lock.read_bytes().strip():
        left.append(f"{lock.name}: {lock.read_text()[:80]}")
    return left


def one_round(
    number: int, rng: random.Random, base: str, golden: dict[str, dict], window: float, cut: float, logs: Path
) -> Round:
    fault = FAULTS[(number - 1) % len(FAULTS)] if number <= len(FAULTS) else rng.choice(FAULTS)
    rnd = Round(number, fault)
    rnd.offset = rng.uniform(0.05, window)
    member = rng.choice(CORE)
    if fault == "no-member":
        rnd.fault = f"no-{member}"
    elif fault == "truncated":
        rnd.fault = f"cut@{cut:.0%}"
    work = Path(tempfile.mkdtemp(prefix="trawl-chaos-crates-"))
    mount = work / "store"
    mount_tmpfs(mount, TMPFS_SIZE)
    db = mount / "x.db"
    good_b, slow_b = f"{base}/b.tar.gz", f"{base}/slow/b.tar.gz"
    try:
        code, run = load(work, db, f"{base}/a.tar.gz")
        if code != 0 or which_dump(db, golden) != "A":
            rnd.problems.append(f"loading A: exit {code}, {errors(run)[:1]}")
            return rnd
        if fault in SIGNALS:
            signal_round(rnd, work, db, slow_b)
        elif fault == "concurrent":
            concurrent_round(rnd, work, db, slow_b)
        elif fault == "read-only":
            rnd.offset = 0.0
            remount(mount, "ro")
            try:
                failing_round(rnd, work, db, good_b, "")
            finally:
                remount(mount, "rw")
        elif fault == "small-disk":
            rnd.offset = 0.0
            room = used_bytes(mount) + (2 << 20)
            remount(mount, f"size={room}")
            try:
                failing_round(rnd, work, db, good_b, "store")
            finally:
                remount(mount, f"size={TMPFS_SIZE}")
        elif fault == "disk-fill":
            try:
                fill_round(rnd, work, db, slow_b, mount)
            finally:
                (mount / "filler").unlink(missing_ok=True)
        elif fault == "truncated":
            rnd.offset = 0.0
            failing_round(rnd, work, db, f"{base}/b-cut-{number}.tar.gz", "")
        else:
            rnd.offset = 0.0
            failing_round(rnd, work, db, f"{base}/b-no-{member}.tar.gz", f"data/{member}.csv")
        rnd.after_fault = which_dump(db, golden)
        rnd.check(rnd.after_fault in ("A", "B"), f"after the fault: {rnd.after_fault}")
        if fault in ("read-only", "small-disk", "truncated", "no-member"):
            rnd.check(rnd.after_fault == "A", "the failed load switched its dump in")
        rnd.rerun_code, rerun = load(work, db, good_b)
        rnd.after_rerun = which_dump(db, golden)
        rnd.check(rnd.rerun_code == 0, f"rerun exit {rnd.rerun_code}: {errors(rerun)[:1]}")
        rnd.check(rnd.after_rerun == "B", f"after the rerun: {rnd.after_rerun}")
        left = leftovers(db)
        rnd.check(not left, f"left after the rerun: {left}")
    finally:
        if rnd.problems:
            keep_logs(rnd, logs)
        STARTED.clear()
        subprocess.run(["umount", "-l", str(mount)], check=False)
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return rnd


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


def golden_loads(base: str) -> dict[str, dict]:
    """Each dump loaded whole into an empty store: its fingerprint."""
    golden: dict[str, dict] = {}
    for which in ("A", "B"):
        work = Path(tempfile.mkdtemp(prefix="trawl-chaos-golden-"))
        db = work / "x.db"
        with start(work, db, f"{base}/{which.lower()}.tar.gz") as run:
            run.wait_for("Spider opened", timeout=60)
            opened = time.monotonic()
            code, _ = run.finish(timeout=600)
        if code != 0:
            raise SystemExit(f"the clean load of {which} failed: {errors(run)[:2]}")
        golden[which] = fingerprint(db)
        took = time.monotonic() - opened
        kinds = ("crate", "version", "dependency")
        counts = {t: golden[which][f"{k}_records"][0] for t, k in zip(CORE, kinds, strict=True)}
        print(f"dump {which}: {counts}, loaded in {took:.1f} s after the spider opened", flush=True)
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return golden


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scale", type=float, default=0.02, help="dump A's size against crates_gen's")
    logs = Path(tempfile.gettempdir()) / "trawl-chaos-crates-logs"
    parser.add_argument("--logs", type=Path, default=logs, help="the processes' stderr of inexact rounds")
    options = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("chaos_crates: needs root (it mounts tmpfs folders)")
    rng = random.Random(options.seed)
    folder = Path(tempfile.mkdtemp(prefix="trawl-chaos-dumps-"))
    cut_rng = random.Random(options.seed * 7919)
    cuts = [(n, cut_rng.uniform(0.1, 0.95)) for n in range(1, options.rounds + 1)]
    prepare(folder, options.scale, cuts)
    server, base = serve(folder)
    try:
        golden = golden_loads(base)
        window = (folder / "b.tar.gz").stat().st_size / RATE
        print(f"faulted loads of B served at {RATE / 1e6:.1f} MB/s: {window:.1f} s", flush=True)
        results = []
        started = time.monotonic()
        for number in range(1, options.rounds + 1):
            rnd = one_round(number, rng, base, golden, window * 0.9, cuts[number - 1][1], options.logs)
            print(rnd.line(), flush=True)
            results.append(rnd)
    finally:
        server.shutdown()
        subprocess.run(["rm", "-rf", str(folder)], check=False)
    exact = sum(1 for r in results if not r.problems)
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(
        f"exact: {exact}, inexact: {len(results) - exact} (of {len(results)} rounds) "
        f"in {time.monotonic() - started:.0f} s; uptime: {load}"
    )
    sys.exit(0 if exact == len(results) else 1)


if __name__ == "__main__":
    main()
