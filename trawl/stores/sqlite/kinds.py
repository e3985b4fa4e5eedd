"""Tables of declared record kinds in SQLite: made and merged from the kind's declaration.

A batch type that declares ``KEY`` and ``MERGE`` (:mod:`trawl.records.kinds`)
gets a table ``<kind>_records`` the first time this store meets it: its
declared columns (polars types to SQLite's), ``first_run`` and ``last_run``,
and the key as the primary key (a ``WITHOUT ROWID`` table's, or the rowid itself for
one INTEGER key). A batch is written in four
statements, all in C: its rows into a temporary table, one lookup of which
keys are known (and their last run: a record this run wrote before is a
``repeat``), one ``INSERT ... SELECT ... ON CONFLICT DO UPDATE`` that merges by
the declared rules, and one read of the merged rows back into the batch. A
table made by an older declaration gains its new columns (``ADD COLUMN``).

A staged kind (``STAGED``, :func:`trawl.records.kinds.staged`) is written the
same way into ``<kind>_records_next``, which a run empties the first time it
writes there if another run's rows are in it (a load that crashed); nothing is
read back (no reader has these rows yet: every row is new to the run, and the
read-back cost as much as the write). A kind that declares ``SWITCHES``
renames each listed kind's ``_next`` table over its live one (``DROP`` +
``ALTER TABLE ... RENAME``: no row is copied) in the transaction that writes
its own batch; a listed kind with no ``_next`` table had no rows in the
snapshot, and its live table is emptied. A load drops every staged table of
the kinds it switches before its first batch (:func:`drop_staged`): rows of a
load that did not end never reach a later snapshot.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import polars as pl

from trawl.errors import StoreError
from trawl.records.batches import Batch
from trawl.records.kinds import check_declaration, collapse, merge_rules, stored_columns

#: The store's own columns in every kind's table.
BOOKKEEPING = {"first_run": "INTEGER NOT NULL", "last_run": "INTEGER NOT NULL"}


def _quoted(name: str) -> str:
    return f'"{name}"'  # names are checked lower-case identifiers (check_declaration)


def sql_type(dtype: Any) -> str:
    """SQLite's column type for a polars type; a nested type has none (``StoreError``)."""
    if dtype == pl.String:
        return "TEXT"
    if dtype == pl.Boolean or dtype.is_integer():
        return "INTEGER"
    if dtype.is_float():
        return "REAL"
    raise StoreError(f"a column of type {dtype} cannot be stored in SQLite by declaration")


def _merge_sql(table: str, column: str, rule: str) -> str:
    old, new = f"{table}.{_quoted(column)}", f"excluded.{_quoted(column)}"
    return {
        "min": f"coalesce(min({old}, {new}), {old}, {new})",
        "max": f"coalesce(max({old}, {new}), {old}, {new})",
        "sum": f"coalesce({old}, 0) + coalesce({new}, 0)",
        "first": f"coalesce({old}, {new})",
        "last": f"coalesce({new}, {old})",
    }[rule]


def _unless_older(table: str, newer: str, column: str, merged: str) -> str:
    """``merged``, unless the stored record's ``newer`` time is later than the incoming one's.

    The times are ISO 8601 UTC text that may or may not have fractions
    (``...:00Z``, ``...:00.5Z``): compared without the ``Z``, a shorter one is a
    prefix of a longer one, so text order is time order.
    """
    if not newer:
        return merged
    old, new = f"rtrim({table}.{_quoted(newer)}, 'Z')", f"rtrim(excluded.{_quoted(newer)}, 'Z')"
    return f"CASE WHEN {new} < {old} THEN {table}.{_quoted(column)} ELSE {merged} END"


class KindTable:
    """One declared kind's table in one connection: its statements, made once."""

    def __init__(self, batch_type: type[Batch]) -> None:
        try:
            check_declaration(batch_type)
        except ValueError as exc:
            raise StoreError(f"record kind {batch_type.kind!r} cannot be stored: {exc}") from None
        self.batch_type = batch_type
        self.live = f"{batch_type.kind}_records"
        self.staged = batch_type.STAGED
        self.table = f"{self.live}_next" if self.staged else self.live
        self.incoming = f"incoming_{self.table}"
        self.columns = stored_columns(batch_type)
        self.key = list(batch_type.KEY)
        self.rules = merge_rules(batch_type)
        self.types = {name: sql_type(dtype) for name, dtype in self.columns.items()}
        names = ", ".join(_quoted(c) for c in self.columns)
        self._insert_incoming = (
            f"INSERT INTO temp.{self.incoming} ({names}) VALUES ({', '.join('?' * len(self.columns))})"
        )
        match = " AND ".join(f"t.{_quoted(k)} = i.{_quoted(k)}" for k in self.key)
        self._mark_known = (
            f"UPDATE temp.{self.incoming} AS i SET previous_run ="
            f" (SELECT t.last_run FROM main.{self.table} AS t WHERE {match})"
        )
        updates = ", ".join(
            f"{_quoted(c)} = {_unless_older(self.table, batch_type.NEWER, c, _merge_sql(self.table, c, r))}"
            for c, r in self.rules.items()
        )
        self._upsert = (
            f"INSERT INTO main.{self.table} ({names}, first_run, last_run)"
            f" SELECT {names}, :run, :run FROM temp.{self.incoming} WHERE true"
            f" ON CONFLICT ({', '.join(_quoted(k) for k in self.key)}) DO UPDATE SET"
            f" {updates + ', ' if updates else ''}last_run = excluded.last_run"
        )
        # A staged table is no reader's yet: rows go straight in (one pass, no temporary table).
        self._upsert_direct = (
            f"INSERT INTO main.{self.table} ({names}, first_run, last_run)"
            f" VALUES ({', '.join('?' * len(self.columns))}, ?, ?)"
            f" ON CONFLICT ({', '.join(_quoted(k) for k in self.key)}) DO UPDATE SET"
            f" {updates + ', ' if updates else ''}last_run = excluded.last_run"
        )
        # ... or, loaded in bulk (:mod:`.bulk`), from the attached scratch table.
        self._upsert_from = (
            f"INSERT INTO main.{self.table} ({names}, first_run, last_run)"
            f" SELECT {names}, first_run, last_run FROM {{source}} WHERE true"
            f" ON CONFLICT ({', '.join(_quoted(k) for k in self.key)}) DO UPDATE SET"
            f" {updates + ', ' if updates else ''}last_run = excluded.last_run"
        )
        # ... or from a batch's own file (:mod:`.prestage`), which holds the kind's columns only.
        self._upsert_prestaged = self._upsert_from.replace("first_run, last_run FROM", ":run, :run FROM")
        # A dump's table has one row per key: its batch goes in without the merge's per-row work
        # (a fifth of the merge's CPU), and only a batch that meets a key already staged (the
        # crate kind's three tables) is merged, the failed statement undone by SQLite first.
        self._insert_prestaged = self._upsert_prestaged.split(" WHERE true ON CONFLICT")[0]
        selected = ", ".join(f"t.{_quoted(c)}" for c in self.columns)
        self._read_back = (
            f"SELECT {selected}, i.previous_run FROM temp.{self.incoming} AS i"
            f" JOIN main.{self.table} AS t ON {match} ORDER BY i.rowid"
        )

    def create(self, con: sqlite3.Connection, run: int = 0) -> None:
        """The table (or the columns it lacks) and this connection's temporary table; a staged
        table holding another run's rows (a load that crashed) is made anew."""
        if self.staged and _exists(con, self.table):
            other = con.execute(f"SELECT 1 FROM main.{self.table} WHERE last_run <> ? LIMIT 1", (run,))
            if other.fetchone() is not None:
                con.execute(f"DROP TABLE main.{self.table}")
        columns = [f"{_quoted(c)} {t}{' NOT NULL' if c in self.key else ''}" for c, t in self.types.items()]
        columns += [f"{name} {kind}" for name, kind in BOOKKEEPING.items()]
        key = ", ".join(_quoted(k) for k in self.key)
        # One INTEGER key is the rowid itself: rows appended in key order cost a third less CPU than
        # in a WITHOUT ROWID table (3 million dump rows through ADBC: 2.8 s against 4.0 s).
        rowid = len(self.key) == 1 and self.types[self.key[0]] == "INTEGER"
        con.execute(
            f"CREATE TABLE IF NOT EXISTS main.{self.table} ({', '.join(columns)}, PRIMARY KEY ({key}))"
            + ("" if rowid else " WITHOUT ROWID")
        )
        have = {row[1] for row in con.execute(f"PRAGMA main.table_info({self.table})")}
        for column, kind in self.types.items():
            if column not in have:
                con.execute(f"ALTER TABLE main.{self.table} ADD COLUMN {_quoted(column)} {kind}")
        incoming = ", ".join(f"{_quoted(c)} {t}" for c, t in self.types.items())
        con.execute(f"CREATE TEMP TABLE IF NOT EXISTS {self.incoming} ({incoming}, previous_run INTEGER)")

    def rows(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The batch's records, one per key (``StoreError`` for a record without its key)."""
        missing_key = frame.filter(pl.any_horizontal(pl.col(k).is_null() for k in self.key)).height
        if missing_key:
            raise StoreError(
                f"{missing_key} of {frame.height} {self.batch_type.kind} records have no"
                f" {'/'.join(self.key)}: a record is named by its key"
            )
        return collapse(self.batch_type, frame)

    def staged_rows(self, frame: pl.DataFrame, run: int) -> pl.DataFrame:
        """A staged batch's rows as the table takes them (to load in bulk: :mod:`.bulk`)."""
        runs = [pl.lit(run).alias("first_run"), pl.lit(run).alias("last_run")]
        return self.rows(frame).select(*self.columns, *runs)

    def write(
        self,
        con: sqlite3.Connection,
        frame: pl.DataFrame,
        run: int,
        source: str | None = None,
        prestaged: bool = False,
    ) -> tuple[pl.DataFrame, int]:
        """Merge ``frame`` (inside the caller's transaction); the merged rows with ``new`` and
        ``repeat``, and how many keys were new. ``source``: a staged batch's rows are in this
        table already (:meth:`staged_rows`, loaded by :mod:`.bulk`; ``prestaged``: the kind's
        columns without the runs, written by :mod:`.prestage`)."""
        # A prestaged batch's frame is its rows already, one per key (:mod:`.prestage`).
        rows = frame if prestaged else self.rows(frame)
        for kind in self.batch_type.SWITCHES:
            switch(con, kind)
        if self.staged:
            if source is not None and prestaged:
                try:
                    con.execute(self._insert_prestaged.format(source=source), {"run": run})
                except sqlite3.IntegrityError:  # a key staged before: merged by the kind's rules
                    con.execute(self._upsert_prestaged.format(source=source), {"run": run})
            elif source is not None:
                con.execute(self._upsert_from.format(source=source))
            elif prestaged:  # the load's own process wrote the rows (trawl.stores.sqlite.ingest)
                pass
            else:
                runs = [pl.lit(run).alias("first_run"), pl.lit(run).alias("last_run")]
                con.executemany(self._upsert_direct, rows.select(*self.columns, *runs).iter_rows())
            marks = [pl.lit(True).alias("new"), pl.lit(False).alias("repeat")]
            return rows.with_columns(marks), rows.height
        con.execute(f"DELETE FROM temp.{self.incoming}")
        con.executemany(self._insert_incoming, rows.select(list(self.columns)).iter_rows())
        con.execute(self._mark_known)
        con.execute(self._upsert, {"run": run})
        stored = con.execute(self._read_back).fetchall()
        schema = {**self.columns, "previous_run": pl.Int64}
        merged = pl.DataFrame(stored, schema=schema, orient="row")
        previous = pl.col("previous_run")
        merged = merged.with_columns(
            previous.is_null().alias("new"), (previous == run).fill_null(False).alias("repeat")
        )
        return merged.drop("previous_run"), int(merged.get_column("new").sum())


def _exists(con: sqlite3.Connection, table: str) -> bool:
    found = con.execute("SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = ?", (table,))
    return found.fetchone() is not None


def drop_staged(
    con: sqlite3.Connection,
    kinds: tuple[str, ...],
    run: int = 0,
    source: str = "",
    staged_page: Callable[[str], bool] | None = None,
) -> list[str]:
    """The staged tables of ``kinds`` dropped, in one transaction of their own: a snapshot load
    starts from nothing, whatever an earlier load left (one that failed, was stopped or killed:
    a table the new dump lacks must not switch in its rows). The tables that were there.

    ``staged_page``: the pages of ``source`` in the ledger that ``run`` stored as staged batches
    are forgotten in the same transaction, so that a resumed run (``JOBDIR``) writes their rows
    again instead of taking the dropped rows for stored."""
    there = [f"{kind}_records_next" for kind in kinds if _exists(con, f"{kind}_records_next")]
    pages: list[str] = []
    if staged_page is not None and run:
        known = con.execute("SELECT page FROM main.pages WHERE run = ? AND source = ?", (run, source))
        pages = [page for (page,) in known if staged_page(page)]
    if not there and not pages:
        return []
    con.execute("BEGIN IMMEDIATE")
    try:
        for table in there:
            con.execute(f"DROP TABLE IF EXISTS main.{table}")
        con.executemany(
            "DELETE FROM main.pages WHERE run = ? AND source = ? AND page = ?",
            [(run, source, p) for p in pages],
        )
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    return there


def switch(con: sqlite3.Connection, kind: str) -> None:
    """The staged records of ``kind`` become its live ones (inside the caller's transaction)."""
    live, staged = f"{kind}_records", f"{kind}_records_next"
    if _exists(con, staged):
        con.execute(f"DROP TABLE IF EXISTS main.{live}")
        con.execute(f"ALTER TABLE main.{staged} RENAME TO {live}")
    elif _exists(con, live):
        con.execute(f"DELETE FROM main.{live}")


def newest(con: sqlite3.Connection, batch_type: type[Batch], column: str) -> Any:
    """The greatest ``column`` among the live records of a declared kind (None: none, or no table)."""
    table = f"{batch_type.kind}_records"
    if column not in stored_columns(batch_type) or not _exists(con, table):
        return None
    return con.execute(f"SELECT max({_quoted(column)}) FROM main.{table}").fetchone()[0]
