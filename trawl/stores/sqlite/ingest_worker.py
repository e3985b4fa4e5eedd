"""The process that writes a db-dump load's rows into the store file, each row once (:mod:`.ingest`).

Run as ``python -m trawl.stores.sqlite.ingest_worker STORE SYNCHRONOUS [TURN_FD]``. It
reads messages on stdin, ahead of the batch it writes (:class:`ReadAhead`): a JSON
header line (``table``, ``upsert``, ``bytes``; or ``{"end": true}``) and that many
bytes of an Arrow IPC stream, and writes each batch in a transaction of its own
through ADBC's SQLite driver (binding in C): appended to the staged table, or, when
a key is staged already (the crate kind's three tables), loaded into a temporary
table and merged by the kind's rules (the ``upsert`` statement). On ``end`` it says
``ok`` on stdout (with its batches, rows, CPU seconds and seconds waiting for the
write lock) and exits 0.

Its own process because ADBC's driver carries its own copy of SQLite, and two
copies in one process do not see each other's locks (sqlite.org/howtocorrupt.html
2.2.1): two processes do, so this one and the store's own connection take
turns at the file's write lock like any two writers; ``TURN_FD`` is the loading
process's flag (:mod:`.ingestturn`), up while its own writer wants the lock, and
no transaction starts while it is. Stdin's end without ``end`` (the load stopped,
its process killed) ends it without another transaction. It ignores SIGINT and
SIGTERM (its own session): the loading process ends it. It imports polars and the
driver only: no Scrapy.
"""

from __future__ import annotations

import json
import queue
import resource
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import BinaryIO

from trawl.stores.sqlite.ingestturn import TurnWaiter
from trawl.stores.sqlite.schema import CHECKPOINT_PAGES

#: The temporary table a batch that meets staged keys is merged from.
INCOMING = "trawl_ingest"
#: The store's connection waits 60 s for the write lock; so does this one.
BUSY_MS = 60_000
#: Bytes of batches read ahead of the one being written. Read a batch at a time, the worker sat
#: idle 11 s of a 55 s full-scale load while the loading process made the next batch, and the
#: loading process waited 26 s for the worker to take one: each ran while the other waited. A
#: 50,000-row batch is 2-5 MB of Arrow IPC, so this holds 25-60 of them.
READ_AHEAD_BYTES = 128 * 2**20
#: What the read-ahead hands over when the loading process went without ``end``.
GONE = None


class ReadAhead:
    """Batches read from the loading process on a thread of their own, up to a byte budget.

    Read in this thread, a batch's write (ADBC releases the GIL) and the next batch's
    read overlap, and the loading process never blocks on a full pipe while the budget
    lasts. ``get`` gives a ``(header, data)`` pair, ``({"end": True}, b"")`` or :data:`GONE`.
    """

    def __init__(self, source: BinaryIO, budget: int = READ_AHEAD_BYTES) -> None:
        self._source = source
        self._budget = budget
        self._held = 0
        self._room = threading.Condition()
        self._batches: queue.Queue[tuple[dict, bytes] | None] = queue.Queue()
        #: Set once the loading process went without ``end``: nothing more is written.
        self.gone = threading.Event()
        threading.Thread(target=self._read, name="read-ahead", daemon=True).start()

    def _read(self) -> None:
        try:
            while True:
                line = self._source.readline()
                if not line:
                    break
                header = json.loads(line)
                if header.get("end"):
                    self._batches.put((header, b""))
                    return
                size = header["bytes"]
                with self._room:  # one batch over the budget still goes in when nothing is held
                    self._room.wait_for(lambda size=size: not self._held or self._held + size <= self._budget)
                    self._held += size
                data = self._source.read(size)
                if len(data) != size:
                    break
                self._batches.put((header, data))
        except (OSError, ValueError):  # a pipe closed under it, a header that is no JSON
            pass
        self.gone.set()
        self._batches.put(GONE)

    def get(self) -> tuple[dict, bytes] | None:
        return self._batches.get()

    def done(self, data: bytes) -> None:
        """A batch was written: its bytes are the budget's again."""
        with self._room:
            self._held -= len(data)
            self._room.notify()


def _execute(connection: object, sql: str) -> None:
    cursor = connection.cursor()  # type: ignore[attr-defined]
    try:
        cursor.execute(sql)
    finally:
        cursor.close()


def _begin(connection: object, turn: Callable[[], None]) -> None:
    turn()  # the loading process's writer first, when it waits for the lock
    _execute(connection, "BEGIN IMMEDIATE")


def _write(connection: object, dbapi: object, header: dict, frame: object, turn: Callable[[], None]) -> float:
    """The batch in one transaction; the seconds spent waiting for the write lock."""
    table, upsert = header["table"], header["upsert"]
    start = time.perf_counter()
    _begin(connection, turn)
    waited = time.perf_counter() - start
    cursor = connection.cursor()  # type: ignore[attr-defined]
    try:
        try:
            cursor.adbc_ingest(table, frame, mode="append")
            _execute(connection, "COMMIT")
            return waited
        except dbapi.Error as exc:  # type: ignore[attr-defined]
            if "UNIQUE constraint failed" not in str(exc):  # the driver says INTERNAL, not integrity
                raise
            _execute(connection, "ROLLBACK")  # a key staged before: merged by the kind's rules
        _begin(connection, turn)
        cursor.adbc_ingest(INCOMING, frame, mode="replace", temporary=True)
        _execute(connection, upsert.format(source=f"temp.{INCOMING}"))
        _execute(connection, f"DROP TABLE temp.{INCOMING}")
        _execute(connection, "COMMIT")
        return waited
    finally:
        cursor.close()


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    path, synchronous = sys.argv[1], sys.argv[2]
    turn_fd = int(sys.argv[3]) if len(sys.argv) > 3 else None
    import adbc_driver_sqlite.dbapi as dbapi
    import polars as pl

    out = sys.stdout
    batches = rows = 0
    waited = idle = 0.0
    try:
        with dbapi.connect(path, autocommit=True) as connection:
            _execute(connection, f"PRAGMA busy_timeout={BUSY_MS}")
            _execute(connection, f"PRAGMA synchronous={synchronous}")
            _execute(connection, f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
            ahead = ReadAhead(sys.stdin.buffer)
            waiter = TurnWaiter(turn_fd) if turn_fd is not None else None
            turn = (lambda: waiter.wait(ahead.gone)) if waiter is not None else (lambda: None)
            while True:
                start = time.perf_counter()
                got = ahead.get()
                idle += time.perf_counter() - start
                if got is GONE:
                    return 3  # the loading process went without ``end``: nothing more is written
                header, data = got
                if header.get("end"):
                    usage = resource.getrusage(resource.RUSAGE_SELF)
                    cpu = usage.ru_utime + usage.ru_stime
                    out.write(f"ok {batches} {rows} {cpu:.2f} {waited:.2f} {idle:.2f}\n")
                    out.flush()
                    return 0
                if ahead.gone.is_set():
                    return 3  # the loader is gone: the batches read ahead are not written
                frame = pl.read_ipc_stream(data)
                waited += _write(connection, dbapi, header, frame, turn)
                batches, rows = batches + 1, rows + frame.height
                ahead.done(data)
    except Exception as exc:  # noqa: BLE001 - the driver's errors (a full disk...): one line for the loader
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        sys.stderr.write(first + "\n")
        sys.stderr.flush()
        return 1


if __name__ == "__main__":
    sys.exit(main())
