"""Tables of declared record kinds in SQLite: made and merged from the kind's declaration.

A batch type that declares ``KEY`` and ``MERGE`` (:mod:`trawl.records.kinds`)
gets a table ``<kind>_records`` the first time this store meets it: its
declared columns (polars types to SQLite's), ``first_run`` and ``last_run``,
and the key as a ``WITHOUT ROWID`` primary key. A batch is written in four
statements, all in C: its rows into a temporary table, one lookup of which
keys are known (and their last run: a record this run wrote before is a
``repeat``), one ``INSERT ... SELECT ... ON CONFLICT DO UPDATE`` that merges by
the declared rules, and one read of the merged rows back into the batch. A
table made by an older declaration gains its new columns (``ADD COLUMN``).
"""

from __future__ import annotations

import sqlite3
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
        self.table = f"{batch_type.kind}_records"
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
        selected = ", ".join(f"t.{_quoted(c)}" for c in self.columns)
        self._read_back = (
            f"SELECT {selected}, i.previous_run FROM temp.{self.incoming} AS i"
            f" JOIN main.{self.table} AS t ON {match} ORDER BY i.rowid"
        )

    def create(self, con: sqlite3.Connection) -> None:
        """The table (or the columns it lacks) and this connection's temporary table."""
        columns = [f"{_quoted(c)} {t}{' NOT NULL' if c in self.key else ''}" for c, t in self.types.items()]
        columns += [f"{name} {kind}" for name, kind in BOOKKEEPING.items()]
        key = ", ".join(_quoted(k) for k in self.key)
        con.execute(
            f"CREATE TABLE IF NOT EXISTS main.{self.table} ({', '.join(columns)}, PRIMARY KEY ({key}))"
            " WITHOUT ROWID"
        )
        have = {row[1] for row in con.execute(f"PRAGMA main.table_info({self.table})")}
        for column, kind in self.types.items():
            if column not in have:
                con.execute(f"ALTER TABLE main.{self.table} ADD COLUMN {_quoted(column)} {kind}")
        incoming = ", ".join(f"{_quoted(c)} {t}" for c, t in self.types.items())
        con.execute(f"CREATE TEMP TABLE IF NOT EXISTS {self.incoming} ({incoming}, previous_run INTEGER)")

    def write(self, con: sqlite3.Connection, frame: pl.DataFrame, run: int) -> tuple[pl.DataFrame, int]:
        """Merge ``frame`` (inside the caller's transaction); the merged rows with ``new`` and
        ``repeat``, and how many keys were new."""
        missing_key = frame.filter(pl.any_horizontal(pl.col(k).is_null() for k in self.key)).height
        if missing_key:
            raise StoreError(
                f"{missing_key} of {frame.height} {self.batch_type.kind} records have no"
                f" {'/'.join(self.key)}: a record is named by its key"
            )
        rows = collapse(self.batch_type, frame)
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
