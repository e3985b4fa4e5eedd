"""A dump batch whose rows are in the store's staged table already, and the batch files of old loads.

A db-dump load hands the store's writer batches whose rows it does not bind
again: the load's own process wrote them into ``<kind>_records_next``
(:mod:`.ingest`), and the batch says so (:class:`Prestaged`, ``stage_file`` is
:data:`INGESTED`); the writer notes its pages, to claim them in the ledger with
the switch (:mod:`.ledger`), and returns its rows as stored. The writer's
half of an attached batch file (:func:`attach`, :func:`detach`) serves a batch
that names one; a load of an earlier version wrote one a batch
(``<store>-stage-<pid>@<host>-<n>``), and the files a killed one left are
removed by the next load on the host once their process is gone
(:func:`remove_leftovers`).
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import socket
import sqlite3

from trawl.common.processes import is_running
from trawl.errors import StoreError
from trawl.records.batches import Batch
from trawl.stores.sqlite.schema import CHECKPOINT_PAGES

#: The schema name a batch's file is attached under, and its one table.
SCHEMA = "trawl_stage"
#: The ``stage_file`` of a batch whose rows the load's own process wrote into the table (:mod:`.ingest`).
INGESTED = ""
TABLE = "rows"
_OWNED = re.compile(r"-stage-(?P<pid>\d+)@(?P<host>[^/]+)-\d+$")


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
    """Mixed into a staged kind's batch type: where the batch's rows are (``stage_file``)."""

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


def attach(con: sqlite3.Connection, path: str) -> str | None:
    """On the writer, outside a transaction: ``path`` attached; the table to merge from (None: the
    batch's rows are in the table already, :data:`INGESTED`)."""
    # The process is a dump load's (the crates source runs in no crawl all): its connection's own.
    con.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
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
