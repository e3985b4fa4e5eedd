"""A db-dump load's rows written into the store file once, by a process of the load's own.

Before, every row entered a SQLite B-tree twice: bound through ADBC into a batch
file on the reading thread (:mod:`.prestage`), then copied from it into the
staged table by the store's writer (``INSERT ... SELECT``). At 0.25 scale the
writer was busy 15.8 s of the load, 11.6 s of it in those inserts, and the
binding 9.6 s of the reading thread, both in one process. Here the reading
thread hands each batch (its kind's columns, one row per key, the run in
``first_run``/``last_run``) as Arrow IPC to :mod:`.ingest_worker`, which binds it
through ADBC straight into ``<kind>_records_next`` (measured on 3 million
dependency rows: 4.1 s of CPU against 4.8 s for the batch file and the copy,
and off this process's GIL); the store's writer only claims the batch's pages.

Safe as before: the rows land only in staged tables, which no reader reads; the
switch is written by the store's writer once :meth:`Ingester.finish` has seen
the worker commit every batch and exit 0. A worker that fails (a full disk) is
one error line and no switch. A stopped load kills its worker (a transaction it
did not commit is rolled back by SQLite). The worker holds the store's load lock
with the loading process (the lock's file descriptor is inherited): a loading
process killed mid-load leaves the lock held until its worker has read its
stdin's end and gone, so a rerun never empties the staging tables under a batch
still being written.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import subprocess
import sys
import threading
import time
from typing import Any

import orjson
import polars as pl

from trawl.errors import StoreError
from trawl.records.batches import Batch
from trawl.records.kinds import collapse, merge_rules, staged, stored_columns
from trawl.stores.sqlite.bulk import available
from trawl.stores.sqlite.errors import store_error
from trawl.stores.sqlite.ingestturn import Turn
from trawl.stores.sqlite.prestage import INGESTED, prestaged_type

logger = logging.getLogger(__name__)
#: Seconds a worker is given to exit once told the load ended (its last commit is behind it).
END_SECONDS = 60.0


#: The Arrow IPC layout a batch is handed over in.
OLDEST = pl.CompatLevel.oldest()


def keys_increase(frame: pl.DataFrame, key: tuple[str, ...]) -> bool:
    """Does every row's key come after the row before's? Then the keys are unique.

    A dump's tables come in key order: a pass comparing each row with the one before
    costs a sixth of hashing every key (0.06 s of CPU against 0.33 s for 8 million rows
    of versions, dependencies and version downloads)."""
    if frame.height < 2:
        return True
    later, same = pl.lit(False), pl.lit(True)
    for name in key:
        column, before = pl.col(name), pl.col(name).shift()
        later = later | (same & (column > before))
        same = same & (column == before)
    return bool(frame.select(later.slice(1).fill_null(False).all()).item())


def one_per_key(batch_type: type[Batch], frame: pl.DataFrame) -> pl.DataFrame:
    """:func:`~trawl.records.kinds.collapse`, without its hash of every key when they increase."""
    if keys_increase(frame, batch_type.KEY):
        return frame.select(*batch_type.KEY, *merge_rules(batch_type))  # as collapse does then
    return collapse(batch_type, frame)


class Ingester:
    """The worker process of one load into one store file, fed on the reading thread."""

    def __init__(self, store: Any, lock_fd: int | None = None) -> None:
        self.store = store
        self._lock_fd = lock_fd
        self._proc: subprocess.Popen[bytes] | None = None
        self._statements: dict[type[Batch], tuple[str, str]] = {}
        self._mutex = threading.Lock()
        self._closed = False
        #: Seconds the reading thread waited for the worker to take a batch.
        self._blocked = 0.0
        #: The store's writer goes first at the write lock while the worker runs (:mod:`.ingestturn`).
        self._turn: Turn | None = None

    @classmethod
    def for_store(cls, store: Any, lock_fd: int | None = None) -> Ingester | None:
        """An ingester for a SQLite store file with the driver installed, else None (the usual way)."""
        from trawl.stores.sqlite.store import SqliteStore

        if isinstance(store, SqliteStore) and available(store.path):
            return cls(store, lock_fd)
        return None

    def _start(self) -> subprocess.Popen[bytes]:
        with self._mutex:
            if self._closed:
                raise StoreError("the load was stopped")
            if self._proc is None:
                command = [sys.executable, "-m", "trawl.stores.sqlite.ingest_worker"]
                command += [self.store.path, str(self.store.synchronous)]
                self._turn = Turn.made()
                fds = () if self._lock_fd is None else (self._lock_fd,)
                if self._turn is not None:
                    command.append(str(self._turn.fd))
                    fds += (self._turn.fd,)
                self._proc = subprocess.Popen(
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    pass_fds=fds,
                    start_new_session=True,  # a Ctrl-C is the loading process's to handle
                )
                self.store.turn = self._turn
            return self._proc

    def _statements_for(self, batch_type: type[Batch]) -> tuple[str, str]:
        """The staged table (made now, on the store's writer) and the kind's merge from ``{source}``."""
        known = self._statements.get(batch_type)
        if known is None:
            twin = prestaged_type(staged(batch_type))
            store = self.store
            try:
                table = store.on_writer(lambda: store.in_turn(lambda: store._table(store.connection, twin)))
            except sqlite3.Error as exc:  # a full disk as the staged table is made: one line, no traceback
                raise store_error(f"cannot write the dump's rows into {store.path!r}", exc) from None
            known = self._statements[batch_type] = (table.table, table._upsert_from)
        return known

    def put(self, batch_type: type[Batch], frame: pl.DataFrame) -> tuple[str, pl.DataFrame]:
        """The batch's rows to the worker; :data:`~.prestage.INGESTED` and the rows (one per key,
        :func:`one_per_key`: what the batch then holds, as the store returns it)."""
        table, upsert = self._statements_for(batch_type)
        rows = one_per_key(batch_type, frame)
        run = int(self.store.run)
        runs = [pl.lit(run, pl.Int64).alias("first_run"), pl.lit(run, pl.Int64).alias("last_run")]
        # The oldest Arrow layout (plain strings): polars writes its string views as IPC at
        # 2.5x the CPU (3 million dependencies and 5 million versions and downloads: 0.85 s
        # against 0.35 s); the worker reads either into the same frame.
        ipc = rows.select(*stored_columns(batch_type), *runs).write_ipc_stream(None, compat_level=OLDEST)
        data = ipc.getvalue()
        header = orjson.dumps({"table": table, "upsert": upsert, "bytes": len(data)}) + b"\n"
        proc = self._start()
        assert proc.stdin is not None
        start = time.perf_counter()
        try:
            proc.stdin.write(header)
            proc.stdin.write(data)
            proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            raise StoreError(self._failure()) from None
        self._blocked += time.perf_counter() - start
        return INGESTED, rows

    def handed(self, path: str) -> None:
        """The batch went to the pipeline (nothing to do: its rows are the worker's)."""

    def finish(self) -> None:
        """Every batch was put: wait for the worker to commit them all (``StoreError`` if it did not)."""
        with self._mutex:
            proc = self._proc
        if proc is None:
            return
        try:
            self._finish(proc)
        finally:
            self._end_turn()

    def _finish(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(b'{"end": true}\n')
            proc.stdin.flush()
            proc.stdin.close()
        except (BrokenPipeError, ValueError, OSError):
            raise StoreError(self._failure()) from None
        try:
            said = proc.stdout.read().decode(errors="replace")
            proc.wait(END_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise StoreError("the dump's rows were not all written: its writing process hung") from None
        if proc.returncode != 0 or not said.startswith("ok "):
            raise StoreError(self._failure())
        _, batches, rows, cpu, waited, idle = said.split()
        logger.info(
            "the store's ingest process wrote %s rows in %s batches: CPU %s s, %s s waiting for the"
            " write lock, %s s for batches (the pipe: %.2f s)",
            f"{int(rows):,}", batches, cpu, waited, idle, self._blocked,
        )  # fmt: skip
        with self._mutex:
            self._proc = None
            self._closed = True

    def _end_turn(self) -> None:
        """The worker is gone: the store's writer takes the lock as any writer again (once: a
        finish and a discard on two threads must not close a descriptor number twice)."""
        with self._mutex:
            turn, self._turn = self._turn, None
        if turn is not None:
            self.store.turn = None
            turn.close()

    def _failure(self) -> str:
        """The worker's one line, once it has exited (killed meanwhile if it had not)."""
        proc = self._proc
        if proc is None:
            return "cannot write the dump's rows"
        with contextlib.suppress(OSError, ValueError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(END_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        said = proc.stderr.read().decode(errors="replace").strip() if proc.stderr is not None else ""
        code = proc.returncode
        ended = f"was killed (signal {-code})" if code < 0 else f"ended with status {code}"
        line = said.splitlines()[-1] if said else f"the writing process {ended}"
        return f"cannot write the dump's rows into {self.store.path!r}: {line}"

    def discard(self) -> None:
        """The load stopped or failed: the worker is killed (what it had not committed is rolled back)."""
        with self._mutex:
            proc, self._proc = self._proc, None
            self._closed = True
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.kill()
        proc.wait()
        self._end_turn()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError, ValueError):
                if pipe is not None:
                    pipe.close()
