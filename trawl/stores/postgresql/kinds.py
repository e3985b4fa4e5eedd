"""Tables of declared record kinds in PostgreSQL: made and merged from the kind's declaration.

The PostgreSQL twin of :mod:`trawl.stores.sqlite.kinds`, with the same
meaning, so that ``trawl crates`` answers the same from either store. A batch
type that declares ``KEY`` and ``MERGE`` (:mod:`trawl.records.kinds`) gets a
table ``<kind>_records`` the first time a store meets it: its declared columns
(polars types to PostgreSQL's: text in the ``"C"`` collation, byte order as
everywhere in trawl; ``bigint``; ``boolean``; ``double precision``),
``first_run`` and ``last_run``, and the key as the primary key. A table made by
an older declaration gains its new columns (``ADD COLUMN IF NOT EXISTS``).

A batch is written as the URL kind's is (:mod:`.merge`): polars writes it as
CSV and ``COPY`` loads it into the session's staging table (no Python object
per row), then one ``INSERT ... SELECT ... ON CONFLICT DO UPDATE`` merges it by
the declared rules (:func:`merge_sql`), in key order (two writers over the
same keys wait for each other instead of deadlocking), and gives back the
merged rows as one JSON text, each with the run that wrote it last before
(read from the statement's snapshot, before the merge: ``new`` and ``repeat``).

A staged kind (``STAGED``) is written the same way into
``<kind>_records_next``, made anew when another run's rows are in it (a load
that crashed), and nothing is read back (no reader has these rows yet). A kind
that declares ``SWITCHES`` renames each listed kind's ``_next`` table over its
live one in the transaction that writes its own batch (``DROP`` + ``ALTER
TABLE ... RENAME``, its primary key renamed with it: no row is copied; readers
wait for the commit on the table's lock and then see the new snapshot whole);
a listed kind with no ``_next`` table had no rows in the snapshot, and its live
table is emptied. A load drops every staged table of the kinds it switches
before its first batch (:func:`drop_staged`): rows of a load that did not end
never reach a later snapshot. One load at a time: a load holds a session-level
advisory lock (:data:`LOAD_LOCK`, :func:`try_load_lock`) from its start to its
end and records itself in ``trawl_loads``; the server lets the lock go when the
session ends, so a crashed load's record, found by the next load, names it.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl

from trawl.errors import StoreError
from trawl.records.batches import Batch
from trawl.records.kinds import check_declaration, collapse, merge_rules, stored_columns

if TYPE_CHECKING:
    import psycopg

#: The store's own columns in every kind's table.
BOOKKEEPING = {"first_run": "integer NOT NULL", "last_run": "integer NOT NULL"}


def _q(name: str) -> str:
    return f'"{name}"'  # names are checked lower-case identifiers (check_declaration)


def sql_type(dtype: Any) -> str:
    """PostgreSQL's column type for a polars type; a nested type has none (``StoreError``)."""
    if dtype == pl.String:
        return 'text COLLATE "C"'
    if dtype == pl.Boolean:
        return "boolean"
    if dtype.is_integer():
        return "bigint"
    if dtype.is_float():
        return "double precision"
    raise StoreError(f"a column of type {dtype} cannot be stored in PostgreSQL by declaration")


def merge_sql(column: str, rule: str) -> str:
    """One column's merge rule, in an ``ON CONFLICT`` update of table ``t`` (``least``/``greatest``
    skip NULLs, as SQLite's ``coalesce(min(..))`` does)."""
    old, new = f"t.{_q(column)}", f"excluded.{_q(column)}"
    return {
        "min": f"least({old}, {new})",
        "max": f"greatest({old}, {new})",
        "sum": f"coalesce({old}, 0) + coalesce({new}, 0)",
        "first": f"coalesce({old}, {new})",
        "last": f"coalesce({new}, {old})",
    }[rule]


def unless_older(newer: str, column: str, merged: str) -> str:
    """``merged``, unless the stored record's ``newer`` time is later than the incoming one's
    (ISO 8601 text compared without its ``Z`` in byte order: SQLite's rule)."""
    if not newer:
        return merged
    old = f"rtrim(t.{_q(newer)}, 'Z') COLLATE \"C\""
    new = f"rtrim(excluded.{_q(newer)}, 'Z') COLLATE \"C\""
    return f"CASE WHEN {new} < {old} THEN t.{_q(column)} ELSE {merged} END"


def exists(con: psycopg.Connection, table: str) -> bool:
    row = con.execute("SELECT to_regclass(%s) IS NOT NULL", (f"public.{table}",)).fetchone()
    return bool(row and row[0])


class KindTable:
    """One declared kind's table for one connection: its statements, made once."""

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
        self.types = {name: sql_type(dtype) for name, dtype in self.columns.items()}
        names = ", ".join(_q(c) for c in self.columns)
        keys = ", ".join(_q(k) for k in self.key)
        updates = ", ".join(
            f"{_q(c)} = {unless_older(batch_type.NEWER, c, merge_sql(c, r))}"
            for c, r in merge_rules(batch_type).items()
        )
        self.copy = f"COPY {self.incoming} ({names}) FROM STDIN WITH (FORMAT csv)"
        upsert = (
            f"INSERT INTO {self.table} AS t ({names}, first_run, last_run)"
            f" SELECT {names}, %(run)s, %(run)s FROM {self.incoming} ORDER BY {keys}"
            f" ON CONFLICT ({keys}) DO UPDATE SET"
            f" {updates + ', ' if updates else ''}last_run = excluded.last_run"
        )
        self.upsert_staged = upsert
        match = " AND ".join(f"k.{_q(k)} = m.{_q(k)}" for k in self.key)
        # The subquery reads the table as the statement's snapshot saw it: before the merge.
        self.upsert_merged = (
            f"WITH merged AS ({upsert} RETURNING {', '.join(f't.{_q(c)}' for c in self.columns)})"
            f" SELECT count(*), coalesce(json_agg(x), '[]')::text FROM (SELECT m.*, (SELECT k.last_run"
            f" FROM {self.table} AS k WHERE {match}) AS previous_run FROM merged AS m) AS x"
        )

    def create(self, con: psycopg.Connection, run: int, lock: int) -> None:
        """The table (or the columns it lacks) and the session's staging table, in a transaction
        of their own under the schema lock; a staged table holding another run's rows is made anew."""
        with con.transaction():
            con.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
            if self.staged and exists(con, self.table):
                other = con.execute(f"SELECT 1 FROM {self.table} WHERE last_run <> %s LIMIT 1", (run,))
                if other.fetchone() is not None:
                    con.execute(f"DROP TABLE {self.table}")
            columns = [f"{_q(c)} {t}{' NOT NULL' if c in self.key else ''}" for c, t in self.types.items()]
            columns += [f"{name} {kind}" for name, kind in BOOKKEEPING.items()]
            key = ", ".join(_q(k) for k in self.key)
            con.execute(
                f"CREATE TABLE IF NOT EXISTS {self.table} ({', '.join(columns)},"
                f" CONSTRAINT {self.table}_pkey PRIMARY KEY ({key}))"
            )
            for column, kind in self.types.items():
                con.execute(f"ALTER TABLE {self.table} ADD COLUMN IF NOT EXISTS {_q(column)} {kind}")
            incoming = ", ".join(f"{_q(c)} {t}" for c, t in self.types.items())
            con.execute(f"CREATE TEMP TABLE IF NOT EXISTS {self.incoming} ({incoming}) ON COMMIT DELETE ROWS")

    def write(self, con: psycopg.Connection, frame: pl.DataFrame, run: int) -> tuple[pl.DataFrame, int]:
        """Merge ``frame`` (inside the caller's transaction); the merged rows with ``new`` and
        ``repeat``, and how many keys were new."""
        missing_key = frame.filter(pl.any_horizontal(pl.col(k).is_null() for k in self.key)).height
        if missing_key:
            raise StoreError(
                f"{missing_key} of {frame.height} {self.batch_type.kind} records have no"
                f" {'/'.join(self.key)}: a record is named by its key"
            )
        rows = collapse(self.batch_type, frame)
        for kind in self.batch_type.SWITCHES:
            switch(con, kind)
        if rows.height:
            with con.cursor() as cur, cur.copy(self.copy) as copy:
                copy.write(rows.select(list(self.columns)).write_csv(include_header=False))
        if self.staged or not rows.height:
            if rows.height:
                con.execute(self.upsert_staged, {"run": run})
            marks = [pl.lit(True).alias("new"), pl.lit(False).alias("repeat")]
            return rows.with_columns(marks), rows.height
        row = con.execute(self.upsert_merged, {"run": run}).fetchone()
        assert row is not None
        written, text = row
        if written != rows.height:
            raise StoreError(
                f"{rows.height - written} of {rows.height} {self.batch_type.kind} records not stored"
            )
        schema = {**self.columns, "previous_run": pl.Int64}
        merged = pl.read_json(io.BytesIO(text.encode()), schema=schema)
        # In the batch's order (the JSON's is the server's).
        merged = rows.select(self.key).join(merged, on=self.key, how="left", maintain_order="left")
        previous = pl.col("previous_run")
        merged = merged.select(*self.columns, previous).with_columns(
            previous.is_null().alias("new"), (previous == run).fill_null(False).alias("repeat")
        )
        return merged.drop("previous_run"), int(merged.get_column("new").sum())


def drop_staged(
    con: psycopg.Connection,
    kinds: tuple[str, ...],
    lock: int,
    run: int = 0,
    source: str = "",
    staged_page: Callable[[str], bool] | None = None,
) -> list[str]:
    """The staged tables of ``kinds`` dropped, in a transaction of their own under the schema lock:
    a snapshot load starts from nothing, whatever an earlier load left (one that failed, was stopped
    or killed: a table the new dump lacks must not switch in its rows). The tables that were there.

    ``staged_page``: the pages of ``source`` in the ledger that ``run`` stored as staged batches
    are forgotten in the same transaction, so that a resumed run (``JOBDIR``) writes their rows
    again instead of taking the dropped rows for stored."""
    there: list[str] = []
    with con.transaction():
        con.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
        for kind in kinds:
            table = f"{kind}_records_next"
            if exists(con, table):
                con.execute(f"DROP TABLE {table}")
                there.append(table)
        if staged_page is not None and run:
            known = con.execute("SELECT page FROM pages WHERE run = %s AND source = %s", (run, source))
            pages = [page for (page,) in known.fetchall() if staged_page(page)]
            if pages:
                con.execute(
                    "DELETE FROM pages WHERE run = %s AND source = %s AND page = ANY(%s)",
                    (run, source, pages),
                )
    return there


#: The session-level advisory lock a snapshot load holds from its start to its end: one load at a
#: time per database (``"trawl" + 2``; :data:`~.schema.SCHEMA_LOCK` is ``+ 1``).
LOAD_LOCK = 0x7472_6177_6C02
#: Who holds (or last held, and never let go of) a load's lock: ``name``, ``owner`` (JSON text:
#: the loading process's pid, host and start, and its session's ``backend``).
LOADS_TABLE = "trawl_loads"


def try_load_lock(
    con: psycopg.Connection, name: str, owner: dict[str, Any], schema_lock: int, lock: int = LOAD_LOCK
) -> tuple[bool, dict[str, Any] | None]:
    """Take the load lock on ``con``'s session (autocommit), never waiting.

    Taken: ``(True, previous)``, ``owner`` recorded (with this session's ``backend``) and
    ``previous`` the owner recorded by a load that held the lock and never let it go (its
    session ended: a crash, ``kill -9``), else None. Held by another session:
    ``(False, its owner)`` (None when it has not recorded itself yet).
    """
    import orjson

    got = bool(con.execute("SELECT pg_try_advisory_lock(%s)", (lock,)).fetchone()[0])  # type: ignore[index]
    with con.transaction():
        con.execute("SELECT pg_advisory_xact_lock(%s)", (schema_lock,))
        con.execute(f"CREATE TABLE IF NOT EXISTS {LOADS_TABLE} (name text PRIMARY KEY, owner text NOT NULL)")
    row = con.execute(f"SELECT owner FROM {LOADS_TABLE} WHERE name = %s", (name,)).fetchone()
    recorded = orjson.loads(row[0]) if row else None
    if not got:
        holder = con.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1"
            " AND classid::bigint = %s AND objid::bigint = %s"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            (lock >> 32, lock & 0xFFFFFFFF),
        ).fetchone()
        current = recorded is not None and holder is not None and recorded.get("backend") == holder[0]
        return False, recorded if current else None
    mine = {**owner, "backend": con.info.backend_pid}
    con.execute(
        f"INSERT INTO {LOADS_TABLE} (name, owner) VALUES (%s, %s)"
        " ON CONFLICT (name) DO UPDATE SET owner = excluded.owner",
        (name, orjson.dumps(mine).decode()),
    )
    return True, recorded


def release_load_lock(con: psycopg.Connection, name: str, lock: int = LOAD_LOCK) -> None:
    """The load ended: its record goes (a record left means a load that did not end), then the lock."""
    con.execute(f"DELETE FROM {LOADS_TABLE} WHERE name = %s", (name,))
    con.execute("SELECT pg_advisory_unlock(%s)", (lock,))


def switch(con: psycopg.Connection, kind: str) -> None:
    """The staged records of ``kind`` become its live ones (inside the caller's transaction)."""
    live, staged = f"{kind}_records", f"{kind}_records_next"
    if exists(con, staged):
        con.execute(f"DROP TABLE IF EXISTS {live}")
        con.execute(f"ALTER TABLE {staged} RENAME TO {live}")
        con.execute(f"ALTER TABLE {live} RENAME CONSTRAINT {staged}_pkey TO {live}_pkey")
    elif exists(con, live):
        con.execute(f"DELETE FROM {live}")


def newest(con: psycopg.Connection, batch_type: type[Batch], column: str) -> Any:
    """The greatest ``column`` among the live records of a declared kind (None: none, or no table)."""
    table = f"{batch_type.kind}_records"
    if column not in stored_columns(batch_type) or not exists(con, table):
        return None
    row = con.execute(f"SELECT max({_q(column)}) FROM {table}").fetchone()
    return row[0] if row else None


def kind_columns(con: psycopg.Connection, batch_type: type[Batch], columns: list[str]) -> pl.DataFrame:
    """``columns`` of every live record of a declared kind, typed by its ``SCHEMA``; empty when the
    table does not exist yet. Read as ``COPY ... TO STDOUT`` CSV that polars parses: text quoted
    (``""`` an empty string), a NULL an unquoted empty field, booleans as 0/1."""
    schema = {name: batch_type.SCHEMA[name] for name in columns}  # KeyError: a caller's mistake
    table = f"{batch_type.kind}_records"
    if not columns or not exists(con, table):
        return pl.DataFrame(schema=schema)
    selected = ", ".join(f"{_q(c)}::int" if schema[c] == pl.Boolean else _q(c) for c in columns)
    texts = [_q(c) for c in columns if schema[c] == pl.String]
    quote = f", FORCE_QUOTE ({', '.join(texts)})" if texts else ""
    out = io.BytesIO()
    sql = f"COPY (SELECT {selected} FROM {table}) TO STDOUT WITH (FORMAT csv{quote})"
    with con.cursor() as cur, cur.copy(sql) as copy:
        for block in copy:
            out.write(block)
    if not out.tell():
        return pl.DataFrame(schema=schema)
    read = {c: pl.Int8 if t == pl.Boolean else t for c, t in schema.items()}
    out.seek(0)
    frame = pl.read_csv(out, has_header=False, schema=read)
    return frame.with_columns(pl.col(c).cast(pl.Boolean) for c, t in schema.items() if t == pl.Boolean)
