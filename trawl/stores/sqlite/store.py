"""The embedded default store: one SQLite file, one transaction per batch.

WAL mode and a transaction per batch mean a crash or ``kill -9`` loses at most
the batch being written (the URL batches queued together, written in one
transaction, :mod:`.urlgroup`: none of them was reported stored yet),
with its pages in the ledger: SQLite rolls an unfinished transaction back on the
next open, and committed batches are durable once the transaction returns
(``SQLITE_SYNCHRONOUS`` = ``NORMAL`` survives process crashes; ``FULL`` also
survives power loss, at a cost). A rerun merges into what is there, so it
completes a crashed run without duplicating anything. Several processes may
write one file at once (scrapyd's ``max_proc``): ``BEGIN IMMEDIATE`` takes the
write lock up front and the busy timeout waits for it.

A URL batch is merged set-wise in three statements, all in C
(:mod:`trawl.stores.sqlite.merge`), on the store's writer thread
(:mod:`trawl.stores.sqlite.writer`), the only thread its connection is used
on: the pipeline awaits the batch (``write_batch_async``) while the reactor
goes on downloading and parsing.

Any other record kind that declares its natural key (``Batch.KEY``) is kept
in a table of its own, made and merged from that declaration
(:mod:`trawl.stores.sqlite.kinds`), with the same page ledger and runs.

The write path (polars, the writer thread, the merge and staging modules) is
imported by the methods that write or read frames, not with the class: a read
command looks the class up for its capabilities and its URI checks, and the
write path's imports were 0.2 s of its 0.6 s.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import orjson

from trawl.errors import StoreError, TrawlUsageError
from trawl.settings_checks import Setting, one_of, read, whole
from trawl.stores.contract import KEYED_KINDS, PartlyStored
from trawl.stores.location import data_dir
from trawl.stores.sqlite.errors import describe, store_error
from trawl.stores.sqlite.ledger import PageLedger
from trawl.stores.sqlite.readside import SqliteReadSide, sqlite_path
from trawl.stores.sqlite.schema import (
    SCHEMA,
    STAGING,
    stage_from_sql,
    stage_sql,
    upgrade,
    upsert_sql,
)
from trawl.stores.sqlite.urlwrites import UrlWrites
from trawl.stores.writer import WritesOnThread

if TYPE_CHECKING:  # the write path: imported where it is used (see the module docstring)
    import polars as pl

    from trawl.pipeline.context import RunContext
    from trawl.records.batches import Batch
    from trawl.stores.sqlite.ingestturn import Turn
    from trawl.stores.sqlite.kinds import KindTable
    from trawl.stores.sqlite.writer import WriterThread

_SETS = ("sources", "statuses", "mimes")
T = TypeVar("T")


class SqliteStore(SqliteReadSide, UrlWrites, WritesOnThread):
    """URL records, and those of declared kinds, in a SQLite database file (see the module docstring)."""

    #: Its settings, their defaults and checks (trawl.settings_checks).
    settings_declared: ClassVar[dict[str, Setting]] = {
        # NORMAL survives process crashes; FULL also power losses, at a cost per commit.
        "SQLITE_SYNCHRONOUS": Setting(
            "NORMAL",
            one_of("off", "normal", "full", "extra", "0", "1", "2", "3"),
            "SQLite's synchronous pragma",
        ),
        # 16, not 64: the file's pages stay in the OS's cache anyway, and at 64 MB the crawl's peak
        # RSS grew with the store (1.26x from 250,000 to 2,000,000 captures; 1.12x at 16) for no
        # speed (1,200,000 URLs merged in 50,000-row batches: 17.2-19.8 s of CPU at 16, 18.6-20.5 at 64).
        "SQLITE_CACHE_MB": Setting(16, whole(1), "SQLite's page cache, in MB"),
    }

    kinds: ClassVar[frozenset[str]] = frozenset({"url", KEYED_KINDS})

    @classmethod
    def check_exists(cls, uri: str) -> None:
        """A read of a file that is not there is a typo or a crawl not run yet: one line saying so."""
        path = sqlite_path(uri)
        if path != ":memory:" and not Path(path).is_file():
            raise StoreError(f"no SQLite store at {path!r} (run a crawl first, or set STORE_URI)")

    @classmethod
    def check_uri(cls, uri: str) -> None:
        """The directory must exist: it is never created (a cron job as root made ``/nonexistent/dir``).

        Except trawl's own data directory, where the default store is (:mod:`trawl.stores.location`):
        made on first use, readable by its user only, as XDG asks.
        """
        path = sqlite_path(uri)
        if path == ":memory:":
            return
        directory = Path(path).absolute().parent
        if not directory.is_dir() and directory == data_dir():
            try:
                directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                raise TrawlUsageError(f"STORE_URI {uri!r}: cannot create {str(directory)!r}: {exc}") from None
        if not directory.is_dir():
            raise TrawlUsageError(
                f"STORE_URI {uri!r}: the directory {str(directory)!r} does not exist"
                " (create it, or name a file in an existing directory)"
            )

    @classmethod
    def describe_uri(cls, uri: str) -> str:
        """``sqlite:///trawl.db`` -> ``sqlite:////abs/dir/trawl.db``: where the file really is."""
        path = sqlite_path(uri)
        return "sqlite:///:memory:" if path == ":memory:" else f"sqlite:///{Path(path).resolve()}"

    def __init__(self, uri: str, context: RunContext) -> None:
        self.path = sqlite_path(uri)
        self.context = context
        settings = context.settings
        self.synchronous = read(settings, self.settings_declared, "SQLITE_SYNCHRONOUS")
        self.cache_mb = int(read(settings, self.settings_declared, "SQLITE_CACHE_MB"))
        #: Made, used and closed on the writer thread only (``check_same_thread``).
        self.connection: sqlite3.Connection | None = None
        self._writer: WriterThread | None = None
        # The sources of one ``crawl all`` share the file's writer thread (see .writer).
        memory = self.path == ":memory:"
        self._writer_key = f":memory:{id(self)}" if memory else str(Path(self.path).resolve())
        self._last_batch_time = 0.0
        self.run = 0
        self._upsert = ""
        self._stage = ""
        self._stage_loaded = ""
        self._tables: dict[type[Batch], KindTable] = {}
        #: Set on the writer thread when a batch failed: batches queued behind it are refused.
        self._failed: str | None = None
        #: While a dump load's ingest process writes into this file: this store's writer goes
        #: first at the write lock (:mod:`.ingestturn`; set and cleared by :mod:`.ingest`).
        self.turn: Turn | None = None
        #: The page ledger's claims (:mod:`.ledger`).
        self.ledger = PageLedger()

    # --- opening and closing -----------------------------------------------------------

    def open(self) -> None:
        from trawl.stores.sqlite.writer import WriterThread

        if self.path != ":memory:" and not Path(self.path).absolute().parent.is_dir():
            raise StoreError(f"cannot open the SQLite store {self.path!r}: its directory does not exist")
        self._writer = WriterThread.acquire(self._writer_key)
        try:
            self._writer.call(self._open)
        except BaseException as exc:
            WriterThread.release(self._writer_key)
            self._writer = None
            if isinstance(exc, sqlite3.Error):  # registering the run (a full disk, a read-only file)
                raise store_error(f"cannot open the SQLite store {self.path!r}", exc) from None
            raise

    def _open(self) -> None:
        """On the writer thread: the file's connection (:mod:`.writer`), then register the run."""
        from trawl.stores.sqlite import bulk
        from trawl.stores.sqlite.bulk import BulkStage

        assert self._writer is not None
        con = self._writer.connection(self._connect)
        self.connection = con
        if self.path != ":memory:" and not self.path.startswith("file:"):
            self._writer.checkpoint_beside(con, self.path, self.synchronous)
        if self._writer.bulk is None and bulk.available(self.path):
            self._writer.bulk = BulkStage(self.path)
        target = self.context.target
        job = self.context.job_id or self.context.run_id
        # Rows refer to runs by this small number: a 32-character run id in
        # three columns of every row made the table half as big again.
        known = con.execute("SELECT run FROM runs WHERE run_id = ?", (self.context.run_id,)).fetchone()
        if self.context.joined:  # another worker's spread run: its record is the owner's to keep
            if known is None:
                raise StoreError(f"the spread run {self.context.run_id} is not in the store")
            self.run = known[0]
        elif known is not None:  # a resumed run goes on under its number
            self.run = known[0]
            # ... as part of this invocation: its URLs are the last crawl's.
            con.execute(
                "UPDATE runs SET finished_at = NULL, finish_reason = NULL, job = ? WHERE run = ?",
                (job, self.run),
            )
        else:
            self.run = con.execute(
                "INSERT INTO runs (run_id, source, domain, started_at, job) VALUES (?, ?, ?, ?, ?)",
                (self.context.run_id, self.context.source, target and target.domain, time.time(), job),
            ).lastrowid
        self._upsert = upsert_sql(self.context.source, self.run)
        self._stage = stage_sql(self.context.source)
        self._stage_loaded = stage_from_sql(self.context.source, f"{bulk.SCHEMA}.{bulk.TABLE}")

    def _connect(self) -> sqlite3.Connection:
        """The file's connection, made once a process (:meth:`WriterThread.connection`), on its thread."""
        con = None
        try:
            con = sqlite3.connect(self.path, isolation_level=None, timeout=60)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute(f"PRAGMA synchronous={self.synchronous}")
            # Inserts land all over the URL index: a bigger page cache keeps its
            # inner pages in memory instead of re-reading them for every batch.
            con.execute(f"PRAGMA cache_size=-{int(self.cache_mb) * 1024}")
            # The staging table lives in memory: a batch never touches the disk twice.
            con.execute("PRAGMA temp_store=MEMORY")
            con.executescript(SCHEMA)
            upgrade(con)
            con.execute(STAGING)
        except sqlite3.Error as exc:
            if con is not None:
                con.close()
            raise store_error(f"cannot open the SQLite store {self.path!r}", exc) from None
        return con

    def close(self, reason: str) -> None:
        """Record the run's end on the writer thread, after the last queued batch; end the thread."""
        from trawl.stores.sqlite.writer import WriterThread

        writer = self._writer
        if writer is None:
            return
        stats = orjson.dumps(self.context.stats.get_stats(), default=str).decode()
        try:
            writer.call(self._close, reason, stats)
        finally:
            WriterThread.release(self._writer_key)
            self._writer = None

    def _close(self, reason: str, stats: str) -> None:
        con = self.connection
        if con is None:
            return
        self.connection = None  # the writer thread closes the file's connection after its last store
        if self.context.joined:
            return
        try:
            con.execute(
                "UPDATE runs SET finished_at = ?, finish_reason = ?, stats = ? WHERE run_id = ?",
                (time.time(), reason, stats, self.context.run_id),
            )
        except sqlite3.Error as exc:
            # The cause alone: the pipeline says "cannot record the end of the run", and one cause
            # across crawl all's sources is one ERROR line (a full disk fails the last UPDATE too).
            raise StoreError(describe(exc)) from None

    def in_turn(self, function: Callable[[], T]) -> T:
        """``function()`` with this store's writer first at the write lock (:attr:`turn`)."""
        turn = self.turn
        if turn is None:
            return function()
        with turn.taken():
            return function()

    def on_writer(self, function: Callable[[], T]) -> T:
        """``function()`` on the writer thread, where the connection may be used (checks, maintenance)."""
        assert self._writer is not None, "store not open"
        return self._writer.call(function)

    # --- writing -----------------------------------------------------------------------

    def _write(self, batch: Batch) -> tuple[int, int]:
        """On the writer thread: a declared kind's batch in one transaction; (new records, pages
        stored before)."""
        return self.in_turn(lambda: self._write_declared(batch))

    def _write_declared(self, batch: Batch) -> tuple[int, int]:
        from trawl.stores.sqlite import prestage
        from trawl.stores.sqlite.bulk import BulkStage

        con = self.connection
        assert con is not None, "store not open"
        staged_file = prestage.stage_file(batch)  # a dump batch's rows, in a file of their own already
        if self._failed is not None:
            # Queued before the failure was known on the reactor: never commit after a failed batch,
            # so that the store holds exactly what was written before the one error line.
            if staged_file is not None:
                prestage.detach(con, staged_file)
            raise StoreError(self._refusal())
        if staged_file == prestage.INGESTED and not type(batch).SWITCHES:
            return self._claim_later(batch)
        now = self._next_batch_time()
        source = None
        try:
            if staged_file is not None:
                source = prestage.attach(con, staged_file)
            elif type(batch).STAGED and self._writer.bulk is not None and batch.frame.height:
                # Before the transaction: the scratch file is attached only outside one (:mod:`.bulk`).
                rows = self._table(con, type(batch)).staged_rows(batch.frame, self.run)
                source = self._writer.bulk.put(con, rows)
            con.execute("BEGIN IMMEDIATE")
            if type(batch).SWITCHES:
                self.ledger.claim_noted(con, self.run, now)
            skipped = self.ledger.claim_or_undo(con, self.run, batch, now, "ROLLBACK")
            if skipped:
                return 0, skipped
            table = self._table(con, type(batch))
            written, new = table.write(con, batch.frame, self.run, source, staged_file is not None)
            con.execute("COMMIT")
            self._writer.committed(con, self.path)
            if type(batch).SWITCHES:  # the staged tables are live ones now: a later load starts anew
                self.ledger.forget_noted()
                switched = set(type(batch).SWITCHES)
                for batch_type in [t for t in self._tables if t.STAGED and t.kind in switched]:
                    del self._tables[batch_type]
        except PartlyStored:
            raise  # rolled back already
        except BaseException as exc:
            failure = self._fail(exc)
            if con.in_transaction:
                try:
                    con.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # SQLite rolled back already (a full disk can end the transaction itself)
            raise failure from None
        finally:
            if staged_file is not None:
                prestage.detach(con, staged_file)
            elif source is not None:
                BulkStage.detach(con)
        batch.frame = written
        return new, 0

    def _claim_later(self, batch: Batch) -> tuple[int, int]:
        """A batch whose rows the load's ingest process wrote: its pages are claimed with the
        switch (:mod:`.ledger`); the checkpointer is poked to copy what it wrote."""
        import polars as pl

        assert self.connection is not None and self._writer is not None
        self.ledger.note(batch.source, batch.pages)
        self._writer.committed(self.connection, self.path)
        batch.frame = batch.frame.with_columns(pl.lit(True).alias("new"), pl.lit(False).alias("repeat"))
        return batch.frame.height, 0

    def _refusal(self) -> str:
        return f"not written: an earlier batch failed ({self._failed})"

    def _fail(self, exc: BaseException) -> BaseException:
        """Remember the first failure (later batches are refused); what the batch's caller gets."""
        if self._failed is None:
            self._failed = describe(exc) if isinstance(exc, sqlite3.Error) else str(exc) or type(exc).__name__
        return StoreError(describe(exc)) if isinstance(exc, sqlite3.Error) else exc

    def _table(self, con: sqlite3.Connection, batch_type: type[Batch]) -> KindTable:
        """A declared kind's table, made (or completed) the first time this store meets the kind."""
        from trawl.stores.sqlite.kinds import KindTable

        table = self._tables.get(batch_type)
        if table is None:
            table = self._tables[batch_type] = KindTable(batch_type)
            table.create(con, self.run)
        return table

    def newest(self, batch_type: type[Batch], column: str) -> Any:
        """The greatest ``column`` among a declared kind's live records (None: none yet): the
        crates source asks for the newest db-dump loaded, to skip one that is not newer."""
        from trawl.stores.sqlite import kinds

        assert self._writer is not None, "store not open"
        return self._writer.call(lambda: kinds.newest(self.connection, batch_type, column))

    def done_pages(self, source: str) -> dict[str, int]:
        """Pages this run stored already (page key -> upstream rows): what a resumed run skips."""
        assert self._writer is not None, "store not open"
        return self._writer.call(lambda: self.ledger.done(self.connection, self.run, source))

    def read_kind(self, batch_type: type[Batch], columns: Sequence[str]) -> pl.DataFrame:
        """Stored columns of a declared kind (:class:`~trawl.stores.contract.KindReadingStore`), read on
        the writer's connection: what this run wrote so far included."""
        from trawl.stores.sqlite import reading

        assert self._writer is not None, "store not open"
        return self._writer.call(reading.kind_columns, self.connection, batch_type, list(columns))

    def _next_batch_time(self) -> float:
        """A timestamp that no earlier batch of this store used (``added_at`` of its inserts)."""
        now = max(time.time(), self._last_batch_time + 1e-6)
        self._last_batch_time = now
        return now
