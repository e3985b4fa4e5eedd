"""The embedded default store: one SQLite file, one transaction per batch.

WAL mode and a transaction per batch mean a crash or ``kill -9`` loses at most
the batch being written: SQLite rolls an unfinished transaction back on the
next open, and committed batches are durable once the transaction returns
(``SQLITE_SYNCHRONOUS`` = ``NORMAL`` survives process crashes; ``FULL`` also
survives power loss, at a cost). A rerun merges into what is there, so it
completes a crashed run without duplicating anything. Several processes may
write one file at once (scrapyd's ``max_proc``): ``BEGIN IMMEDIATE`` takes the
write lock up front and the busy timeout waits for it.

A batch is written in up to four statements, all in C: ``INSERT OR IGNORE``
of every row (the whole batch, when every URL is new: the common case); if
some rows were there already, one lookup of those (with their last run: a
URL this run wrote before is a ``repeat``), one UPSERT that merges them
(:func:`trawl.stores.sqlite.schema.upsert_sql`), and one read of their merged
provenance back into the batch's frame, for the exports.

Any other record kind that declares its natural key (``Batch.KEY``) is kept
in a table of its own, made and merged from that declaration
(:mod:`trawl.stores.sqlite.kinds`), with the same page ledger and runs.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

import orjson
import polars as pl

from trawl.errors import StoreError, TrawlUsageError
from trawl.pipeline.context import RunContext
from trawl.records.batches import URL_SCHEMA, Batch, UrlBatch
from trawl.records.runs import FIRST_SEEN_SCHEMA, RUNS_SCHEMA, covering_domains, empty_runs
from trawl.run import statkeys
from trawl.settings_checks import Setting, one_of, read, whole
from trawl.stores.contract import KEYED_KINDS, PartlyStored
from trawl.stores.location import data_dir
from trawl.stores.sqlite.kinds import KindTable
from trawl.stores.sqlite.schema import INSERT_NEW, MERGED, SCHEMA, register_functions, upgrade, upsert_sql

_SETS = ("sources", "statuses", "mimes")


def sqlite_path(uri: str) -> str:
    """``sqlite:///trawl.db`` -> ``trawl.db``; ``sqlite:////abs.db``, ``sqlite:///~/x.db`` too."""
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise TrawlUsageError(
            f"STORE_URI {uri!r}: a SQLite URI has no host (use sqlite:///relative.db"
            " or sqlite:////absolute/path.db)"
        )
    path = unquote(parts.path)
    if path.startswith("/"):
        path = path[1:]
    if not path:
        raise TrawlUsageError(f"STORE_URI {uri!r} names no database file")
    if path == ":memory:":
        return path
    return str(Path(os.path.expanduser(path)))


def _json_list(values: list[str]) -> str:
    """One parameter for ``IN (SELECT value FROM json_each(?))``: no host-parameter limit."""
    return orjson.dumps(values).decode()


def _suffix_pattern(domain: str) -> str:
    """``LIKE`` pattern of the subdomains of ``domain`` (``ESCAPE '\\'``)."""
    return "%." + domain.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _split_sets(frame: pl.DataFrame) -> pl.DataFrame:
    """Comma-joined set columns as stored -> sorted lists, as batches hold them."""
    empty = pl.lit([], dtype=pl.List(pl.String))
    return frame.with_columns(
        pl.when(pl.col(c) == "").then(empty).otherwise(pl.col(c).str.split(",")).alias(c) for c in _SETS
    )


class SqliteStore:
    """URL records, and those of declared kinds, in a SQLite database file (see the module docstring)."""

    #: Its settings, their defaults and checks (trawl.settings_checks).
    settings_declared: ClassVar[dict[str, Setting]] = {
        # NORMAL survives process crashes; FULL also power losses, at a cost per commit.
        "SQLITE_SYNCHRONOUS": Setting(
            "NORMAL",
            one_of("off", "normal", "full", "extra", "0", "1", "2", "3"),
            "SQLite's synchronous pragma",
        ),
        "SQLITE_CACHE_MB": Setting(64, whole(1), "SQLite's page cache, in MB"),
    }

    kinds: ClassVar[frozenset[str]] = frozenset({"url", KEYED_KINDS})

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
        self.connection: sqlite3.Connection | None = None
        # Batches may be written from a thread pool; one writer at a time.
        self._lock = threading.Lock()
        self._last_batch_time = 0.0
        self.run = 0
        self._upsert = ""
        self._tables: dict[type[Batch], KindTable] = {}

    # --- opening and closing -----------------------------------------------------------

    def open(self) -> None:
        try:
            if self.path != ":memory:" and not Path(self.path).absolute().parent.is_dir():
                raise StoreError(f"cannot open the SQLite store {self.path!r}: its directory does not exist")
            con = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=60)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute(f"PRAGMA synchronous={self.synchronous}")
            # Inserts land all over the URL index: a bigger page cache keeps its
            # inner pages in memory instead of re-reading them for every batch.
            con.execute(f"PRAGMA cache_size=-{int(self.cache_mb) * 1024}")
            con.executescript(SCHEMA)
            upgrade(con)
            register_functions(con)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the SQLite store {self.path!r}: {exc}") from None
        self.connection = con
        target = self.context.target
        job = self.context.job_id or self.context.run_id
        with self._lock:
            # Rows refer to runs by this small number: a 32-character run id in
            # three columns of every row made the table half as big again.
            known = con.execute("SELECT run FROM runs WHERE run_id = ?", (self.context.run_id,)).fetchone()
            if known is not None:  # a resumed run goes on under its number
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

    def close(self, reason: str) -> None:
        con = self.connection
        if con is None:
            return
        stats = self.context.stats.get_stats()
        with self._lock:
            con.execute(
                "UPDATE runs SET finished_at = ?, finish_reason = ?, stats = ? WHERE run_id = ?",
                (time.time(), reason, orjson.dumps(stats, default=str).decode(), self.context.run_id),
            )
            con.close()
        self.connection = None

    # --- writing -----------------------------------------------------------------------

    def write_batch(self, batch: Batch) -> int:
        """Insert what is new, merge what is known; one transaction (see the module docstring)."""
        frame = batch.frame
        if not frame.height and not batch.pages:
            return 0
        con = self.connection
        assert con is not None, "store not open"
        with self._lock:
            now = self._next_batch_time()
            if isinstance(batch, UrlBatch):
                rows = self._rows(frame, batch.source, now)
                write = partial(self._write_urls, con, frame, rows, now)
            else:
                table = self._table(con, type(batch))
                write = partial(table.write, con, frame, self.run)
            con.execute("BEGIN IMMEDIATE")
            try:
                if not self._claim_or_roll_back(con, batch, now):
                    return 0
                written, new = write()
                con.execute("COMMIT")
            except PartlyStored:
                raise  # rolled back already
            except BaseException:
                con.execute("ROLLBACK")
                raise
        batch.frame = written
        return new

    def _write_urls(
        self, con: sqlite3.Connection, frame: pl.DataFrame, rows: pl.DataFrame, now: float
    ) -> tuple[pl.DataFrame, int]:
        """URL rows inserted or merged; the batch's frame as stored, and how many were new."""
        size = frame.height
        inserted = con.executemany(INSERT_NEW, rows.iter_rows()).rowcount
        if inserted == size:
            return frame.with_columns(pl.lit(True).alias("new"), pl.lit(False).alias("repeat")), inserted
        merged = self._merge_known(con, rows, now)
        if inserted + merged.height != size:
            # INSERT OR IGNORE also skips rows that break a constraint:
            # never let such a row vanish while being counted as stored.
            raise StoreError(f"{size - inserted - merged.height} of {size} URLs could not be stored")
        return self._with_merged(frame, merged), inserted

    def _table(self, con: sqlite3.Connection, batch_type: type[Batch]) -> KindTable:
        """A declared kind's table, made (or completed) the first time this store meets the kind."""
        table = self._tables.get(batch_type)
        if table is None:
            table = self._tables[batch_type] = KindTable(batch_type)
            table.create(con)
        return table

    def _claim_or_roll_back(self, con: sqlite3.Connection, batch: Batch, now: float) -> bool:
        """Claim the batch's pages in the ledger (in the open transaction); False, rolled back and
        every row marked ``repeat``, when this run stored them all before; ``PartlyStored`` when some."""
        pages = batch.pages
        claimed = self._claim_pages(con, batch.source, pages, now) if pages else 0
        if claimed == len(pages):
            return True
        # This run stored the page before (a resumed run, a refetch):
        # merging it again would count its captures twice.
        con.execute("ROLLBACK")
        if claimed:
            raise PartlyStored(f"{len(pages) - claimed} of {len(pages)} pages stored before")
        batch.frame = batch.frame.with_columns(pl.lit(False).alias("new"), pl.lit(True).alias("repeat"))
        self.context.stats.inc_value(statkeys.PAGES_ALREADY_STORED, len(pages))
        return False

    def _rows(self, frame: pl.DataFrame, source: str, now: float) -> pl.DataFrame:
        """The batch in the table's columns, built in polars (one row per URL)."""
        run = self.run
        counts = pl.format('{{"{}":[{},{},{}]}}', pl.lit(source), pl.lit(run), "captures", "captures")
        return frame.select(
            "url",
            "host",
            *(pl.col(c).list.join(",") for c in ("sources",)),
            "first_seen",
            "last_seen",
            "captures",
            pl.col("statuses").list.join(","),
            pl.col("mimes").list.join(","),
            counts.alias("source_counts"),
            pl.lit(run).alias("first_run"),
            pl.lit(run).alias("last_run"),
            pl.lit(now).alias("added_at"),
            pl.lit(now).alias("updated_at"),
        )

    def _merge_known(self, con: sqlite3.Connection, rows: pl.DataFrame, now: float) -> pl.DataFrame:
        """Merge the rows this batch did not insert; their merged provenance and previous run."""
        urls = _json_list(rows.get_column("url").to_list())
        known = con.execute(
            "SELECT url, last_run FROM urls WHERE url IN (SELECT value FROM json_each(?)) AND added_at != ?",
            (urls, now),
        ).fetchall()
        if not known:
            return pl.DataFrame(schema={"url": pl.String, "previous_run": pl.Int64})
        previous = pl.DataFrame(known, schema={"url": pl.String, "previous_run": pl.Int64}, orient="row")
        known_rows = rows.join(previous.select("url"), on="url", how="semi")
        con.executemany(self._upsert, known_rows.iter_rows())
        merged = con.execute(
            f"SELECT {MERGED} FROM urls WHERE url IN (SELECT value FROM json_each(?))",
            (_json_list(previous.get_column("url").to_list()),),
        ).fetchall()
        schema = {name: URL_SCHEMA[name] if name not in _SETS else pl.String for name in MERGED.split(", ")}
        return _split_sets(pl.DataFrame(merged, schema=schema, orient="row")).join(previous, on="url")

    def _with_merged(self, frame: pl.DataFrame, merged: pl.DataFrame) -> pl.DataFrame:
        """The batch with the merged provenance of known URLs, and ``new``/``repeat`` set."""
        marks = merged.select(
            "url", pl.lit(False).alias("new"), (pl.col("previous_run") == self.run).alias("repeat")
        )
        updated = frame.update(merged.drop("previous_run"), on="url").drop("new", "repeat")
        return (
            updated.join(marks, on="url", how="left", maintain_order="left")
            .with_columns(pl.col("new").fill_null(True), pl.col("repeat").fill_null(False))
            .select(frame.columns)
        )

    def _claim_pages(self, con: sqlite3.Connection, source: str, pages: dict[str, int], now: float) -> int:
        """Record the pages in the ledger; how many this run did not have already."""
        return con.executemany(
            "INSERT OR IGNORE INTO pages (run, source, page, rows, stored_at) VALUES (?, ?, ?, ?, ?)",
            [(self.run, source, page, rows, now) for page, rows in pages.items()],
        ).rowcount

    def done_pages(self, source: str) -> dict[str, int]:
        """Pages this run stored already (page key -> upstream rows): what a resumed run skips."""
        assert self.connection is not None
        with self._lock:
            return dict(
                self.connection.execute(
                    "SELECT page, rows FROM pages WHERE run = ? AND source = ?", (self.run, source)
                )
            )

    def _next_batch_time(self) -> float:
        """A timestamp that no earlier batch of this store used: it marks our inserts."""
        now = max(time.time(), self._last_batch_time + 1e-6)
        self._last_batch_time = now
        return now

    # --- reading -----------------------------------------------------------------------

    @classmethod
    def read_runs(
        cls, uri: str, run_ids: list[str], settings: Any = None, size: int = 5000
    ) -> Iterator[UrlBatch]:
        """The URLs the given runs wrote or updated, in batches, as stored now."""
        if not run_ids:
            return
        runs = "(SELECT run FROM runs WHERE run_id IN (SELECT value FROM json_each(?)))"
        yield from cls._read(
            uri,
            f"SELECT url, host, sources, first_seen, last_seen, captures, statuses, mimes,"
            f" first_run IN {runs} FROM urls WHERE last_run IN {runs} ORDER BY url",
            (_json_list(run_ids), _json_list(run_ids)),
            size,
        )

    @classmethod
    def read_domain(cls, uri: str, domain: str, settings: Any = None, size: int = 5000) -> Iterator[UrlBatch]:
        """Every URL of ``domain`` and its subdomains, as stored now, in URL order."""
        yield from cls._read(
            uri,
            "SELECT url, host, sources, first_seen, last_seen, captures, statuses, mimes, 0"
            " FROM urls WHERE host = ? OR host LIKE ? ESCAPE '\\' ORDER BY url",
            (domain, _suffix_pattern(domain)),
            size,
        )

    @staticmethod
    def _read(uri: str, sql: str, params: tuple[Any, ...], size: int) -> Iterator[UrlBatch]:
        path = sqlite_path(uri)
        if path != ":memory:" and not Path(path).exists():
            return
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        schema = {name: URL_SCHEMA[name] if name not in _SETS else pl.String for name in list(URL_SCHEMA)[:8]}
        schema["new"] = pl.Int64
        try:
            cursor = con.execute(sql, params)
            while rows := cursor.fetchmany(size):
                frame = _split_sets(pl.DataFrame(rows, schema=schema, orient="row"))
                yield UrlBatch(
                    "store", frame.with_columns(pl.col("new").cast(pl.Boolean), pl.lit(False).alias("repeat"))
                )
        finally:
            con.close()

    # --- reporting (trawl report new, the run summary) -------------------------------------

    @classmethod
    def list_runs(cls, uri: str, domain: str, settings: Any = None) -> pl.DataFrame:
        """The runs of ``domain``, its parents and its subdomains (``job``: the run id before jobs)."""
        con = cls._connect_read(uri)
        if con is None:
            return empty_runs()
        try:
            upgraded = "job" in {row[1] for row in con.execute("PRAGMA table_info(runs)")}
            job = "coalesce(job, run_id)" if upgraded else "run_id"
            rows = con.execute(
                f"SELECT run_id, {job}, source, domain, started_at, finished_at, finish_reason FROM runs"
                " WHERE domain IN (SELECT value FROM json_each(?)) OR domain LIKE ? ESCAPE '\\'",
                (_json_list(covering_domains(domain)), _suffix_pattern(domain)),
            ).fetchall()
        finally:
            con.close()
        return pl.DataFrame(rows, schema=RUNS_SCHEMA, orient="row")

    @classmethod
    def read_first_seen(
        cls, uri: str, run_ids: list[str], domain: str, settings: Any = None, limit: int | None = None,
        size: int = 5000,
    ) -> Iterator[pl.DataFrame]:  # fmt: skip
        """URLs of ``domain`` that one of ``run_ids`` stored first, in URL order (one join, in SQL)."""
        if not run_ids or limit == 0:
            return
        con = cls._connect_read(uri)
        if con is None:
            return
        sql = (
            "SELECT u.url, u.host, u.sources, u.first_seen, u.last_seen, u.captures, u.statuses, u.mimes,"
            " r.run_id FROM urls u JOIN runs r ON r.run = u.first_run"
            " WHERE r.run_id IN (SELECT value FROM json_each(?))"
            " AND (u.host = ? OR u.host LIKE ? ESCAPE '\\')"
            " ORDER BY u.url"
        )
        params: tuple[Any, ...] = (_json_list(run_ids), domain, _suffix_pattern(domain))
        if limit is not None:
            sql += " LIMIT ?"
            params += (limit,)
        schema = {name: pl.String if name in _SETS else kind for name, kind in FIRST_SEEN_SCHEMA.items()}
        try:
            cursor = con.execute(sql, params)
            while rows := cursor.fetchmany(size):
                yield _split_sets(pl.DataFrame(rows, schema=schema, orient="row"))
        finally:
            con.close()

    @staticmethod
    def _connect_read(uri: str) -> sqlite3.Connection | None:
        """A read-only connection; ``None`` when the file does not exist (nothing stored yet)."""
        path = sqlite_path(uri)
        if path != ":memory:" and not Path(path).exists():
            return None
        try:
            return sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the SQLite store {path!r}: {exc}") from None

    @classmethod
    def searcher(cls, uri: str, settings: Any = None):  # type: ignore[no-untyped-def]
        """The read side ``scrapy search`` uses (:class:`trawl.stores.sqlite.search.SqliteSearcher`).

        Never called by crawls: the indexes a search needs are created there, not
        in this store's write path.
        """
        from trawl.stores.sqlite.search import SqliteSearcher

        return SqliteSearcher(sqlite_path(uri))
