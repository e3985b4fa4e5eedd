"""The SQLite store's writer thread: the one thread its connection lives on.

Every statement of a crawl's store runs here: ``open``, each batch, the
ledger, ``close``. The pipeline hands a batch over and awaits it
(:meth:`WriterThread.submit`); the reactor meanwhile downloads and parses
other pages, so a multi-source crawl keeps both cores busy (the
store's writes took 42% of the profile, all of it on the reactor thread,
and urlscan's next page waited up to 1.4 s behind another source's batch).

Why a thread, and why it pays now: sqlite3 releases the GIL inside each
``sqlite3_step``, and takes it back after. The old four-pass merge bound
every row in Python (``executemany``) and called a Python set union back
from SQL, so a writer thread took the GIL back once a row and ran slower
than the reactor alone (1M captures: 22.6 s against 18.3 s). The set-based
merge (:mod:`trawl.stores.sqlite.merge`) is a handful of statements a batch,
each one C call over the whole batch, so the thread holds the GIL only
between them.

One writer thread per store file and process, and one connection on it: the
four sources of ``crawl all`` each have a store (and a run) of their own, and
all of them write on the file's one thread, one transaction after the other
as on the reactor before. A thread each would make them wait for each other's
write lock in SQLite's busy handler, which sleeps up to 100 ms at a time; a
connection each held a page cache (``SQLITE_CACHE_MB``) and a staging table
each, four times the memory for the same pages (peak RSS 450 MB
against 340 MB before the writer thread). The first store to open the file
makes the connection with its settings; the last one to close ends it.

The bounded queue and the awaiting on the reactor are the shared
:class:`trawl.stores.writer.WriterThread`'s.

The WAL is copied into the file by a :class:`Checkpointer` on a thread of
its own, not by the commit that crosses SQLite's autocheckpoint: a checkpoint
waits for two fsyncs, and the writer thread is a crawl's critical path (four
sources, 200,000 URLs on the shared machine: the writer waited 3.8-10 s for
the disk beside 5 s of CPU; with ``SQLITE_SYNCHRONOUS=OFF``, no fsync, 1.5 s).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable
from typing import ClassVar

from trawl.stores.sqlite.bulk import BulkStage
from trawl.stores.writer import WriterThread as _WriterThread

#: The WAL's size past which the writer checkpoints it itself, waiting (TRUNCATE: the next transaction
#: writes it from its start again). The checkpointer's PASSIVE checkpoints run beside the writer's
#: transactions, and a WAL is written from its start again only when a transaction begins with all
#: of it copied: a writer that never pauses would grow it without end.
WAL_LIMIT = 256 * 1024 * 1024


class Checkpointer:
    """PASSIVE checkpoints of one store file, on a thread and a connection of their own, when poked.

    A checkpoint copies the committed WAL frames into the file, with the store's ``synchronous``
    (NORMAL: the WAL synced before, the file after), beside the writer's next transaction; pokes
    that come while one runs make one more. Crash safety is the WAL's: a committed transaction
    is in the WAL whether or not a checkpoint copied it yet.
    """

    def __init__(self, path: str, synchronous: str) -> None:
        self.path = path
        self.synchronous = synchronous
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="trawl-sqlite-checkpointer", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        """A transaction committed: copy the WAL into the file (soon, on the checkpointer's thread)."""
        self._wake.set()

    def _run(self) -> None:
        con = None
        try:
            con = sqlite3.connect(self.path, isolation_level=None, timeout=60)
            con.execute(f"PRAGMA synchronous={self.synchronous}")
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                # A failure (a full disk) is the writer's to report: its own close checkpoints again.
                with contextlib.suppress(sqlite3.Error):
                    con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error:
            return  # the file cannot be opened: the writer's connection checkpoints when it closes
        finally:
            if con is not None:
                con.close()

    def close(self) -> None:
        """End the thread (after the checkpoint under way) and close its connection."""
        self._stopping = True
        self._wake.set()
        self._thread.join()


class WriterThread(_WriterThread):
    """The shared writer thread, one per store file and process, holding the file's one connection."""

    _shared: ClassVar[dict[str, tuple[WriterThread, int]]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, name: str) -> None:
        super().__init__(name)
        #: The file's one connection, made, used and closed on this thread only.
        self._connection: sqlite3.Connection | None = None
        #: Staged kinds' batches loaded in bulk (:mod:`.bulk`), also on this thread only.
        self.bulk: BulkStage | None = None
        #: Copies the WAL into the file beside the writer (a file store's; :class:`Checkpointer`).
        self.checkpointer: Checkpointer | None = None

    def connection(self, connect: Callable[[], sqlite3.Connection]) -> sqlite3.Connection:
        """On this thread: the file's connection, made with ``connect`` by the first store to ask."""
        if self._connection is None:
            self._connection = connect()
        return self._connection

    def checkpoint_beside(self, con: sqlite3.Connection, path: str, synchronous: str) -> None:
        """On this thread: the file's checkpoints made by a :class:`Checkpointer`, not by the commits."""
        if self.checkpointer is None:
            con.execute("PRAGMA wal_autocheckpoint=0")
            self.checkpointer = Checkpointer(path, synchronous)

    def committed(self, con: sqlite3.Connection, path: str) -> None:
        """On this thread, after a COMMIT: the checkpointer poked; a WAL past :data:`WAL_LIMIT`
        checkpointed here, waiting for it (TRUNCATE), so that it is written from its start again."""
        if self.checkpointer is None:
            return
        try:
            size = os.path.getsize(f"{path}-wal")
        except OSError:
            size = 0
        if size > WAL_LIMIT:
            with contextlib.suppress(sqlite3.Error):  # busy (the checkpointer's under way): next time
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        self.checkpointer.poke()

    @classmethod
    def acquire(cls, key: str) -> WriterThread:
        """The writer thread of the store file ``key`` (made by the first store that opens it)."""
        with cls._shared_lock:
            writer, users = cls._shared.get(key) or (cls("trawl-sqlite-writer"), 0)
            cls._shared[key] = (writer, users + 1)
            return writer

    @classmethod
    def release(cls, key: str) -> None:
        """One store of ``key`` is done with its thread; the last one ends it (queued work done first)."""
        with cls._shared_lock:
            writer, users = cls._shared[key]
            if users > 1:
                cls._shared[key] = (writer, users - 1)
                return
            del cls._shared[key]
        writer.shutdown()

    def _on_shutdown(self) -> None:
        """Close the file's connection, on its thread, after the queued work (and the checkpointer's
        before: the last connection to close copies the rest of the WAL in and removes it)."""
        if self.checkpointer is not None:
            self.checkpointer.close()
            self.checkpointer = None
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self.bulk is not None:
            self.bulk.close()
            self.bulk = None
