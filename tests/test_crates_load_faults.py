"""A crates.io db-dump load that fails, is stopped, or meets another load: real processes, real signals.

Each fault happens to a load as it happens in production, most of them after a
small first dump was loaded (the snapshot the fault must leave live): a store
error mid-load (a trigger on the page ledger that fails like a full disk), a
SIGINT once rows are staged or while the reader waits on a stalled download, a
dump without ``versions.csv`` after a failed load left staged rows, a second
load started while the first runs (SQLite and PostgreSQL), a load killed with
``kill -9``. No test sleeps for a guessed time: each polls the store or the
process with a deadline.
"""

from __future__ import annotations

import gzip
import os
import signal
import socket
import sqlite3
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TEST_DEFAULTS, CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.helpers.crates_tables import EXPECTED_VERSIONS, TABLES, VERSION_SQL, many_versions
from tests.interrupts import Trawl
from tests.servers.crates_dump import FakeCratesDumpServer, make_dump

#: A failed or stopped load must end within this many seconds of its cause.
PROMPT = 10.0
FIRST = "2026-09-01-020003"
SECOND = "2026-09-02-020001"
THIRD = "2026-09-03-020001"
FOURTH = "2026-09-04-020001"
SETTINGS: dict[str, object] = {"STORE_URI": "sqlite:///x.db", "CRATES_BATCH_ROWS": 1000}


def dump_of(snapshot: str, versions: int | None = None, drop: tuple[str, ...] = ()) -> bytes:
    """The test dump as of ``snapshot`` (``versions``: that many generated rows), without ``drop``."""
    tables = dict(TABLES)
    if versions is not None:
        tables["versions"] = many_versions(versions)
    for name in drop:
        del tables[name]
    day = snapshot[:10]
    return make_dump(tables, snapshot=snapshot, timestamp=f"{day}T02:00:01Z", compresslevel=1)


def cut_after_the_last_member(dump: bytes) -> bytes:
    """``dump`` whole up to the end of its last member's data (``versions.csv``), then cut: every
    table is read, then the archive fails as a download cut short does."""
    tar = gzip.decompress(dump)
    end = len(tar.rstrip(b"\0"))
    end += -end % 512
    deflate = zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: with a gzip header
    return deflate.compress(tar[:end]) + deflate.flush(zlib.Z_FULL_FLUSH)


def crawl(workdir: Path, url: str, timeout: float = 60, **settings: object) -> CrawlResult:
    args = crawl_args("crates", None, {**SETTINGS, "CRATES_DUMP_URL": url, **settings})
    return run_scrapy(workdir, *args, timeout=timeout)


def trawl(workdir: Path, url: str, **settings: object) -> Trawl:
    """A crawl to signal (``trawl crawl crates``, the console's code) with the tests' settings."""
    given = {**TEST_DEFAULTS, **SETTINGS, "CRATES_DUMP_URL": url, **settings}
    return Trawl(workdir, *crawl_args("crates", None, given))


def query(db: Path, sql: str, *params: Any) -> list[tuple]:
    con = sqlite3.connect(db, timeout=30)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def staged(db: Path, table: str = "version_records_next") -> int:
    """Rows in a staging table now (0 while it does not exist)."""
    try:
        return int(query(db, f"SELECT count(*) FROM {table}")[0][0])
    except sqlite3.OperationalError:
        return 0


def snapshots(db: Path) -> list[str]:
    return [row[0] for row in query(db, "SELECT snapshot FROM crates_dump_records ORDER BY snapshot")]


def staging_tables(db: Path) -> list[str]:
    return [r[0] for r in query(db, "SELECT name FROM sqlite_master WHERE name LIKE '%_records_next'")]


def load_first(workdir: Path, server: FakeCratesDumpServer) -> None:
    server.dump = dump_of(FIRST)
    first = crawl(workdir, server.dump_url)
    assert first.returncode == 0, first.stderr[-3000:]
    assert snapshots(workdir / "x.db") == [FIRST]


def assert_first_is_live(workdir: Path) -> None:
    """The first dump is the live snapshot, whole."""
    assert snapshots(workdir / "x.db") == [FIRST]
    assert query(workdir / "x.db", VERSION_SQL) == EXPECTED_VERSIONS


# --- a store error ------------------------------------------------------------------------------


def test_a_store_error_mid_load_ends_the_run_at_once_in_one_error_line(workdir: Path) -> None:
    """Before: ``ERROR: store: cannot write ... stopping the crawl``, then the progress line every
    10 s for ever (Scrapy 2.19 never looks at a closing scraper again once the last item from
    ``start()`` is done)."""
    with FakeCratesDumpServer(b"") as server:
        load_first(workdir, server)
        with sqlite3.connect(workdir / "x.db") as con:  # the third batch of versions fails, as a full disk
            con.execute(
                "CREATE TRIGGER disk_full BEFORE INSERT ON pages WHEN NEW.page LIKE '%/versions#3'"
                " BEGIN SELECT RAISE(ABORT, 'database or disk is full (test)'); END"
            )
        server.dump = dump_of(SECOND, versions=5000)
        started = time.monotonic()
        result = crawl(workdir, server.dump_url, timeout=60, BATCH_COALESCE_ROWS=0)
        took = time.monotonic() - started
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr[-3000:]
    assert took < PROMPT + 5, f"the failed load took {took:.1f} s"
    assert len(result.errors) == 1, result.errors
    assert "store: cannot write" in result.errors[0] and "disk is full (test)" in result.errors[0]
    assert_first_is_live(workdir)


# --- SIGINT -------------------------------------------------------------------------------------


def test_sigint_mid_load_ends_within_seconds_keeps_the_snapshot_and_a_rerun_completes(
    workdir: Path,
) -> None:
    """Before: ``Received SIGINT, shutting down gracefully``, then progress lines until killed."""
    with FakeCratesDumpServer(b"") as server:
        load_first(workdir, server)
        server.dump = dump_of(SECOND, versions=30_000)
        with trawl(workdir, server.dump_url) as run:
            run.wait_until(lambda: staged(workdir / "x.db") >= 2000)
            run.send(signal.SIGINT)
            code, took = run.finish(timeout=PROMPT * 3)
        assert code == 1, run.stderr[-3000:]
        assert took < PROMPT, f"stopped {took:.1f} s after SIGINT"
        assert "crates: stopped while reading the db-dump; it is read again next run" in run.stderr
        assert_first_is_live(workdir)

        rerun = crawl(workdir, server.dump_url)
    assert_no_traceback(rerun)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert snapshots(workdir / "x.db") == [FIRST, SECOND]
    assert query(workdir / "x.db", "SELECT count(*), min(id), max(id) FROM version_records") == [
        (30_000, 1000, 30_999)
    ]
    assert staging_tables(workdir / "x.db") == []


class StallingDumpServer:
    """Announces the whole dump, sends its first ``sent`` bytes, then holds the connection open."""

    def __init__(self, dump: bytes, sent: int) -> None:
        self.dump, self.sent = dump, sent
        self.release = threading.Event()
        #: Once released, the rest of the dump is sent (else the answer ends cut short).
        self.send_rest = False
        self._httpd: ThreadingHTTPServer | None = None

    def __enter__(self) -> StallingDumpServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self.send_response(200)
                self.send_header("Content-Type", "application/gzip")
                self.send_header("Content-Length", str(len(server.dump)))
                self.end_headers()
                self.wfile.write(server.dump[: server.sent])
                self.wfile.flush()
                server.release.wait(60)
                if server.send_rest:
                    self.wfile.write(server.dump[server.sent :])

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def dump_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/db-dump.tar.gz"


def test_sigint_while_the_reader_waits_on_a_stalled_download_ends_within_seconds(workdir: Path) -> None:
    """The read-ahead thread blocked in the stream, the download on the wire: one SIGINT ends both."""
    with FakeCratesDumpServer(b"") as server:
        load_first(workdir, server)
    dump = dump_of(SECOND, versions=40_000)
    with StallingDumpServer(dump, len(dump) // 2) as stalling, trawl(workdir, stalling.dump_url) as run:
        run.wait_until(lambda: staged(workdir / "x.db", "crate_records_next") > 0)
        run.send(signal.SIGINT)
        code, took = run.finish(timeout=PROMPT * 3)
    assert code == 1, run.stderr[-3000:]
    assert took < PROMPT, f"stopped {took:.1f} s after SIGINT"
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert "crates: stopped while reading the db-dump; it is read again next run" in run.stderr
    assert_first_is_live(workdir)


def ingest_workers(parent: int) -> list[int]:
    """The store's ingest processes the crawl ``parent`` started (:mod:`trawl.stores.sqlite.ingest`)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        ppid = next((line.split()[1] for line in status.splitlines() if line.startswith("PPid:")), "")
        if ppid == str(parent) and b"ingest_worker" in command:
            found.append(int(entry.name))
    return found


def test_the_ingest_process_killed_mid_load_is_one_error_line_and_the_rerun_completes(workdir: Path) -> None:
    """The process that writes the rows into the store dies (the OOM killer): the load ends in one
    ERROR line naming the store, nothing switches in, no process is left, and a rerun loads it."""
    with FakeCratesDumpServer(b"") as server:
        load_first(workdir, server)
        dump = dump_of(SECOND, versions=40_000)
        stalling = StallingDumpServer(dump, len(dump) // 2)
        # Every batch goes to the ingest process (a smaller one is coalesced by the store's writer).
        with stalling, trawl(workdir, stalling.dump_url, BATCH_COALESCE_ROWS=0) as run:
            run.wait_until(lambda: staged(workdir / "x.db", "crate_records_next") > 0)
            workers = ingest_workers(run.proc.pid)
            assert len(workers) == 1, workers
            os.kill(workers[0], signal.SIGKILL)
            stalling.send_rest = True
            stalling.release.set()  # the next batch meets the dead process
            code, _ = run.finish(timeout=PROMPT * 3)
        assert code == 1, run.stderr[-3000:]
        assert "Traceback" not in run.stderr, run.stderr[-3000:]
        errors = [line for line in run.stderr.splitlines() if " ERROR: " in line]
        assert len(errors) == 1, errors
        said = "crates: cannot write the dump's rows into 'x.db': the writing process was killed (signal 9)"
        assert said in errors[0], errors
        assert_first_is_live(workdir)
        assert ingest_workers(run.proc.pid) == []

        server.dump = dump
        rerun = crawl(workdir, server.dump_url)
    assert_no_traceback(rerun)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert snapshots(workdir / "x.db") == [FIRST, SECOND]
    assert query(workdir / "x.db", "SELECT count(*), min(id), max(id) FROM version_records") == [
        (40_000, 1000, 40_999)
    ]
    assert staging_tables(workdir / "x.db") == []


def test_a_stop_wakes_the_step_waiting_for_the_archive_and_ends_the_read_ahead_thread() -> None:
    """The reading thread waits for the read-ahead thread, which waits for a download that stalled:
    the stop ends the wait at once (:class:`Stopped`), and closing the stream ends the thread."""
    from trawl.sources.crates.dump import DumpInfo, read_dump
    from trawl.sources.crates.prefetch import Stopped, StopSignal
    from trawl.sources.crates.stream import BodyStream

    dump = dump_of(SECOND, versions=40_000)
    stream, stop = BodyStream(), StopSignal()
    stream.write(dump[: len(dump) // 2])  # then nothing more: the read-ahead thread waits in read()
    batches = read_dump(stream, DumpInfo(), 1000, stop=stop)
    outcome: list[BaseException] = []

    def step_until_stopped() -> None:
        try:
            while next(batches, None) is not None:
                pass
        except BaseException as exc:  # noqa: BLE001 - the test looks at what ended it
            outcome.append(exc)

    reader = threading.Thread(target=step_until_stopped, daemon=True)
    reader.start()
    deadline = time.monotonic() + PROMPT
    while stream.received and stream._buffered and time.monotonic() < deadline:  # half read ahead
        time.sleep(0.01)  # polling for the read-ahead thread to take what was sent
    stop.set()
    reader.join(PROMPT)
    assert not reader.is_alive(), "the step went on waiting after the stop"
    assert len(outcome) == 1 and isinstance(outcome[0], Stopped), outcome
    stream.close()
    readers = [t for t in threading.enumerate() if t.name == "trawl-crates-inflate"]
    for thread in readers:
        thread.join(PROMPT)
    assert not any(t.is_alive() for t in readers), "the read-ahead thread outlived the closed stream"


# --- a dump without a table ---------------------------------------------------------------------


def test_a_dump_without_a_core_table_is_refused_and_no_stale_staged_row_switches_in(workdir: Path) -> None:
    """A load that failed at the archive's end staged the second dump's versions and keywords. Before:
    a third dump without ``versions.csv`` loaded with exit 0, and ``version_records`` held them."""
    db = workdir / "x.db"
    with FakeCratesDumpServer(b"") as server:
        load_first(workdir, server)
        server.dump = cut_after_the_last_member(dump_of(SECOND, versions=10))
        failed = crawl(workdir, server.dump_url)
        assert failed.returncode == 1 and "cut short" in failed.stderr, failed.stderr[-3000:]
        assert staged(db) == 10 and staged(db, "keyword_records_next") == 2

        server.dump = dump_of(THIRD, drop=("versions",))
        refused = crawl(workdir, server.dump_url)
        assert_no_traceback(refused)
        assert refused.returncode == 1, refused.stderr[-3000:]
        assert len(refused.errors) == 1, refused.errors
        assert f"{THIRD}/data/versions.csv" in refused.errors[0]
        assert_first_is_live(workdir)
        assert staged(db) == 0  # the failed load's rows went when this one started

        server.dump = dump_of(FOURTH, drop=("keywords",))  # no keywords upstream: none held after
        fourth = crawl(workdir, server.dump_url)
    assert fourth.returncode == 0, fourth.stderr[-3000:]
    assert snapshots(db) == [FIRST, FOURTH]
    assert query(db, VERSION_SQL) == EXPECTED_VERSIONS
    assert query(db, "SELECT count(*) FROM keyword_records") == [(0,)]
    assert staging_tables(db) == []


def test_a_resumed_load_writes_again_the_batches_whose_staged_rows_it_dropped(workdir: Path) -> None:
    """``JOBDIR``: the rerun goes on under the stopped run, whose page ledger holds the pages it
    staged. It empties the staging tables as every load does, so it forgets those pages too:
    taken for stored, they were skipped, and the snapshot lacked their rows."""
    db, jobdir = workdir / "x.db", workdir / "job"
    with FakeCratesDumpServer(dump_of(SECOND, versions=20_000)) as server:
        with trawl(workdir, server.dump_url, JOBDIR=jobdir) as run:
            run.wait_until(lambda: staged(db) >= 3000)
            run.send(signal.SIGINT)
            code, _ = run.finish(timeout=PROMPT * 3)
        assert code == 1, run.stderr[-3000:]
        resumed = crawl(workdir, server.dump_url, JOBDIR=jobdir)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming run" in resumed.stderr
    assert query(db, "SELECT count(*), min(id), max(id) FROM version_records") == [(20_000, 1000, 20_999)]
    assert snapshots(db) == [SECOND]


# --- two loads at once, a crashed load ------------------------------------------------------------


def test_a_second_load_into_the_same_store_is_refused_naming_the_running_one(workdir: Path) -> None:
    """Before: both loaded into the same staging tables and scratch file; an old dump was switched in
    with part of its rows and exit 0, the other run failed with ``database is locked``."""
    db = workdir / "x.db"
    with FakeCratesDumpServer(dump_of(SECOND, versions=40_000)) as server:
        with trawl(workdir, server.dump_url) as running:
            running.wait_until(lambda: staged(db) >= 1000)
            second = crawl(workdir, server.dump_url)
            assert running.proc.poll() is None, "the first load ended before the second was refused"
            code, _ = running.finish(timeout=60)
        requests = len(server.requests)
    assert code == 0, running.stderr[-3000:]
    assert_no_traceback(second)
    assert second.returncode == 1, second.stderr[-3000:]
    assert len(second.errors) == 1, second.errors
    refusal = second.errors[0]
    assert "another crates load is writing this store" in refusal, refusal
    assert f"pid {running.proc.pid} on {socket.gethostname()}, started 20" in refusal, refusal
    assert requests == 1, "the refused load fetched the dump"
    assert snapshots(db) == [SECOND]
    assert query(db, "SELECT count(*), min(id), max(id) FROM version_records") == [(40_000, 1000, 40_999)]
    assert staging_tables(db) == []
    assert list(workdir.glob("x.db-load-*")) == []
    assert list(workdir.glob("x.db-stage-*")) == []  # every batch's own file merged and removed
    assert (workdir / "x.db-load.lock").read_bytes() == b""  # let go: no load holds it, none died


def test_a_killed_loads_leftovers_are_removed_once_its_owner_is_gone_and_only_then(workdir: Path) -> None:
    """``kill -9`` mid-load: the lock goes with the process; the next load names the dead one, drops
    its staged rows and removes its scratch file, not the scratch file of a process still running."""
    db = workdir / "x.db"
    host = socket.gethostname()
    with FakeCratesDumpServer(dump_of(SECOND, versions=20_000)) as server:
        with trawl(workdir, server.dump_url) as killed:
            killed.wait_until(lambda: staged(db) >= 1000)
            killed.proc.send_signal(signal.SIGKILL)
            killed.proc.wait(30)
        scratch = workdir / f"x.db-load-{killed.proc.pid}@{host}"
        assert scratch.exists()  # the killed load's scratch file, named for its owner
        assert str(killed.proc.pid) in (workdir / "x.db-load.lock").read_text()  # the lock's last holder
        alive = workdir / f"x.db-load-{os.getpid()}@{host}"  # a live process's: not a leftover
        alive.write_bytes(b"")
        # A batch's own file (staged on the reading thread) of the dead load, and of a live process.
        dead_batch = workdir / f"x.db-stage-{killed.proc.pid}@{host}-7"
        dead_batch.write_bytes(b"")
        live_batch = workdir / f"x.db-stage-{os.getpid()}@{host}-1"
        live_batch.write_bytes(b"")

        rerun = crawl(workdir, server.dump_url)
    assert_no_traceback(rerun)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"crates: the load of pid {killed.proc.pid} on {host} (started 20" in rerun.stderr, rerun.stderr
    assert "emptied the staging tables a load that did not end left (" in rerun.stderr
    assert not scratch.exists()
    assert alive.exists()
    assert sorted(p.name for p in workdir.glob("x.db-stage-*")) == [live_batch.name]
    assert snapshots(db) == [SECOND]
    assert query(db, "SELECT count(*) FROM version_records") == [(20_000,)]
    assert staging_tables(db) == []


# --- PostgreSQL ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg() -> Any:
    from tests.servers.postgres_server import PostgresServer

    with PostgresServer() as server:
        yield server


def test_two_loads_into_one_postgresql_store_the_second_refused_and_a_killed_ones_leftovers_removed(
    pg: Any, workdir: Path
) -> None:
    import uuid

    import psycopg

    uri = pg.create_database(f"l_{uuid.uuid4().hex[:12]}")
    host = socket.gethostname()

    def pg_rows(sql: str) -> list[tuple]:
        with psycopg.connect(uri) as con:
            return con.execute(sql).fetchall()

    def staged_pg() -> int:
        try:
            return int(pg_rows("SELECT count(*) FROM version_records_next")[0][0])
        except psycopg.errors.UndefinedTable:
            return 0

    with FakeCratesDumpServer(dump_of(SECOND, versions=40_000)) as server:
        with trawl(workdir, server.dump_url, STORE_URI=uri) as running:
            running.wait_until(lambda: staged_pg() >= 1000)
            second = crawl(workdir, server.dump_url, STORE_URI=uri)
            assert running.proc.poll() is None, "the first load ended before the second was refused"
            running.proc.send_signal(signal.SIGKILL)
            running.proc.wait(30)
        assert second.returncode == 1, second.stderr[-3000:]
        assert len(second.errors) == 1, second.errors
        assert f"pid {running.proc.pid} on {host}, started 20" in second.errors[0], second.errors
        assert "another crates load is writing this store" in second.errors[0]
        assert len(server.requests) == 1, "the refused load fetched the dump"

        server.dump = dump_of(THIRD)  # the next day's
        rerun = crawl(workdir, server.dump_url, STORE_URI=uri)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"the load of pid {running.proc.pid} on {host} (started 20" in rerun.stderr, rerun.stderr[-3000:]
    assert pg_rows("SELECT snapshot FROM crates_dump_records") == [(THIRD,)]
    assert pg_rows(VERSION_SQL) == EXPECTED_VERSIONS
    assert pg_rows("SELECT tablename FROM pg_tables WHERE tablename LIKE '%_records_next'") == []
    assert pg_rows("SELECT count(*) FROM trawl_loads") == [(0,)]  # let go: no load holds it, none died
