"""A db-dump batch's rows written to a file of their own on the reading thread, merged by the writer.

The store's writer thread is the one place a batch's rows enter the store file,
and it was the load's bottleneck: for each staged batch it bound the rows
through ADBC into a scratch file (:mod:`.bulk`), then merged them, one after the
other, while the other core waited (a 0.25-scale dump: the writer busy 12.3 s of
a 20 s load, half of it ADBC's binding, 0.6-0.8 µs a row). Here the binding
moves to the thread that reads the dump: each batch of a staged kind goes,
as its kind's columns (one row per key, :func:`~trawl.records.kinds.collapse`),
into ``<store>-stage-<pid>@<host>-<n>`` (no journal, no sync: nothing the ledger
counts lives only there), and the batch handed to the pipeline names the file
(:class:`Prestaged`); the writer attaches it, merges it inside the batch's
transaction with its page ledger, detaches it and removes it. The binding of
batch n+1 then runs beside the merge of batch n, on the other core.

The two copies of SQLite never have one file open at once (the driver carries
its own, and two copies do not see each other's POSIX locks: sqlite.org/howtocorrupt.html
2.2.1): the driver's connection is closed before the batch is handed on.

A file a process left (killed mid-load) is removed by the next load on the same
host once that process is gone (:func:`remove_leftovers`); the files of batches
read but never handed on are removed when the load ends (:meth:`Prestager.discard`).
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import re
import socket
import sqlite3
import threading
from typing import Any

import polars as pl

from trawl.common.processes import is_running
from trawl.errors import StoreError
from trawl.records.batches import Batch
from trawl.records.kinds import collapse, stored_columns
from trawl.stores.sqlite.bulk import available

#: The schema name a batch's file is attached under, and its one table.
SCHEMA = "trawl_stage"
#: The ``stage_file`` of a batch whose rows the load's own process wrote into the table (:mod:`.ingest`).
INGESTED = ""
TABLE = "rows"
_OWNED = re.compile(r"-stage-(?P<pid>\d+)@(?P<host>[^/]+)-\d+$")


def prefix(store_path: str, pid: int | None = None) -> str:
    return f"{store_path}-stage-{os.getpid() if pid is None else pid}@{socket.gethostname()}-"


def remove_leftovers(store_path: str) -> list[str]:
    """Remove the batch files beside the store whose process (on this host) is gone; those removed."""
    host, removed = socket.gethostname(), []
    for path in glob.glob(glob.escape(store_path) + "-stage-*"):
        owned = _OWNED.search(path[len(store_path) :])
        if owned is None or owned["host"] != host:
            continue
        pid = int(owned["pid"])
        if pid == os.getpid() or is_running(pid):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
            removed.append(path)
    return removed


class Prestaged:
    """Mixed into a staged kind's batch type: the batch's rows wait in ``stage_file``."""

    __slots__ = ()
    stage_file: str | None


_PRESTAGED: dict[type[Batch], type[Batch]] = {}


def prestaged_type(batch_type: type[Batch]) -> type[Batch]:
    """The staged kind's twin whose batches name their file (made once per kind)."""
    twin = _PRESTAGED.get(batch_type)
    if twin is None:
        namespace = {"__slots__": ("stage_file",), "__module__": batch_type.__module__}
        twin = _PRESTAGED[batch_type] = type(f"Pre{batch_type.__name__}", (Prestaged, batch_type), namespace)
    return twin


def stage_file(batch: Batch) -> str | None:
    return getattr(batch, "stage_file", None) if isinstance(batch, Prestaged) else None


class Prestager:
    """The batch files of one load into one store file, written on the reading thread."""

    def __init__(self, store_path: str) -> None:
        self.store_path = store_path
        self._prefix = prefix(store_path)
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        #: Written, not handed on yet: removed by :meth:`discard`.
        self._pending: set[str] = set()

    @classmethod
    def for_store(cls, store: Any) -> Prestager | None:
        """A stager for a SQLite store file with the driver installed, else None (rows go the usual way)."""
        from trawl.stores.sqlite.store import SqliteStore

        if isinstance(store, SqliteStore) and available(store.path):
            return cls(store.path)
        return None

    def put(self, batch_type: type[Batch], frame: pl.DataFrame) -> tuple[str, pl.DataFrame]:
        """The batch's rows into a new file, closed again; its path, and the rows (one per key,
        :func:`~trawl.records.kinds.collapse`: what the batch then holds, as the store returns it)."""
        import adbc_driver_sqlite.dbapi as adbc

        path = f"{self._prefix}{next(self._numbers)}"
        with self._lock:
            self._pending.add(path)
        rows = collapse(batch_type, frame)
        try:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
            with adbc.connect(path, autocommit=True) as connection, connection.cursor() as cursor:
                cursor.execute("PRAGMA journal_mode=OFF")
                cursor.execute("PRAGMA synchronous=OFF")
                cursor.adbc_ingest(TABLE, rows.select(list(stored_columns(batch_type))), mode="create")
        except Exception as exc:  # noqa: BLE001 - the driver's own errors (a full disk...): one line
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise StoreError(f"cannot stage a batch in {path!r}: {first}") from None
        return path, rows

    def handed(self, path: str) -> None:
        """The batch naming ``path`` went to the pipeline: the writer removes the file now."""
        with self._lock:
            self._pending.discard(path)

    def discard(self) -> None:
        """The files of batches never handed on (the load stopped or failed) are removed."""
        with self._lock:
            pending, self._pending = self._pending, set()
        for path in pending:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)


#: WAL pages between checkpoints while a dump loads (64 MiB at 4 KiB pages; SQLite's default is
#: 1000): a 50,000-row batch dirties about 1,000 pages, so every commit checkpointed (two fsyncs,
#: and the right-hand pages of the growing tables copied again each time). Measured, 2 million rows
#: in 50,000-row batches: the merges' wall 5.1-5.4 s against 6.4-8.3 s, CPU 8% less.
LOAD_CHECKPOINT_PAGES = 16384


def attach(con: sqlite3.Connection, path: str) -> str | None:
    """On the writer, outside a transaction: ``path`` attached; the table to merge from (None: the
    batch's rows are in the table already, :data:`INGESTED`)."""
    # The process is a dump load's (the crates source runs in no crawl all): its connection's own.
    con.execute(f"PRAGMA wal_autocheckpoint={LOAD_CHECKPOINT_PAGES}")
    if path == INGESTED:
        return None
    if not os.path.isfile(path):
        raise StoreError(f"the staged batch {path!r} is gone: its load was stopped")
    con.execute("ATTACH DATABASE ? AS " + SCHEMA, (path,))
    return f"{SCHEMA}.{TABLE}"


def detach(con: sqlite3.Connection, path: str) -> None:
    """After the batch's transaction (committed, rolled back or skipped): the file is done with."""
    if path == INGESTED:
        return
    with contextlib.suppress(sqlite3.Error):
        con.execute("DETACH DATABASE " + SCHEMA)
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
