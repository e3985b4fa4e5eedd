"""The process that writes a db-dump load's rows into the store file, each row once (:mod:`.ingest`).

Run as ``python -m trawl.stores.sqlite.ingest_worker STORE SYNCHRONOUS``. It reads
messages on stdin: a JSON header line (``table``, ``upsert``, ``bytes``; or
``{"end": true}``) and that many bytes of an Arrow IPC stream, and writes each
batch in a transaction of its own through ADBC's SQLite driver (binding in C):
appended to the staged table, or, when a key is staged already (the crate kind's
three tables), loaded into a temporary table and merged by the kind's rules (the
``upsert`` statement). On ``end`` it says ``ok`` on stdout (with its batches, rows, CPU seconds and seconds
waiting for the write lock) and exits 0.

Its own process because ADBC's driver carries its own copy of SQLite, and two
copies in one process do not see each other's locks (sqlite.org/howtocorrupt.html
2.2.1): two processes do, so this one and the store's own connection take
turns at the file's write lock like any two writers. Stdin's end without
``end`` (the load stopped, its process killed) ends it without another
transaction. It ignores SIGINT and SIGTERM (its own session): the loading
process ends it. It imports polars and the driver only: no trawl, no Scrapy.
"""

from __future__ import annotations

import json
import resource
import signal
import sys
import time

from trawl.stores.sqlite.schema import CHECKPOINT_PAGES

#: The temporary table a batch that meets staged keys is merged from.
INCOMING = "trawl_ingest"
#: The store's connection waits 60 s for the write lock; so does this one.
BUSY_MS = 60_000


def _execute(connection: object, sql: str) -> None:
    cursor = connection.cursor()  # type: ignore[attr-defined]
    try:
        cursor.execute(sql)
    finally:
        cursor.close()


def _write(connection: object, dbapi: object, header: dict, frame: object) -> float:
    """The batch in one transaction; the seconds spent waiting for the write lock."""
    table, upsert = header["table"], header["upsert"]
    start = time.perf_counter()
    _execute(connection, "BEGIN IMMEDIATE")
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
        _execute(connection, "BEGIN IMMEDIATE")
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
    import adbc_driver_sqlite.dbapi as dbapi
    import polars as pl

    source, out = sys.stdin.buffer, sys.stdout
    batches = rows = 0
    waited = idle = 0.0
    try:
        with dbapi.connect(path, autocommit=True) as connection:
            _execute(connection, f"PRAGMA busy_timeout={BUSY_MS}")
            _execute(connection, f"PRAGMA synchronous={synchronous}")
            _execute(connection, f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
            while True:
                start = time.perf_counter()
                line = source.readline()
                idle += time.perf_counter() - start
                if not line:
                    return 3  # the loading process went without ``end``: nothing more is written
                header = json.loads(line)
                if header.get("end"):
                    usage = resource.getrusage(resource.RUSAGE_SELF)
                    cpu = usage.ru_utime + usage.ru_stime
                    out.write(f"ok {batches} {rows} {cpu:.2f} {waited:.2f} {idle:.2f}\n")
                    out.flush()
                    return 0
                data = source.read(header["bytes"])
                if len(data) != header["bytes"]:
                    return 3
                frame = pl.read_ipc_stream(data)
                waited += _write(connection, dbapi, header, frame)
                batches, rows = batches + 1, rows + frame.height
    except Exception as exc:  # noqa: BLE001 - the driver's errors (a full disk...): one line for the loader
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        sys.stderr.write(first + "\n")
        sys.stderr.flush()
        return 1


if __name__ == "__main__":
    sys.exit(main())
