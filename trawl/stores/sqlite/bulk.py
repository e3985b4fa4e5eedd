"""A staged kind's batch into SQLite without a Python tuple a row: Arrow columns through ADBC.

A db-dump load writes millions of rows into ``<kind>_records_next`` (:mod:`.kinds`).
Bound one row at a time by ``executemany``, each row was a Python tuple and
eleven bindings under the GIL: 40-60k rows/s, and the GIL the dump's reader
needed meanwhile. ADBC's SQLite driver takes the batch's Arrow columns (polars
hands them over without a copy, through the Arrow C stream interface) and binds
them in C, releasing the GIL: about half the CPU a row.

Why a scratch file and not ADBC on the store itself: the ADBC driver carries its
own copy of SQLite, and two copies of SQLite in one process do not see each
other's POSIX locks; closing either copy's file descriptor drops the other's
locks (https://www.sqlite.org/howtocorrupt.html, 2.2.1). So ADBC writes only
``<store>-load-<pid>@<host>``, a file nobody else opens (no journal, no fsync: it
holds one batch at a time, and a crash loses nothing the ledger counts), and the store's
own connection reads it: ``ATTACH``, then the kind's ``INSERT ... SELECT ... ON
CONFLICT`` inside the batch's transaction, with its page ledger, as before; then
``DETACH``, so that the next batch's rows are read fresh. Both connections live
on the store file's writer thread (:mod:`.writer`), one after the other.

The scratch file is the loading process's own, named for it: two loads into one
store never share one (the crates source lets one load at a time in, but a scratch
file of another's was removed under it before: the other's next batch read
``no such table: trawl_load.incoming``). A file a process left (killed, crashed) is
removed by the next load on the same host once that process is gone
(:func:`remove_leftovers`); one of a process still running, or of another host,
is left alone.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import socket
import sqlite3
from typing import Any

import polars as pl

from trawl.common.processes import is_running
from trawl.errors import StoreError
from trawl.stores.sqlite.errors import describe_driver_error

#: The schema name the scratch file is attached under, and its one table.
SCHEMA = "trawl_load"
TABLE = "incoming"


_OWNED = re.compile(r"-load-(?P<pid>\d+)@(?P<host>[^/]+)$")


def scratch_path(store_path: str, pid: int | None = None, host: str | None = None) -> str:
    """The scratch file of the process ``pid`` on ``host`` (this one by default) beside the store."""
    return f"{store_path}-load-{os.getpid() if pid is None else pid}@{host or socket.gethostname()}"


def remove_leftovers(store_path: str) -> list[str]:
    """Remove the scratch files beside the store whose process is gone: named for this host and
    a pid no process has (and ``<store>-load``, an older trawl's, which named no owner). The
    files removed."""
    host, removed = socket.gethostname(), []
    candidates = [*glob.glob(glob.escape(store_path) + "-load-*"), f"{store_path}-load"]
    for path in filter(os.path.isfile, candidates):
        owned = _OWNED.search(path[len(store_path) :])
        if owned is not None:
            pid = int(owned["pid"])
            if owned["host"] != host or pid == os.getpid() or is_running(pid):
                continue
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
            removed.append(path)
    return removed


def available(path: str) -> bool:
    """Can this store load in bulk (a file store, the driver installed)?"""
    if path == ":memory:" or path.startswith("file:"):
        return False
    try:
        import adbc_driver_sqlite.dbapi  # noqa: F401
    except ImportError:
        return False
    return True


class BulkStage:
    """The scratch file of one store file, written by ADBC, read by the store's connection."""

    def __init__(self, store_path: str) -> None:
        self.store_path = store_path
        self.path = scratch_path(store_path)
        self._connection: Any = None
        self._cursor: Any = None

    def _open(self) -> Any:
        if self._cursor is None:
            import adbc_driver_sqlite.dbapi as adbc

            remove_leftovers(self.store_path)  # those of loads whose process is gone
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.path)  # this process's own, from a store opened before
            self._connection = adbc.connect(self.path, autocommit=True)
            self._cursor = self._connection.cursor()
            self._cursor.execute("PRAGMA journal_mode=OFF")
            self._cursor.execute("PRAGMA synchronous=OFF")
        return self._cursor

    def put(self, con: sqlite3.Connection, frame: pl.DataFrame) -> str:
        """``frame`` into the scratch file (outside any transaction of ``con``), attached to
        ``con``; the table's name for ``con`` to select from."""
        try:
            self._open().adbc_ingest(TABLE, frame, mode="replace")
        except Exception as exc:  # noqa: BLE001 - the driver's own errors (a full disk...): said in one line
            cause = describe_driver_error(exc, self.path)
            raise StoreError(f"cannot load a batch in bulk through {self.path!r}: {cause}") from None
        con.execute("ATTACH DATABASE ? AS " + SCHEMA, (self.path,))
        return f"{SCHEMA}.{TABLE}"

    @staticmethod
    def detach(con: sqlite3.Connection) -> None:
        """After the batch's transaction: the scratch file is ADBC's again."""
        with contextlib.suppress(sqlite3.Error):
            con.execute("DETACH DATABASE " + SCHEMA)

    def close(self) -> None:
        if self._cursor is not None:
            with contextlib.suppress(Exception):
                self._cursor.close()
                self._connection.close()
            self._cursor = self._connection = None
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.path)
