"""The SQLite store's tables and the provenance merge rule in SQL.

The tables are those of trawl 0.1, so stores written by it keep working.
Set-valued provenance is comma-joined sorted text (what ``scrapy search``'s
SQL reads); per-source counts are JSON (``{source: [run, in_run, best]}``).

:func:`upsert_sql` is :meth:`trawl.records.provenance.Provenance.merge` as one
``INSERT ... ON CONFLICT DO UPDATE``: min/max timestamps, the run-count rule
with ``json_set`` and ``->>``, and the set unions in C when the sets are equal
or one is empty (nearly always), through ``trawl_union`` (the same Python
``union`` the rule uses) otherwise. Reading each known row back into Python to
merge it cost ~12 of 41 profiled seconds of a four-source crawl (issue 8).
"""

from __future__ import annotations

import re
import sqlite3

from trawl.errors import StoreError
from trawl.records.provenance import union

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


#: The columns a batch writes, in the order of :data:`INSERT_NEW`'s placeholders.
COLUMNS = (
    "url", "host", "sources", "first_seen", "last_seen", "captures", "statuses", "mimes",
    "source_counts", "first_run", "last_run", "added_at", "updated_at",
)  # fmt: skip
_PLACEHOLDERS = ", ".join("?" * len(COLUMNS))
INSERT_NEW = f"INSERT OR IGNORE INTO urls ({', '.join(COLUMNS)}) VALUES ({_PLACEHOLDERS})"
#: What a store reads back about known URLs: the merged provenance.
MERGED = "url, sources, first_seen, last_seen, captures, statuses, mimes"

_SOURCE_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def _union(column: str) -> str:
    old, new = f"urls.{column}", f"excluded.{column}"
    return (
        f"CASE WHEN {old} = {new} OR {new} = '' THEN {old} WHEN {old} = '' THEN {new}"
        f" ELSE trawl_union({old}, {new}) END"
    )


def _earliest(column: str, pick: str) -> str:
    """min/max that skip a NULL side (SQLite's multi-argument min is NULL if any argument is)."""
    old, new = f"urls.{column}", f"excluded.{column}"
    return f"coalesce({pick}({old}, {new}), {old}, {new})"


def upsert_sql(source: str, run: int) -> str:
    """The merge of one batch's rows (``COLUMNS`` order) into rows already stored.

    ``source`` and ``run`` are the same for every row of a batch, so they are
    written into the statement (checked: a source name is a plain identifier).
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
    return (
        f"INSERT INTO urls ({', '.join(COLUMNS)}) VALUES ({_PLACEHOLDERS})"
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


def _sql_union(a: str | None, b: str | None) -> str:
    return ",".join(union((a or "").split(","), (b or "").split(",")))


def register_functions(con: sqlite3.Connection) -> None:
    con.create_function("trawl_union", 2, _sql_union, deterministic=True)
