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

The first ten rounds take each fault once, the others one at random. The faulted
load of B is served at ``RATE`` (a slow mirror), so that an offset lands inside it
however busy the machine; the concurrent round holds the first load there until
the second has ended. Then the fault is taken away and B is loaded again at full
speed (the rerun). After the fault
and after the rerun, every table the loader keeps must hold exactly the rows of
A or of B (counts and a checksum of every row, against a clean load of each),
never a mix or a part; the newest ``crates_dump`` row must name that dump; every
signalled process must have exited within 10 s, with the status
docs/stopping.md gives (1 for a partial run, 137 for kill -9, one ERROR line for
a refused load); the rerun after a ``kill -9`` names the killed load; after the
rerun no staging table, scratch file or lock record of a dead load may be left.
An inexact round keeps its processes' stderr (``--logs``). Runs as root (mounts).

    python bench/chaos_crates.py [--rounds 20] [--seed 1] [--scale 0.02]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.chaos_crates_dumps import CORE, FLOWING, RATE, SNAPSHOTS, prepare, serve  # noqa: E402
from bench.chaos_crates_stores import PostgresTarget, SqliteTarget, Target  # noqa: E402
from tests.conftest import TEST_DEFAULTS, crawl_args  # noqa: E402
from tests.interrupts import Trawl  # noqa: E402

#: A signalled process must have exited within this many seconds (docs/stopping.md).
PROMPT = 10.0
SIGNALS = {
    "SIGKILL": signal.SIGKILL,
    "SIGINT": signal.SIGINT,
    "SIGINTx2": signal.SIGINT,
    "SIGTERM": signal.SIGTERM,
}
FOLDER_FAULTS = ("read-only", "small-disk", "disk-fill")
FAULTS = (*SIGNALS, "concurrent", *FOLDER_FAULTS, "truncated", "no-member")
#: The faults that land at a random offset into the load.
TIMED = (*SIGNALS, "concurrent", "disk-fill")
TMPFS_SIZE = "1g"


# --- the store ------------------------------------------------------------------------------------


def which_dump(target: Target, golden: dict[str, dict]) -> str:
    """``A`` or ``B`` when the live tables are exactly that dump's, else a word for what they are."""
    prints = target.fingerprint()
    if not prints:
        return "none"
    snapshot = target.newest_snapshot()
    for name, want in golden.items():
        if prints == want and snapshot == SNAPSHOTS[name][0]:
            return name
    mixed = {t for t in prints if any(prints[t] == g.get(t) for g in golden.values())}
    return f"MIX({len(mixed)}/{len(prints)} tables whole, snapshot {snapshot})"


# --- the processes --------------------------------------------------------------------------------


def settings(store: str, url: str) -> dict[str, object]:
    return {
        **TEST_DEFAULTS,
        "STORE_URI": store,
        "CRATES_DUMP_URL": url,
        "PROGRESS_INTERVAL": 0,
    }


#: Every process of the round running now, its stderr kept for the log of an inexact round.
STARTED: list[Trawl] = []


def start(cwd: Path, store: str, url: str) -> Trawl:
    run = Trawl(cwd, *crawl_args("crates", None, settings(store, url)))
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
    """The ERROR lines; and a traceback's last line (another edit of the checkout half done can
    break ``trawl`` itself: that is said, not taken for the load's fault)."""
    found = [line for line in run.lines if "] ERROR:" in line or line.startswith("trawl: error:")]
    if any(line.startswith("Traceback") for line in run.lines):
        found.append(f"Traceback: {run.lines[-1]}")
    return found


def load(cwd: Path, store: str, url: str, timeout: float = 600) -> tuple[int | None, Trawl]:
    with start(cwd, store, url) as run:
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
    #: The pid of a load killed holding the store's load lock: the rerun must name it.
    killed: int | None = None

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


def signal_round(rnd: Round, cwd: Path, store: str, url: str) -> None:
    with start(cwd, store, url) as run:
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
    if rnd.fault == "SIGKILL":
        rnd.killed = run.proc.pid
    rnd.check(status(code) == want, f"exit {status(code)}, not {want}")
    rnd.check("Traceback" not in run.stderr, "a traceback")


def concurrent_round(rnd: Round, cwd: Path, store: str, url: str) -> None:
    """The first load is held where the offset finds it (its download paused) until the second
    has ended: a second process takes seconds to start on a busy machine, and must meet the first
    still loading."""
    with start(cwd, store, url) as first:
        wait_offset(first, rnd.offset)
        FLOWING.clear()
        try:
            running = first.proc.poll() is None
            with start(cwd, store, url) as second:
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


def failing_round(rnd: Round, cwd: Path, store: str, url: str, expect: str) -> None:
    """A load that must fail by itself: exit 1, one ERROR line containing ``expect``, no traceback."""
    started = time.monotonic()
    code, run = load(cwd, store, url, timeout=120)
    rnd.codes, rnd.took = [code], time.monotonic() - started
    errs = errors(run)
    rnd.check(code == 1, f"exit {code}, not 1")
    rnd.check(len(errs) == 1 and expect in errs[0], f"errors: {[e[-160:] for e in errs][:3]}")
    rnd.check("Traceback" not in run.stderr, "a traceback")


def fill(path: Path) -> None:
    """Write ``path`` until the disk is full (unbuffered: no write left for the close to fail on)."""
    chunk = b"\0" * (1 << 20)
    with path.open("wb", buffering=0) as filler:
        try:
            while filler.write(chunk):
                pass
        except OSError:  # ENOSPC: full
            pass


def fill_round(rnd: Round, cwd: Path, store: str, url: str, mount: Path) -> None:
    """A file fills the store's disk ``offset`` s into the load."""
    with start(cwd, store, url) as run:
        landed = wait_offset(run, rnd.offset)
        signalled = time.monotonic()
        if landed:
            fill(mount / "filler")
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


class Stores:
    """A fresh store per round: SQLite on a tmpfs of its own, or a database on one PostgreSQL server."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.server: Any = None
        if kind == "postgresql":
            from tests.servers.postgres_server import PostgresServer

            self.server = PostgresServer()
            self.server.start()
        #: The faults a store of this kind meets (a PostgreSQL server's folder is not the load's).
        self.faults = FAULTS if kind == "sqlite" else tuple(f for f in FAULTS if f not in FOLDER_FAULTS)

    def new(self, work: Path, name: str) -> tuple[Target, Path | None]:
        """A store (and the tmpfs its folder is, to unmount after)."""
        if self.server is not None:
            return PostgresTarget(self.server.create_database(f"chaos_{name}")), None
        mount = work / "store"
        mount_tmpfs(mount, TMPFS_SIZE)
        return SqliteTarget(mount / "x.db"), mount

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()


def folder_fault(rnd: Round, fault: str, work: Path, store: str, url: str, slow: str, mount: Path) -> None:
    """A fault of the store's folder: read-only, too small, filled mid-load."""
    if fault == "read-only":
        remount(mount, "ro")
        try:
            failing_round(rnd, work, store, url, "")
        finally:
            remount(mount, "rw")
    elif fault == "small-disk":
        remount(mount, f"size={used_bytes(mount) + (2 << 20)}")
        try:
            failing_round(rnd, work, store, url, "store")
        finally:
            remount(mount, f"size={TMPFS_SIZE}")
    else:
        try:
            fill_round(rnd, work, store, slow, mount)
        finally:
            (mount / "filler").unlink(missing_ok=True)


def one_round(
    number: int,
    rng: random.Random,
    stores: Stores,
    base: str,
    golden: dict[str, dict],
    window: float,
    cut: float,
    logs: Path,
) -> Round:
    faults = stores.faults
    fault = faults[(number - 1) % len(faults)] if number <= len(faults) else rng.choice(faults)
    rnd = Round(number, fault)
    rnd.offset = rng.uniform(0.05, window) if fault in TIMED else 0.0
    member = rng.choice(CORE)
    if fault == "no-member":
        rnd.fault = f"no-{member}"
    elif fault == "truncated":
        rnd.fault = f"cut@{cut:.0%}"
    work = Path(tempfile.mkdtemp(prefix="trawl-chaos-crates-"))
    target, mount = stores.new(work, str(number))
    store = target.uri
    good_b, slow_b = f"{base}/b.tar.gz", f"{base}/slow/b.tar.gz"
    try:
        code, run = load(work, store, f"{base}/a.tar.gz")
        if code != 0 or which_dump(target, golden) != "A":
            rnd.problems.append(f"loading A: exit {code}, {errors(run)[:1]}")
            return rnd
        if fault in SIGNALS:
            signal_round(rnd, work, store, slow_b)
        elif fault == "concurrent":
            concurrent_round(rnd, work, store, slow_b)
        elif fault in FOLDER_FAULTS:
            assert mount is not None
            folder_fault(rnd, fault, work, store, good_b, slow_b, mount)
        elif fault == "truncated":
            failing_round(rnd, work, store, f"{base}/b-cut-{number}.tar.gz", "")
        else:
            failing_round(rnd, work, store, f"{base}/b-no-{member}.tar.gz", f"data/{member}.csv")
        rnd.after_fault = which_dump(target, golden)
        rnd.check(rnd.after_fault in ("A", "B"), f"after the fault: {rnd.after_fault}")
        if fault in ("read-only", "small-disk", "truncated", "no-member"):
            rnd.check(rnd.after_fault == "A", "the failed load switched its dump in")
        rnd.rerun_code, rerun = load(work, store, good_b)
        rnd.after_rerun = which_dump(target, golden)
        rnd.check(rnd.rerun_code == 0, f"rerun exit {rnd.rerun_code}: {errors(rerun)[:1]}")
        named = f"the load of pid {rnd.killed} on "
        rnd.check(rnd.killed is None or named in rerun.stderr, "the rerun did not name the killed load")
        rnd.check(rnd.after_rerun == "B", f"after the rerun: {rnd.after_rerun}")
        left = target.leftovers()
        rnd.check(not left, f"left after the rerun: {left}")
    finally:
        if rnd.problems:
            keep_logs(rnd, logs)
        STARTED.clear()
        if mount is not None:
            subprocess.run(["umount", "-l", str(mount)], check=False)
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return rnd


def golden_loads(base: str, stores: Stores) -> dict[str, dict]:
    """Each dump loaded whole into an empty store: its fingerprint."""
    golden: dict[str, dict] = {}
    for which in ("A", "B"):
        work = Path(tempfile.mkdtemp(prefix="trawl-chaos-golden-"))
        target, mount = stores.new(work, f"golden_{which.lower()}")
        with start(work, target.uri, f"{base}/{which.lower()}.tar.gz") as run:
            run.wait_for("Spider opened", timeout=60)
            opened = time.monotonic()
            code, _ = run.finish(timeout=600)
        if code != 0:
            raise SystemExit(f"the clean load of {which} failed: {errors(run)[:2]}")
        golden[which] = target.fingerprint()
        took = time.monotonic() - opened
        kinds = ("crate", "version", "dependency")
        counts = {t: golden[which][f"{k}_records"][0] for t, k in zip(CORE, kinds, strict=True)}
        print(f"dump {which}: {counts}, loaded in {took:.1f} s after the spider opened", flush=True)
        if mount is not None:
            subprocess.run(["umount", "-l", str(mount)], check=False)
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return golden


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scale", type=float, default=0.02, help="dump A's size against crates_gen's")
    logs = Path(tempfile.gettempdir()) / "trawl-chaos-crates-logs"
    parser.add_argument("--logs", type=Path, default=logs, help="the processes' stderr of inexact rounds")
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    options = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("chaos_crates: needs root (it mounts tmpfs folders)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # unmount and clean up as after Ctrl-C
    rng = random.Random(options.seed)
    folder = Path(tempfile.mkdtemp(prefix="trawl-chaos-dumps-"))
    cut_rng = random.Random(options.seed * 7919)
    cuts = [(n, cut_rng.uniform(0.1, 0.95)) for n in range(1, options.rounds + 1)]
    prepare(folder, options.scale, cuts)
    server, base = serve(folder)
    stores = Stores(options.store)
    try:
        golden = golden_loads(base, stores)
        window = (folder / "b.tar.gz").stat().st_size / RATE
        print(f"faulted loads of B served at {RATE / 1e6:.1f} MB/s: {window:.1f} s", flush=True)
        results = []
        started = time.monotonic()
        for number in range(1, options.rounds + 1):
            rnd = one_round(
                number, rng, stores, base, golden, window * 0.9, cuts[number - 1][1], options.logs
            )
            print(rnd.line(), flush=True)
            results.append(rnd)
    finally:
        stores.close()
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
