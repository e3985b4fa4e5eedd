"""The SQLite store's tables and the provenance merge rule in SQL.

The tables are those of trawl 0.1, so stores written by it keep working.
Set-valued provenance is comma-joined sorted text (what ``scrapy search``'s
SQL reads); per-source counts are JSON (``{source: [run, in_run, best]}``).

A URL batch is merged set-wise (:mod:`trawl.stores.sqlite.merge`): its rows go
into a temporary staging table (:data:`STAGE`), then :func:`upsert_sql`,
:meth:`trawl.records.provenance.Provenance.merge` as one ``INSERT ... SELECT
... ON CONFLICT DO UPDATE``, merges them all: min/max timestamps, the
run-count rule with ``json_set`` and ``->>``, and the set unions in SQL (a
recursive split of both sides, ``DISTINCT``, sorted) when the sets differ and
neither is empty. No Python runs inside a statement (the
Python ``union`` that SQLite called back took 1.2 s of the issue-14 profile,
each call taking the GIL back from the reactor).
"""

from __future__ import annotations

import re
import sqlite3

from trawl.errors import StoreError

#: WAL pages between checkpoints while a crates dump loads, on the store's connection and the ingest
#: process's (64 MiB at 4 KiB pages; SQLite's default is 1000). A 50,000-row batch dirties about
#: 1,000 pages, so at the default every commit checkpointed: two fsyncs, and the right-hand pages of
#: the growing tables copied again each time. Measured, 2 million rows in 50,000-row batches: the
#: merges' wall 5.1-5.4 s against 6.4-8.3 s, CPU 8% less. A URL crawl keeps the default: 1,000,000
#: wayback captures in 50,000-row batches took 9.6-10.3 s of CPU either way (load 1.3).
CHECKPOINT_PAGES = 16384

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
    stats         TEXT,
    job           TEXT
);
"""

#: Columns added to ``runs`` since trawl 0.1: a store written before gets them when opened.
RUNS_ADDED = {"job": "TEXT"}


def upgrade(con: sqlite3.Connection) -> None:
    """Add what a store made by an older trawl lacks (``ALTER TABLE ... ADD COLUMN``: no rewrite)."""
    have = {row[1] for row in con.execute("PRAGMA table_info(runs)")}
    for column, kind in RUNS_ADDED.items():
        if column not in have:
            con.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")


#: The columns of ``urls`` a batch writes, in the order :func:`upsert_sql` inserts them.
COLUMNS = (
    "url", "host", "sources", "first_seen", "last_seen", "captures", "statuses", "mimes",
    "source_counts", "first_run", "last_run", "added_at", "updated_at",
)  # fmt: skip
#: What a batch brings, as staged; ``previous_run``: the run in which this batch's source last wrote the URL.
STAGED = ("url", "host", "sources", "first_seen", "last_seen", "captures", "statuses", "mimes")
#: What a store reads back about known URLs: the merged provenance.
MERGED = "url, sources, first_seen, last_seen, captures, statuses, mimes"

_SOURCE_NAME = re.compile(r"[A-Za-z0-9_.-]+")

#: The batch's rows, in this connection's own temporary database (never in the file, never in its WAL).
#: A rowid table, appended to in URL order: a key on ``url`` made every row a second text B-tree
#: insert (the batch's URLs are checked distinct in polars first, :func:`.merge.stage`).
STAGING = (
    "CREATE TEMP TABLE IF NOT EXISTS staging_urls (url TEXT, host TEXT, sources TEXT,"
    " first_seen TEXT, last_seen TEXT, captures INTEGER, statuses TEXT, mimes TEXT, previous_run INTEGER)"
)


def stage_sql(source: str) -> str:
    """One row of ``source``'s batch -> the staging table (``executemany``).

    With it, if the URL is known, the run in which ``source`` last wrote it (0 if
    it never did): one index lookup, which also brings the page into the cache
    for the upsert. The source's own run, not the URL's ``last_run``: with four
    sources writing one store, another source's write in between made a URL
    this run wrote before look new to it, and the summary counted Common Crawl's
    85,802 distinct URLs as 109,461 (bench_sources). A row without URL,
    or a URL twice in one batch, is refused before (:func:`.merge.stage`), never merged twice.
    """
    if not _SOURCE_NAME.fullmatch(source):
        raise StoreError(f"source name {source!r} cannot be stored (letters, digits, _ . - only)")
    return (
        f"INSERT OR IGNORE INTO temp.staging_urls ({', '.join(STAGED)}, previous_run)"
        f" VALUES ({', '.join(f'?{n}' for n in range(1, len(STAGED) + 1))},"
        f" (SELECT coalesce(u.source_counts ->> '$.\"{source}\"[0]', 0)"
        " FROM main.urls AS u WHERE u.url = ?1))"
    )


def stage_from_sql(source: str, table: str) -> str:
    """The batch's rows from ``table`` (loaded in bulk, :mod:`.bulk`; the rowids ``?1`` to ``?2``: a
    group of batches shares the table) -> the staging table, in one statement: :func:`stage_sql`'s
    row and look-up, for every row in C (no binding a row)."""
    if not _SOURCE_NAME.fullmatch(source):
        raise StoreError(f"source name {source!r} cannot be stored (letters, digits, _ . - only)")
    return (
        f"INSERT OR IGNORE INTO temp.staging_urls ({', '.join(STAGED)}, previous_run)"
        f" SELECT {', '.join(f'i.{c}' for c in STAGED)},"
        f" (SELECT coalesce(u.source_counts ->> '$.\"{source}\"[0]', 0)"
        f" FROM main.urls AS u WHERE u.url = i.url) FROM {table} AS i"
        " WHERE i.rowid BETWEEN ?1 AND ?2 ORDER BY i.rowid"
    )


#: The merged provenance of the URLs that were known before this batch, as one JSON text (one row:
#: a cursor fetching row by row would take the GIL back once a row).
READ_KNOWN = (
    "SELECT json_group_array(json_object("
    + ", ".join(f"'{c}', u.{c}" for c in MERGED.split(", "))
    + ", 'previous_run', s.previous_run)) FROM temp.staging_urls AS s JOIN main.urls AS u ON u.url = s.url"
    " WHERE s.previous_run IS NOT NULL"
)
#: The batch's pages into the ledger, from one JSON object (page -> rows); ``rowcount``: those claimed.
CLAIM_PAGES = (
    "INSERT OR IGNORE INTO pages (run, source, page, rows, stored_at)"
    " SELECT ?, ?, key, value, ? FROM json_each(?)"
)


def _set_union(old: str, new: str) -> str:
    """The sorted union of two comma-joined sets, empty values dropped: ``union`` of provenance.py."""
    return (
        f"(WITH RECURSIVE split(rest, value) AS (SELECT {old} || ',' || {new} || ',', NULL"
        " UNION ALL SELECT substr(rest, instr(rest, ',') + 1), substr(rest, 1, instr(rest, ',') - 1)"
        " FROM split WHERE rest != '')"
        " SELECT coalesce(group_concat(value, ','), '') FROM"
        " (SELECT DISTINCT value FROM split WHERE value != '' ORDER BY value))"
    )


def _union(column: str) -> str:
    old, new = f"urls.{column}", f"excluded.{column}"
    return (
        f"CASE WHEN {old} = {new} OR {new} = '' THEN {old} WHEN {old} = '' THEN {new}"
        f" ELSE {_set_union(old, new)} END"
    )


def _earliest(column: str, pick: str) -> str:
    """min/max that skip a NULL side (SQLite's multi-argument min is NULL if any argument is)."""
    old, new = f"urls.{column}", f"excluded.{column}"
    return f"coalesce({pick}({old}, {new}), {old}, {new})"


def upsert_sql(source: str, run: int) -> str:
    """The merge of the staged rows into ``urls`` (one parameter: the batch's time, ``added_at``).

    ``source`` and ``run`` are the same for every row of a batch, so they are
    written into the statement (checked: a source name is a plain identifier).
    ``OR IGNORE`` skips a row that breaks a constraint (no host): the caller
    compares the rows written with the rows staged.
    """
    if not _SOURCE_NAME.fullmatch(source):
        raise StoreError(f"source name {source!r} cannot be stored (letters, digits, _ . - only)")
    entry = f"(urls.source_counts -> '$.\"{source}\"')"
    in_run = (
        f"(CASE WHEN {entry} ->> 0 = {run:d} THEN ({entry} ->> 1) + excluded.captures"
        " ELSE excluded.captures END)"
    )
    old_best = f"coalesce({entry} ->> 2, 0)"
    best = f"max({old_best}, {in_run})"
    counts = f"'{{\"{source}\":[{run:d},' || captures || ',' || captures || ']}}'"
    return (
        f"INSERT OR IGNORE INTO main.urls ({', '.join(COLUMNS)})"
        f" SELECT {', '.join(STAGED)}, {counts}, {run:d}, {run:d}, ?1, ?1 FROM temp.staging_urls WHERE true"
        " ON CONFLICT(url) DO UPDATE SET"
        f" sources = {_union('sources')},"
        f" first_seen = {_earliest('first_seen', 'min')},"
        f" last_seen = {_earliest('last_seen', 'max')},"
        f" statuses = {_union('statuses')},"
        f" mimes = {_union('mimes')},"
        f" source_counts = json_set(urls.source_counts, '$.\"{source}\"',"
        f" json_array({run:d}, {in_run}, {best})),"
        f" captures = urls.captures - {old_best} + {best},"
        " last_run = excluded.last_run,"
        " updated_at = excluded.updated_at"
    )
