"""One db-dump load at a time into a store: a lock that names its holder, and what a dead holder left.

A load stages a snapshot in tables every load shares (``<kind>_records_next``)
and switches it in at its end. Two loads at once (a scheduled daily load and a
manual one) wrote into the same staging tables and dropped each other's; an old
dump was switched in with a part of its rows, with exit status 0. So a load takes
its store's load lock before it fetches anything, and keeps it until the run has
closed its store:

* SQLite: ``fcntl.flock`` on ``<store>-load.lock`` beside the store file. The
  file holds the holder's pid, host and start (JSON); a clean end empties it.
* PostgreSQL: a session-level advisory lock (``pg_try_advisory_lock``) on a
  connection of the load's own, its holder recorded in ``trawl_loads``
  (:mod:`trawl.stores.postgresql.kinds`); a clean end deletes the record.

Both locks are let go by the system when their holder dies (the kernel closes
the file, the server ends the session), so a load killed with ``kill -9`` never
blocks the next one; the next one finds the dead holder's record, which names it
(:attr:`LoadLock.previous`), and removes what it left (its staged rows: every
load empties them; its scratch file: :mod:`trawl.stores.sqlite.bulk`). A second
load while one runs is refused (:class:`LoadBusy`, naming the running one), never
waits: a dump load takes minutes to hours, the next daily run loads the dump then.
Another store (Elasticsearch, none) has no lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from trawl.common.processes import is_running

#: The name a load is recorded under (PostgreSQL's ``trawl_loads``).
NAME = "crates"
#: How long a refused load waits for the holder to have recorded itself (it does at once).
OWNER_WAIT = 1.0


@dataclass(frozen=True)
class Owner:
    """The process that holds (or held) a store's load lock."""

    pid: int
    host: str
    started: str

    @classmethod
    def this_process(cls) -> Owner:
        started = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
        return cls(os.getpid(), socket.gethostname(), started)

    @classmethod
    def read(cls, data: Any) -> Owner | None:
        """From its record (a dict, or JSON text or bytes); None when there is none or it is not one."""
        try:
            record = orjson.loads(data) if isinstance(data, str | bytes) else data
            return cls(int(record["pid"]), str(record["host"]), str(record["started"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, started {self.started}"

    def named(self) -> str:
        return f"pid {self.pid} on {self.host} (started {self.started})"

    def is_gone(self) -> bool:
        """Is the process no longer running (known only on this host: False elsewhere)?"""
        return self.host == socket.gethostname() and not is_running(self.pid)


class LoadBusy(Exception):  # noqa: N818 - another load runs: not this load's error
    """Another load holds the store's lock."""

    def __init__(self, holder: Owner | None) -> None:
        self.holder = holder
        who = holder.describe() if holder is not None else "its owner not recorded yet"
        super().__init__(
            f"another crates load is writing this store ({who}): this one is refused and fetched"
            " nothing; run it again once that one has ended"
        )


class LoadLock:
    """A store's load lock, held: :attr:`previous` names a holder that never let go (dead now)."""

    previous: Owner | None = None

    def release(self) -> None:
        """Let go (idempotent); the system lets go anyway when the process ends."""

    def fileno(self) -> int | None:
        """The descriptor a helper process inherits to hold the lock with this one (None: not a file's)."""
        return None


class FileLoadLock(LoadLock):
    """SQLite: ``flock`` on ``<store>-load.lock``, the holder written in it."""

    def __init__(self, store_path: str) -> None:
        self.path = f"{Path(store_path).resolve()}-load.lock"
        self._fd: int | None = None
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by child processes
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder(fd)
            os.close(fd)
            raise LoadBusy(holder) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self.previous = Owner.read(_read_all(fd) or b"null")
        record = orjson.dumps(asdict(Owner.this_process()))
        os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)
        os.fsync(fd)

    @staticmethod
    def _holder(fd: int) -> Owner | None:
        """The holder as it wrote itself: it does so right after taking the lock, so an empty file
        or a dead process's record (the one before it) is read again for a moment."""
        deadline = time.monotonic() + OWNER_WAIT
        while True:
            holder = Owner.read(_read_all(fd) or b"null")
            if (holder is not None and not holder.is_gone()) or time.monotonic() > deadline:
                return holder
            time.sleep(0.02)  # polling for the holder's record, a write away

    def fileno(self) -> int | None:
        return self._fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # empty: the load ended; a record left names a load that did not
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _read_all(fd: int) -> bytes:
    return os.pread(fd, 1 << 16, 0)


class AdvisoryLoadLock(LoadLock):
    """PostgreSQL: a session-level advisory lock on a connection of its own, the holder recorded."""

    def __init__(self, uri: str, timeout: float) -> None:
        from trawl.stores.postgresql import connection
        from trawl.stores.postgresql import kinds as pg_kinds
        from trawl.stores.postgresql.schema import SCHEMA_LOCK

        self._kinds = pg_kinds
        self._con: Any = connection.connect(uri, timeout, autocommit=True)
        try:
            me = asdict(Owner.this_process())
            deadline = time.monotonic() + OWNER_WAIT
            while True:
                got, recorded = pg_kinds.try_load_lock(self._con, NAME, me, SCHEMA_LOCK)
                if got or recorded is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.02)  # polling for the holder's record, a statement away
            if not got:
                raise LoadBusy(Owner.read(recorded))
            self.previous = Owner.read(recorded)
        except BaseException:
            self._con.close()
            raise

    def release(self) -> None:
        con, self._con = self._con, None
        if con is None:
            return
        try:
            self._kinds.release_load_lock(con, NAME)
        except Exception:  # noqa: BLE001, S110 - the server lets go with the session, closed below
            pass
        finally:
            con.close()


def acquire(store: Any) -> LoadLock:
    """The load lock of ``store`` (:class:`LoadBusy` when another load holds it). Blocking: off the
    reactor. A store without one (``:memory:``, Elasticsearch): a lock that holds nothing."""
    from trawl.stores.sqlite.store import SqliteStore

    if isinstance(store, SqliteStore):
        return LoadLock() if store.path == ":memory:" else FileLoadLock(store.path)
    try:
        from trawl.stores.postgresql.store import PostgresStore
    except ImportError:  # psycopg not installed: no PostgreSQL store can be open
        return LoadLock()
    if isinstance(store, PostgresStore):
        return AdvisoryLoadLock(store.uri, store.timeout)
    return LoadLock()
