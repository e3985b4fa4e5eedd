"""The PostgreSQL store: ``STORE_URI=postgresql://user[:password]@host[:port]/db``, on the store contract.

The shared store of distributed runs: many processes on many machines write
one database at once. :class:`PostgresStore` implements every Protocol of
:mod:`trawl.stores.contract` that the SQLite store does for URLs: writing
(``write_batch_async``, on a writer thread of its own: :mod:`.writer`), the
resume ledger (``pages``, claimed in the batch's transaction), reading
(:mod:`.reading`), search (:mod:`.search`, :mod:`.query`) and the report.

One transaction per batch: its pages claimed in the ledger, its rows copied
into the staging table, one merge statement (:mod:`.schema`, :mod:`.merge`),
commit. A crash loses at most the batch being written (the server rolls it
back); a rerun merges into what is there. ``new``/``repeat`` are what the
SQLite store gives: new, the store did not know the URL; repeat, this
source's run wrote it before.

A deadlock or serialization failure with another writer (which the URL
order of the merge's locks is there to prevent) rolls the batch back and
tries it again, up to :data:`TRIES` times; any other failure is one line
naming the cause (:mod:`.errors`), and no batch queued behind it commits.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

import orjson
import polars as pl
import psycopg

from trawl.common import statkeys
from trawl.errors import StoreError
from trawl.pipeline.context import RunContext
from trawl.records.batches import Batch, UrlBatch
from trawl.records.kinds import collapse, stored_columns
from trawl.settings_checks import Setting, read
from trawl.stores.contract import KEYED_KINDS, PartlyStored
from trawl.stores.postgresql import connection, kinds, merge, outage
from trawl.stores.postgresql.config import SETTINGS
from trawl.stores.postgresql.errors import RETRYABLE, describe, store_error
from trawl.stores.postgresql.kinds import KindTable
from trawl.stores.postgresql.outage import StoreOutage
from trawl.stores.postgresql.readside import PostgresReadSide
from trawl.stores.postgresql.schema import (
    BATCH_COMMITTED,
    CLAIM_PAGES,
    FORGET_BATCHES,
    RECORD_BATCH,
    SCHEMA,
    SCHEMA_LOCK,
    STAGING,
)
from trawl.stores.postgresql.writer import WriterThread
from trawl.stores.writer import WritesOnThread

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: Tries of a batch that lost a deadlock or serialization race to another writer.
TRIES = 3


class _StoredBefore(Exception):  # noqa: N818 - a signal inside the store, not an error
    """Some of the batch's pages were in the ledger already: roll the transaction back."""

    def __init__(self, claimed: int) -> None:
        super().__init__(claimed)
        self.claimed = claimed


class PostgresStore(PostgresReadSide, WritesOnThread):
    """URL records, and those of declared kinds, in a PostgreSQL database (see the module docstring)."""

    settings_declared: ClassVar[dict[str, Setting]] = SETTINGS
    kinds: ClassVar[frozenset[str]] = frozenset({"url", KEYED_KINDS})

    @classmethod
    def check_uri(cls, uri: str) -> None:
        """A ``postgresql://`` URI whose server answers: else one line, before any crawl starts."""
        connection.probe(uri)

    @classmethod
    def describe_uri(cls, uri: str) -> str:
        return connection.hide(uri)

    def __init__(self, uri: str, context: RunContext) -> None:
        self.uri = connection.check(uri)
        self.shown = connection.hide(uri)
        self.context = context
        settings = context.settings
        self.timeout = int(read(settings, SETTINGS, "POSTGRES_CONNECT_TIMEOUT"))
        self.synchronous_commit = str(read(settings, SETTINGS, "POSTGRES_SYNCHRONOUS_COMMIT"))
        self.outage_max = float(read(settings, SETTINGS, "POSTGRES_OUTAGE_MAX"))
        #: Made, used and closed on the writer thread only.
        self.connection: psycopg.Connection | None = None
        self._writer: WriterThread | None = None
        self.run = 0
        self._last_batch_us = 0
        self._failed: str | None = None
        #: Why the store gave up waiting for its server (:class:`~.outage.StoreOutage`), if it did.
        self._outage: str | None = None
        self._said_dropping = False
        self._tables: dict[type[Batch], KindTable] = {}
        #: This store's name in ``trawl_batches``, and its batches' count.
        self._writer_id = uuid.uuid4().hex
        self._batches = 0

    # --- opening and closing -----------------------------------------------------------

    def open(self) -> None:
        """Connect and register the run, on the writer thread, before the crawl starts (a spread run's
        joiners look its record up). A server restarting just now is waited for (:mod:`.outage`): the
        reactor waits with it, a moment the worker's checks before a task make rare (they wait for a
        server they cannot reach, off the reactor: :func:`.outage.wait_for_store`)."""
        self._writer = writer = WriterThread()
        try:
            writer.call(self._outlasting, self._open)
        except StoreOutage as exc:
            self._abandon()
            self.context.stats.set_value(statkeys.STORE_OUTAGE, str(exc))  # the task goes back to the queue
            self._dropping()  # what the crawl fetches before it stops is dropped
            raise
        except psycopg.Error as exc:
            self._abandon()
            raise store_error(f"cannot open the PostgreSQL store {self.shown}", exc) from None
        except BaseException:
            self._abandon()
            raise

    def _abandon(self) -> None:
        assert self._writer is not None
        self._writer.call(self._disconnect)
        self._writer.shutdown()
        self._writer = None

    def _session(self) -> psycopg.Connection:
        """The writer's connection, made (anew after an outage) when there is none: the session's
        settings and staging table with it (a temporary table goes with its session)."""
        if self.connection is not None:
            return self.connection
        con = connection.connect(self.uri, self.timeout, autocommit=True)
        try:
            con.execute("SELECT set_config('synchronous_commit', %s, false)", (self.synchronous_commit,))
            con.execute(STAGING)
        except BaseException:
            con.close()
            raise
        self.connection = con
        self._tables.clear()  # their staging tables were the old session's: made again when met
        return con

    def _open(self) -> None:
        """On the writer thread: connect, make what is missing, register (or resume) the run."""
        con = self._session()
        with con.transaction():
            con.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            con.execute(SCHEMA)
        con.execute(FORGET_BATCHES)
        target = self.context.target
        job = self.context.job_id or self.context.run_id
        if self.context.joined:  # another worker's spread run: its record is the owner's to keep
            row = con.execute("SELECT run FROM runs WHERE run_id = %s", (self.context.run_id,)).fetchone()
            if row is None:
                raise StoreError(f"the spread run {self.context.run_id} is not in the store")
            self.run = int(row[0])
            return
        # Tried again after an outage: the same row (``run_id`` is unique), under the same number.
        row = con.execute(
            "INSERT INTO runs (run_id, source, domain, started_at, job) VALUES (%s, %s, %s, now(), %s)"
            " ON CONFLICT (run_id) DO UPDATE SET finished_at = NULL, finish_reason = NULL, job = excluded.job"
            " RETURNING run",
            (self.context.run_id, self.context.source, target and target.domain, job),
        ).fetchone()
        assert row is not None
        self.run = int(row[0])  # a resumed run goes on under its number

    def _disconnect(self) -> None:
        con, self.connection = self.connection, None
        if con is not None:
            con.close()

    def _outlasting(self, action: Callable[[], T]) -> T:
        """``action()`` on the writer thread, a lost connection waited out (:mod:`.outage`): the
        connection made anew (:meth:`_session`) and ``action()`` tried again, up to
        ``POSTGRES_OUTAGE_MAX`` seconds, then :class:`~.outage.StoreOutage`."""
        current = lambda: self.connection  # noqa: E731 - the connection the failure happened on
        return outage.outlasting(self.shown, self.outage_max, action, current, self._disconnect)

    def close(self, reason: str) -> None:
        """Record the run's end on the writer thread, after the last queued batch; end the thread.

        A store that gave up waiting for its server says so in the crawl's stats
        (:data:`~trawl.common.statkeys.STORE_OUTAGE`): ``trawl worker`` hands such a task back to
        the queue."""
        writer = self._writer
        if writer is None:
            return
        stats = orjson.dumps(self.context.stats.get_stats(), default=str).decode()
        try:
            writer.call(self._close, reason, stats)
        finally:
            writer.call(self._disconnect)
            writer.shutdown()
            self._writer = None
            if self._outage is not None:
                self.context.stats.set_value(statkeys.STORE_OUTAGE, self._outage)

    def _close(self, reason: str, stats: str) -> None:
        if self.connection is None and self._outage is not None:
            return  # gave up on an outage: the run's end is not recorded (its task runs again)
        try:
            self._outlasting(lambda: self._record_end(reason, stats))
        except StoreOutage as exc:
            self._outage = self._outage or str(exc)
            raise
        except psycopg.Error as exc:
            raise store_error("cannot record the end of the run", exc) from None

    def _record_end(self, reason: str, stats: str) -> None:
        con = self._session()
        con.execute("DELETE FROM trawl_batches WHERE writer = %s", (self._writer_id,))
        if not self.context.joined:
            con.execute(
                "UPDATE runs SET finished_at = now(), finish_reason = %s, stats = %s::jsonb WHERE run = %s",
                (reason, stats, self.run),
            )

    # --- writing -----------------------------------------------------------------------

    def _write(self, batch: Batch) -> tuple[int, int]:
        """On the writer thread: the batch in one transaction, tried again after a deadlock, and after a
        lost connection once the server is back (unless that transaction committed: ``trawl_batches``)."""
        if self._failed is not None:
            if self._outage is not None:
                self._dropping()
                raise StoreOutage(f"not written: an earlier batch failed ({self._failed})")
            raise StoreError(f"not written: an earlier batch failed ({self._failed})")
        now = self._next_batch_time()
        self._batches += 1
        seq = self._batches
        tried = False

        def attempt() -> tuple[int, int]:
            nonlocal tried
            if tried:  # the connection was lost: perhaps while its COMMIT was on its way
                committed = self._committed(seq)
                if committed is not None:
                    return self._read_back(batch, now, committed)
            tried = True
            return self._write_racing(batch, now, seq)

        try:
            return self._outlasting(attempt)
        except PartlyStored:
            raise
        except StoreOutage as exc:
            self._failed = self._outage = str(exc)
            self._dropping()
            raise
        except psycopg.Error as exc:
            self._failed = describe(exc)
            raise StoreError(self._failed) from None
        except BaseException as exc:
            self._failed = str(exc) or type(exc).__name__
            raise

    def _dropping(self) -> None:
        """A batch is about to be dropped for an outage: said first (:func:`.outage.dropping`), once."""
        if not self._said_dropping:
            self._said_dropping = True
            outage.dropping(self.context.settings)

    def _write_racing(self, batch: Batch, now: dt.datetime, seq: int) -> tuple[int, int]:
        """:meth:`_write_once`, tried again after a deadlock or serialization failure (rolled back)."""
        for attempt in range(1, TRIES + 1):
            try:
                return self._write_once(batch, now, seq)
            except psycopg.Error as exc:
                if getattr(exc, "sqlstate", None) in RETRYABLE and attempt < TRIES:
                    continue
                raise
        raise AssertionError("unreachable")

    def _write_once(self, batch: Batch, now: dt.datetime, seq: int) -> tuple[int, int]:
        """One transaction: the pages claimed, the rows staged and merged, the batch recorded in
        ``trawl_batches``; (new URLs, pages stored before)."""
        con = self._session()
        table = None if isinstance(batch, UrlBatch) else self._table(type(batch))
        params = {"source": batch.source, "run": self.run, "now": now}
        pages = batch.pages
        written, new, known = None, 0, None
        try:
            with con.transaction():
                if pages:
                    ledger = {**params, "pages": orjson.dumps(pages).decode()}
                    claimed = con.execute(CLAIM_PAGES, ledger).rowcount
                    if claimed != len(pages):
                        # This run stored the page before (a resumed run, a refetch):
                        # merging it again would count its captures twice. Rolled back.
                        raise _StoredBefore(claimed)
                if table is not None:
                    written, new = table.write(con, batch.frame, self.run)
                elif batch.frame.height:
                    merge.stage(con, batch.frame)
                    new, known = merge.merge(con, params, batch.frame.height)
                elif not pages:
                    return 0, 0
                con.execute(RECORD_BATCH, {"writer": self._writer_id, "seq": seq, "new": new})
        except _StoredBefore as stored:
            if stored.claimed:
                missing = len(pages) - stored.claimed
                raise PartlyStored(f"{missing} of {len(pages)} pages stored before") from None
            batch.frame = batch.frame.with_columns(pl.lit(False).alias("new"), pl.lit(True).alias("repeat"))
            return 0, len(pages)
        if written is not None:
            self._switched(type(batch))
            batch.frame = written
        elif known is not None:
            batch.frame = merge.with_merged(batch.frame, known, self.run)
        return new, 0

    def _committed(self, seq: int) -> int | None:
        """The new records of this store's batch ``seq`` if it committed (``trawl_batches``), else None."""
        con = self._session()
        row = con.execute(BATCH_COMMITTED, {"writer": self._writer_id, "seq": seq}).fetchone()
        return None if row is None else int(row[0])

    def _read_back(self, batch: Batch, now: dt.datetime, new: int) -> tuple[int, int]:
        """A batch that committed as the connection was lost: not written again; its frame as stored.

        URLs: read back from ``urls`` (:func:`.merge.read_back`). A declared kind's records keep the
        values the batch brought, marked neither new nor repeat (its count of new records is exact)."""
        logger.info("%s: a batch committed as the connection was lost: not written again", self.shown)
        if isinstance(batch, UrlBatch):
            if batch.frame.height:
                params = {"source": batch.source, "run": self.run, "now": now}
                batch.frame = merge.read_back(self._session(), params, batch.frame)
            return new, 0
        batch_type = type(batch)
        rows = collapse(batch_type, batch.frame)
        marks = (pl.lit(batch_type.STAGED).alias("new"), pl.lit(False).alias("repeat"))
        batch.frame = rows.select(*stored_columns(batch_type)).with_columns(*marks)
        self._switched(batch_type)
        return new, 0

    def _table(self, batch_type: type[Batch]) -> KindTable:
        """A declared kind's table (:mod:`.kinds`), made or completed the first time this store meets it,
        in a transaction of its own (a batch tried again after a deadlock finds it made)."""
        table = self._tables.get(batch_type)
        if table is None:
            table = KindTable(batch_type)
            table.create(self._session(), self.run, SCHEMA_LOCK)
            self._tables[batch_type] = table
        return table

    def _switched(self, batch_type: type[Batch]) -> None:
        """After a ``SWITCHES`` batch committed: the kinds' staged tables are live ones now, and the
        next load makes its staged tables anew."""
        switched = set(batch_type.SWITCHES)
        for known in [t for t in self._tables if t.kind in switched]:
            del self._tables[known]

    def _next_batch_time(self) -> dt.datetime:
        """A time (whole microseconds, what ``timestamptz`` keeps) no earlier batch of this store used:
        how the merge tells the rows this batch inserted from those it merged."""
        now_us = max(time.time_ns() // 1000, self._last_batch_us + 1)
        self._last_batch_us = now_us
        return dt.datetime.fromtimestamp(now_us // 1_000_000, dt.UTC).replace(microsecond=now_us % 1_000_000)

    def done_pages(self, source: str) -> dict[str, int]:
        """Pages this run stored already (page key -> upstream rows): what a resumed run skips."""
        assert self._writer is not None, "store not open"
        return self._writer.call(self._done_pages, source)

    def _done_pages(self, source: str) -> dict[str, int]:
        assert self.connection is not None
        sql = "SELECT page, rows FROM pages WHERE run = %s AND source = %s"
        return {page: int(rows) for page, rows in self.connection.execute(sql, (self.run, source))}

    def newest(self, batch_type: type[Batch], column: str) -> Any:
        """The greatest ``column`` among a declared kind's live records (None: none yet): the
        crates source asks for the newest db-dump loaded, to skip one that is not newer."""
        assert self._writer is not None, "store not open"
        return self._writer.call(lambda: kinds.newest(self._connected(), batch_type, column))

    def read_kind(self, batch_type: type[Batch], columns: Sequence[str]) -> pl.DataFrame:
        """Stored columns of a declared kind (:class:`~trawl.stores.contract.KindReadingStore`), read on
        the writer's connection: what this run wrote so far included."""
        assert self._writer is not None, "store not open"
        return self._writer.call(lambda: kinds.kind_columns(self._connected(), batch_type, list(columns)))

    def _connected(self) -> psycopg.Connection:
        assert self.connection is not None, "store not open"
        return self.connection
