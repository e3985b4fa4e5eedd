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
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import orjson
import polars as pl
import psycopg

from trawl.errors import StoreError
from trawl.pipeline.context import RunContext
from trawl.records.batches import Batch, UrlBatch
from trawl.settings_checks import Setting, one_of, read, seconds
from trawl.stores.contract import KEYED_KINDS, PartlyStored
from trawl.stores.postgresql import connection, kinds, merge, reading
from trawl.stores.postgresql.errors import RETRYABLE, describe, store_error
from trawl.stores.postgresql.kinds import KindTable
from trawl.stores.postgresql.schema import CLAIM_PAGES, SCHEMA, SCHEMA_LOCK, STAGING
from trawl.stores.postgresql.writer import WriterThread
from trawl.stores.writer import WritesOnThread

if TYPE_CHECKING:
    from trawl.stores.postgresql.search import PostgresSearcher

#: Tries of a batch that lost a deadlock or serialization race to another writer.
TRIES = 3
#: Rows of one frame read back (exports, ``-o`` of ``crawl all``).
READ_FRAME_ROWS = 50_000

SETTINGS: dict[str, Setting] = {
    "POSTGRES_CONNECT_TIMEOUT": Setting(
        # Ten minutes at most: a server that has not answered by then is down, not slow.
        10,
        seconds(1, maximum=600, whole=True),
        "Seconds to wait for the PostgreSQL server when a store connects",
    ),
    # "off" risks the last few batches on a server crash (never corruption): a bulk load's choice.
    "POSTGRES_SYNCHRONOUS_COMMIT": Setting(
        "on",
        one_of("on", "off", "local", "remote_write", "remote_apply"),
        "PostgreSQL's synchronous_commit for the store's writes",
    ),
}


class _StoredBefore(Exception):  # noqa: N818 - a signal inside the store, not an error
    """Some of the batch's pages were in the ledger already: roll the transaction back."""

    def __init__(self, claimed: int) -> None:
        super().__init__(claimed)
        self.claimed = claimed


class PostgresStore(WritesOnThread):
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
        #: Made, used and closed on the writer thread only.
        self.connection: psycopg.Connection | None = None
        self._writer: WriterThread | None = None
        self.run = 0
        self._last_batch_us = 0
        self._failed: str | None = None
        self._tables: dict[type[Batch], KindTable] = {}

    # --- opening and closing -----------------------------------------------------------

    def open(self) -> None:
        self._writer = WriterThread()
        try:
            self._writer.call(self._open)
        except BaseException as exc:
            self._writer.call(self._disconnect)
            self._writer.shutdown()
            self._writer = None
            if isinstance(exc, psycopg.Error):
                raise store_error(f"cannot open the PostgreSQL store {self.shown}", exc) from None
            raise

    def _open(self) -> None:
        """On the writer thread: connect, make what is missing, register (or resume) the run."""
        con = self.connection = connection.connect(self.uri, self.timeout, autocommit=True)
        con.execute("SELECT set_config('synchronous_commit', %s, false)", (self.synchronous_commit,))
        with con.transaction():
            con.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            con.execute(SCHEMA)
        con.execute(STAGING)
        target = self.context.target
        job = self.context.job_id or self.context.run_id
        if self.context.joined:  # another worker's spread run: its record is the owner's to keep
            row = con.execute("SELECT run FROM runs WHERE run_id = %s", (self.context.run_id,)).fetchone()
            if row is None:
                raise StoreError(f"the spread run {self.context.run_id} is not in the store")
            self.run = int(row[0])
            return
        row = con.execute(
            "INSERT INTO runs (run_id, source, domain, started_at, job) VALUES (%s, %s, %s, now(), %s)"
            " ON CONFLICT (run_id) DO UPDATE SET finished_at = NULL, finish_reason = NULL, job = excluded.job"
            " RETURNING run",
            (self.context.run_id, self.context.source, target and target.domain, job),
        ).fetchone()
        assert row is not None
        self.run = int(row[0])  # a resumed run goes on under its number

    def _disconnect(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def close(self, reason: str) -> None:
        """Record the run's end on the writer thread, after the last queued batch; end the thread."""
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

    def _close(self, reason: str, stats: str) -> None:
        con = self.connection
        if con is None or self.context.joined:
            return
        try:
            con.execute(
                "UPDATE runs SET finished_at = now(), finish_reason = %s, stats = %s::jsonb WHERE run = %s",
                (reason, stats, self.run),
            )
        except psycopg.Error as exc:
            raise store_error("cannot record the end of the run", exc) from None

    # --- writing -----------------------------------------------------------------------

    def _write(self, batch: Batch) -> tuple[int, int]:
        """On the writer thread: the batch in one transaction, tried again after a deadlock."""
        if self._failed is not None:
            raise StoreError(f"not written: an earlier batch failed ({self._failed})")
        now = self._next_batch_time()
        for attempt in range(1, TRIES + 1):
            try:
                return self._write_once(batch, now)
            except PartlyStored:
                raise
            except psycopg.Error as exc:
                if getattr(exc, "sqlstate", None) in RETRYABLE and attempt < TRIES:
                    continue
                self._failed = describe(exc)
                raise StoreError(self._failed) from None
            except BaseException as exc:
                self._failed = str(exc) or type(exc).__name__
                raise
        raise AssertionError("unreachable")

    def _write_once(self, batch: Batch, now: dt.datetime) -> tuple[int, int]:
        """One transaction: the pages claimed, the rows staged and merged; (new URLs, pages stored before)."""
        con = self.connection
        assert con is not None, "store not open"
        table = None if isinstance(batch, UrlBatch) else self._table(type(batch))
        params = {"source": batch.source, "run": self.run, "now": now}
        pages = batch.pages
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
                elif not batch.frame.height:
                    return 0, 0
                else:
                    merge.stage(con, batch.frame)
                    new, known = merge.merge(con, params, batch.frame.height)
        except _StoredBefore as stored:
            if stored.claimed:
                missing = len(pages) - stored.claimed
                raise PartlyStored(f"{missing} of {len(pages)} pages stored before") from None
            batch.frame = batch.frame.with_columns(pl.lit(False).alias("new"), pl.lit(True).alias("repeat"))
            return 0, len(pages)
        if table is not None:
            self._switched(type(batch))
            batch.frame = written
            return new, 0
        batch.frame = merge.with_merged(batch.frame, known, self.run)
        return new, 0

    def _table(self, batch_type: type[Batch]) -> KindTable:
        """A declared kind's table (:mod:`.kinds`), made or completed the first time this store meets it,
        in a transaction of its own (a batch tried again after a deadlock finds it made)."""
        table = self._tables.get(batch_type)
        if table is None:
            table = KindTable(batch_type)
            assert self.connection is not None
            table.create(self.connection, self.run, SCHEMA_LOCK)
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

    # --- reading (exports, trawl report, trawl search; :mod:`.reading`) ---------------------

    @classmethod
    def read_stored_kind(
        cls, uri: str, batch_type: type[Batch], columns: Sequence[str], settings: Any = None
    ) -> pl.DataFrame:
        """Stored columns of a declared kind, on a read-only connection of its own
        (:class:`~trawl.stores.contract.KindReadableStore`: ``trawl crates``, the crates alerts)."""
        return reading.stored_kind(uri, settings, batch_type, list(columns))

    @classmethod
    def read_runs(
        cls, uri: str, run_ids: list[str], settings: Any = None, size: int = READ_FRAME_ROWS
    ) -> Iterator[UrlBatch]:
        """The URLs the given runs wrote or updated, in batches, as stored now."""
        return reading.read_runs(uri, settings, run_ids, size)

    @classmethod
    def read_domain(
        cls, uri: str, domain: str, settings: Any = None, size: int = READ_FRAME_ROWS
    ) -> Iterator[UrlBatch]:
        """Every URL of ``domain`` and its subdomains, as stored now, in URL order."""
        return reading.read_domain(uri, settings, domain, size)

    @classmethod
    def list_runs(cls, uri: str, domain: str, settings: Any = None) -> pl.DataFrame:
        """The runs of ``domain``, its parents and its subdomains."""
        return reading.list_runs(uri, settings, domain)

    @classmethod
    def read_first_seen(
        cls, uri: str, run_ids: list[str], domain: str, settings: Any = None, limit: int | None = None,
        size: int = 5000,
    ) -> Iterator[pl.DataFrame]:  # fmt: skip
        """URLs of ``domain`` that one of ``run_ids`` stored first, in URL order."""
        return reading.read_first_seen(uri, settings, run_ids, domain, limit, size)

    @classmethod
    def searcher(cls, uri: str, settings: Any = None) -> PostgresSearcher:
        """The read side ``trawl search`` uses (:class:`trawl.stores.postgresql.search.PostgresSearcher`)."""
        from trawl.stores.postgresql.search import PostgresSearcher

        return PostgresSearcher(uri, settings)
