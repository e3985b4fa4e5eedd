"""The embedded default store: one SQLite file, one transaction per batch.

WAL mode and a transaction per batch mean a crash or ``kill -9`` loses at most
the batch being written: SQLite rolls an unfinished transaction back on the
next open, and committed batches are durable once the transaction returns
(``SQLITE_SYNCHRONOUS`` = ``NORMAL`` survives process crashes; ``FULL`` also
survives power loss, at a cost). A rerun merges into what is there, so it
completes a crashed run without duplicating anything.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from itertools import repeat
from pathlib import Path
from urllib.parse import unquote, urlsplit

import orjson

from trawl import hookimpl
from trawl.context import RunContext
from trawl.errors import StoreError, TrawlUsageError
from trawl.items import UrlBatch
from trawl.provenance import (
    add_run_count,
    dumps_counts,
    join_set,
    loads_counts,
    max_ts,
    min_ts,
    split_set,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS urls (
    url           TEXT PRIMARY KEY,
    host          TEXT NOT NULL,
    sources       TEXT NOT NULL,
    first_seen    TEXT,
    last_seen     TEXT,
    captures      INTEGER NOT NULL,
    statuses      TEXT NOT NULL,
    mimes         TEXT NOT NULL,
    source_counts TEXT NOT NULL,
    first_run     INTEGER NOT NULL,
    last_run      INTEGER NOT NULL,
    added_at      REAL NOT NULL,
    updated_at    REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pages (
    run           INTEGER NOT NULL,
    source        TEXT NOT NULL,
    page          TEXT NOT NULL,
    rows          INTEGER NOT NULL,
    stored_at     REAL NOT NULL,
    PRIMARY KEY (run, source, page)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
    run           INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id        TEXT NOT NULL UNIQUE,
    source        TEXT NOT NULL,
    domain        TEXT,
    started_at    REAL NOT NULL,
    finished_at   REAL,
    finish_reason TEXT,
    stats         TEXT
);
"""

_INSERT_NEW = (
    "INSERT OR IGNORE INTO urls (url, host, sources, first_seen, last_seen, captures, statuses, mimes,"
    " source_counts, first_run, last_run, added_at, updated_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE = (
    "UPDATE urls SET sources = ?, first_seen = ?, last_seen = ?, captures = ?, statuses = ?,"
    " mimes = ?, source_counts = ?, last_run = ?, updated_at = ? WHERE url = ?"
)
_SELECT_CHUNK = 500  # well under SQLite's host-parameter limit


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


def _chunks(values: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


class SqliteStore:
    """URL records in a SQLite database file (see the module docstring)."""

    @staticmethod
    def check_uri(uri: str) -> None:
        sqlite_path(uri)

    def __init__(self, uri: str, context: RunContext) -> None:
        self.path = sqlite_path(uri)
        self.context = context
        self.synchronous = context.settings.get("SQLITE_SYNCHRONOUS", "NORMAL")
        self.cache_mb = context.settings.getint("SQLITE_CACHE_MB", 64)
        self.connection: sqlite3.Connection | None = None
        # Batches may be written from a thread pool; one writer at a time.
        self._lock = threading.Lock()
        self._last_batch_time = 0.0
        self.run = 0

    def open(self) -> None:
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=60)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute(f"PRAGMA synchronous={self.synchronous}")
            # Inserts land all over the URL index: a bigger page cache keeps its
            # inner pages in memory instead of re-reading them for every batch.
            con.execute(f"PRAGMA cache_size=-{int(self.cache_mb) * 1024}")
            con.executescript(SCHEMA)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the SQLite store {self.path!r}: {exc}") from None
        self.connection = con
        target = self.context.target
        with self._lock:
            # Rows refer to runs by this small number: a 32-character run id in
            # three columns of every row made the table half as big again.
            known = con.execute("SELECT run FROM runs WHERE run_id = ?", (self.context.run_id,)).fetchone()
            if known is not None:  # a resumed run goes on under its number
                self.run = known[0]
                con.execute(
                    "UPDATE runs SET finished_at = NULL, finish_reason = NULL WHERE run = ?", (self.run,)
                )
            else:
                self.run = con.execute(
                    "INSERT INTO runs (run_id, source, domain, started_at) VALUES (?, ?, ?, ?)",
                    (self.context.run_id, self.context.source, target and target.domain, time.time()),
                ).lastrowid

    def write_batch(self, batch: UrlBatch) -> int:
        """Insert what is new, merge what is known; one transaction.

        ``INSERT OR IGNORE`` does the existence check in C; only when some rows
        were already there (a rerun, another source, a URL split over two pages)
        are those rows read back and merged in Python.
        """
        urls = batch.urls
        size = len(urls)
        if not size and not batch.page:
            return 0
        con = self.connection
        assert con is not None, "store not open"
        run_id = self.run
        source = batch.source
        counts_prefix = '{"%s":[%d,' % (source.replace('"', ""), run_id)  # noqa: UP031
        counts = [f"{counts_prefix}{n},{n}]}}" for n in batch.captures]
        sources = batch.sources or repeat(source, size)
        with self._lock:
            now = self._next_batch_time()
            con.execute("BEGIN IMMEDIATE")
            try:
                if batch.page and not self._claim_page(con, batch, now):
                    # This run stored the page before (a resumed run, a refetch):
                    # merging it again would count its captures twice.
                    con.execute("ROLLBACK")
                    batch.new = [False] * size
                    batch.repeats = set(urls)
                    self.context.stats.inc_value("trawl/pages_already_stored")
                    return 0
                inserted = con.executemany(
                    _INSERT_NEW,
                    zip(
                        urls,
                        batch.hosts,
                        sources,
                        batch.first_seen,
                        batch.last_seen,
                        batch.captures,
                        batch.statuses,
                        batch.mimes,
                        counts,
                        repeat(run_id),
                        repeat(run_id),
                        repeat(now),
                        repeat(now),
                    ),
                ).rowcount
                new = [True] * size
                known = self._merge_known(con, batch, new, now, inserted) if inserted < size else 0
                if inserted + known != size:
                    # INSERT OR IGNORE also skips rows that break a constraint:
                    # never let such a row vanish while being counted as stored.
                    raise StoreError(f"{size - inserted - known} of {size} URLs could not be stored")
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        batch.new = new
        return inserted

    def _claim_page(self, con: sqlite3.Connection, batch: UrlBatch, now: float) -> bool:
        """Record the page in the ledger; False if this run has it already."""
        return (
            con.execute(
                "INSERT OR IGNORE INTO pages (run, source, page, rows, stored_at) VALUES (?, ?, ?, ?, ?)",
                (self.run, batch.source, batch.page, batch.page_rows, now),
            ).rowcount
            == 1
        )

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

    def _merge_known(
        self, con: sqlite3.Connection, batch: UrlBatch, new: list[bool], now: float, inserted: int
    ) -> int:
        """Merge provenance into rows that existed before this batch; return how many."""
        run_id = self.run
        source = batch.source
        position = {url: i for i, url in enumerate(batch.urls)}
        if batch.sources is None:
            batch.sources = [source] * len(batch.urls)
        updates = []
        for row in self._fetch_known(con, batch, now, len(batch.urls) - inserted):
            url, sources, first, last, statuses, mimes, counts_text = row
            i = position[url]
            new[i] = False
            counts = loads_counts(counts_text)
            add_run_count(counts, source, run_id, batch.captures[i])
            batch.sources[i] = join_set(split_set(sources) | split_set(batch.sources[i]))
            batch.statuses[i] = join_set(split_set(statuses) | split_set(batch.statuses[i]))
            batch.mimes[i] = join_set(split_set(mimes) | split_set(batch.mimes[i]))
            batch.first_seen[i] = min_ts(first, batch.first_seen[i])
            batch.last_seen[i] = max_ts(last, batch.last_seen[i])
            batch.captures[i] = sum(entry[2] for entry in counts.values())
            updates.append(
                (
                    batch.sources[i],
                    batch.first_seen[i],
                    batch.last_seen[i],
                    batch.captures[i],
                    batch.statuses[i],
                    batch.mimes[i],
                    dumps_counts(counts),
                    run_id,
                    now,
                    url,
                )
            )
        if updates:
            con.executemany(_UPDATE, updates)
        return len(updates)

    @staticmethod
    def _fetch_known(con: sqlite3.Connection, batch: UrlBatch, now: float, expected: int) -> Iterator[tuple]:
        """Rows among the batch's URLs that this batch (marked ``added_at = now``) did not insert.

        ``expected`` of them exist. URLs this run passed on before (a URL split
        over two pages) are looked up first; the rest of the batch only if that
        does not account for all of them (rows from earlier runs or sources).
        """
        found = 0
        first = [url for url in batch.urls if url in batch.repeats]
        rest = [url for url in batch.urls if url not in batch.repeats] if batch.repeats else batch.urls
        for group in (first, rest):
            if found >= expected:
                return
            for chunk in _chunks(group, _SELECT_CHUNK):
                marks = ",".join("?" * len(chunk))
                for row in con.execute(
                    "SELECT url, sources, first_seen, last_seen, statuses, mimes, source_counts"
                    f" FROM urls WHERE url IN ({marks}) AND added_at != ?",
                    (*chunk, now),
                ):
                    found += 1
                    yield row
                if found >= expected:
                    return

    @classmethod
    def read_runs(cls, uri: str, run_ids: list[str], size: int = 5000) -> Iterator[UrlBatch]:
        """The URLs the given runs wrote or updated, in batches, as stored now."""
        if not run_ids:
            return
        con = sqlite3.connect(f"file:{sqlite_path(uri)}?mode=ro", uri=True)
        try:
            marks = ",".join("?" * len(run_ids))
            cursor = con.execute(
                "SELECT url, host, sources, first_seen, last_seen, captures, statuses, mimes,"
                f" first_run IN (SELECT run FROM runs WHERE run_id IN ({marks})) AS new"
                f" FROM urls WHERE last_run IN (SELECT run FROM runs WHERE run_id IN ({marks}))"
                " ORDER BY url",
                (*run_ids, *run_ids),
            )
            while rows := cursor.fetchmany(size):
                columns = list(zip(*rows, strict=True))
                yield UrlBatch(
                    source="store",
                    urls=list(columns[0]),
                    hosts=list(columns[1]),
                    sources=list(columns[2]),
                    first_seen=list(columns[3]),
                    last_seen=list(columns[4]),
                    captures=list(columns[5]),
                    statuses=list(columns[6]),
                    mimes=list(columns[7]),
                    new=[bool(v) for v in columns[8]],
                )
        finally:
            con.close()

    @classmethod
    def searcher(cls, uri: str, settings: object = None):  # type: ignore[no-untyped-def]
        """The read side ``scrapy search`` uses (:class:`trawl.search.SqliteSearcher`).

        Never called by crawls: the indexes a search needs are created there, not
        in this store's write path.
        """
        from trawl.search import SqliteSearcher

        return SqliteSearcher(sqlite_path(uri))

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


@hookimpl
def trawl_register_stores() -> dict[str, type[SqliteStore]]:
    return {"sqlite": SqliteStore}
