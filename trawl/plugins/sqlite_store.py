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
from pathlib import Path
from urllib.parse import unquote, urlsplit

import orjson

from trawl.context import RunContext
from trawl.errors import StoreError, TrawlUsageError
from trawl.items import UrlBatch
from trawl.pluginmanager import hookimpl
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
    first_run     TEXT NOT NULL,
    last_run      TEXT NOT NULL,
    added_at      REAL NOT NULL,
    updated_at    REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS urls_host ON urls (host);
CREATE TABLE IF NOT EXISTS runs (
    run_id        TEXT PRIMARY KEY,
    source        TEXT NOT NULL,
    domain        TEXT,
    started_at    REAL NOT NULL,
    finished_at   REAL,
    finish_reason TEXT,
    stats         TEXT
);
"""

_INSERT = (
    "INSERT INTO urls (url, host, sources, first_seen, last_seen, captures, statuses, mimes,"
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

    def __init__(self, uri: str, context: RunContext) -> None:
        self.path = sqlite_path(uri)
        self.context = context
        self.synchronous = context.settings.get("SQLITE_SYNCHRONOUS", "NORMAL")
        self.connection: sqlite3.Connection | None = None
        # Batches may be written from a thread pool; one writer at a time.
        self._lock = threading.Lock()

    def open(self) -> None:
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=60)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute(f"PRAGMA synchronous={self.synchronous}")
            con.executescript(SCHEMA)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the SQLite store {self.path!r}: {exc}") from None
        self.connection = con
        target = self.context.target
        with self._lock:
            con.execute(
                "INSERT OR REPLACE INTO runs (run_id, source, domain, started_at) VALUES (?, ?, ?, ?)",
                (self.context.run_id, self.context.source, target and target.domain, time.time()),
            )

    def write_batch(self, batch: UrlBatch) -> int:
        records = batch.records
        if not records:
            return 0
        con = self.connection
        assert con is not None, "store not open"
        run_id = self.context.run_id
        source = batch.source
        now = time.time()
        with self._lock:
            con.execute("BEGIN IMMEDIATE")
            try:
                known = self._fetch_existing(con, [r.url for r in records])
                inserts = []
                updates = []
                for r in records:
                    row = known.get(r.url)
                    if row is None:
                        r.new = True
                        counts = {source: [run_id, r.captures, r.captures]}
                        inserts.append(
                            (
                                r.url,
                                r.host,
                                join_set(r.sources),
                                r.first_seen,
                                r.last_seen,
                                r.captures,
                                join_set(r.statuses),
                                join_set(r.mimes),
                                dumps_counts(counts),
                                run_id,
                                run_id,
                                now,
                                now,
                            )
                        )
                        continue
                    _, sources, first, last, statuses, mimes, counts_text = row
                    counts = loads_counts(counts_text)
                    add_run_count(counts, source, run_id, r.captures)
                    r.sources |= split_set(sources)
                    r.statuses |= split_set(statuses)
                    r.mimes |= split_set(mimes)
                    r.first_seen = min_ts(first, r.first_seen)
                    r.last_seen = max_ts(last, r.last_seen)
                    r.captures = sum(entry[2] for entry in counts.values())
                    updates.append(
                        (
                            join_set(r.sources),
                            r.first_seen,
                            r.last_seen,
                            r.captures,
                            join_set(r.statuses),
                            join_set(r.mimes),
                            dumps_counts(counts),
                            run_id,
                            now,
                            r.url,
                        )
                    )
                if inserts:
                    con.executemany(_INSERT, inserts)
                if updates:
                    con.executemany(_UPDATE, updates)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return len(inserts)

    @staticmethod
    def _fetch_existing(con: sqlite3.Connection, urls: list[str]) -> dict[str, tuple]:
        known: dict[str, tuple] = {}
        for chunk in _chunks(urls, _SELECT_CHUNK):
            marks = ",".join("?" * len(chunk))
            for row in con.execute(
                "SELECT url, sources, first_seen, last_seen, statuses, mimes, source_counts"
                f" FROM urls WHERE url IN ({marks})",
                chunk,
            ):
                known[row[0]] = row
        return known

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
