"""A URL batch merged into ``urls`` set-wise: three statements, whatever its size.

1. :func:`~trawl.stores.sqlite.schema.stage_sql`: the batch's rows go into a
   temporary staging table (one ``executemany``), each with its URL's
   ``last_run`` if the URL is known;
2. :func:`~trawl.stores.sqlite.schema.upsert_sql`: one ``INSERT ... SELECT ...
   ON CONFLICT DO UPDATE`` inserts the new URLs and merges the known ones
   (the provenance rule in SQL), in URL order (the staging table's);
3. :data:`~trawl.stores.sqlite.schema.READ_KNOWN`, only when some were known:
   their merged provenance, as one JSON text polars reads back.

The old merge inserted, looked the known URLs up, merged them and read them
back row by row: four passes, two of them through Python objects (11.0 s
of ``executemany`` and 7.0 s of ``execute`` in a 56 s profile).

Measured and not taken: staging from one JSON text that polars writes
(``INSERT ... SELECT FROM json_each(?)``, no Python object per row) cost
10-14 µs a row in SQLite 3.40's JSON functions against 5-6 µs for
``executemany`` with the rows polars makes (the writer thread took 21.5 of a
25 s crawl); ``RETURNING`` instead of statement 3 is fetched a row at a
time and cannot tell a new row from a merged one (the staged
``previous_run`` does, and also gives ``repeat``); a plain ``INSERT`` of the
staged rows without a ``previous_run`` and the upsert for the others cost the
same as the one upsert (1.61-1.78 s for 300,000 new rows in 5,000-row
transactions): the primary key's look-up is made either way.
"""

from __future__ import annotations

import io
import sqlite3

import polars as pl

from trawl.errors import StoreError
from trawl.records.batches import URL_SCHEMA
from trawl.stores.sqlite.schema import MERGED, READ_KNOWN, STAGED

_SETS = ("sources", "statuses", "mimes")
#: What :data:`READ_KNOWN` gives, as polars reads it.
_KNOWN_SCHEMA = {
    **{name: pl.String if name in _SETS else URL_SCHEMA[name] for name in MERGED.split(", ")},
    "previous_run": pl.Int64,
}


def split_sets(frame: pl.DataFrame) -> pl.DataFrame:
    """Comma-joined set columns as stored -> sorted lists, as batches hold them."""
    empty = pl.lit([], dtype=pl.List(pl.String))
    return frame.with_columns(
        pl.when(pl.col(c) == "").then(empty).otherwise(pl.col(c).str.split(",")).alias(c) for c in _SETS
    )


def staging_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """The batch's rows as staged: sets comma-joined, in URL order.

    In URL order: each row is an insert into the staging table's B-tree and a look-up in
    ``urls``'s, and in key order the next row's pages are the ones just used (a CDX page
    comes in SURT order, which scatters http/https and the hosts: 6.4 against 5.1 µs a
    row staged in random order, bench_store_write).
    """
    return frame.select(pl.col(c).list.join(",") if c in _SETS else pl.col(c) for c in STAGED).sort("url")


def stage(
    con: sqlite3.Connection, sql: str, frame: pl.DataFrame, rows: tuple[int, int] | None = None
) -> None:
    """The batch into the staging table (emptied first); every row or ``StoreError``.

    ``rows``: the batch's :func:`staging_rows` are these rowids (first, last) of the bulk scratch
    table already (:mod:`.bulk`) and ``sql`` is :func:`~.schema.stage_from_sql`'s, one statement in C;
    otherwise ``sql`` is :func:`~.schema.stage_sql`'s, bound a row at a time (2.4 against
    3.0 µs a row, bench_store_write).
    """
    urls = frame.get_column("url")
    distinct = urls.drop_nulls().n_unique()
    if distinct != frame.height:
        # A row without URL, or a URL twice in one batch: never let a row vanish while counted as stored.
        raise StoreError(f"{frame.height - distinct} of {frame.height} URLs could not be stored")
    con.execute("DELETE FROM temp.staging_urls")
    if rows is not None:
        staged = con.execute(sql, rows).rowcount
    else:
        staged = con.executemany(sql, staging_rows(frame).iter_rows()).rowcount
    if staged != frame.height:
        # A row without URL, or a URL twice in one batch: never let a row vanish while counted as stored.
        raise StoreError(f"{frame.height - staged} of {frame.height} URLs could not be stored")


def upsert(con: sqlite3.Connection, sql: str, size: int, now: float) -> None:
    """Insert the staged rows that are new, merge those that are known (see :func:`upsert_sql`)."""
    written = con.execute(sql, (now,)).rowcount
    if written != size:  # OR IGNORE skipped rows that break a constraint
        raise StoreError(f"{size - written} of {size} URLs could not be stored")


def read_known(con: sqlite3.Connection) -> pl.DataFrame:
    """The merged provenance of the staged URLs that were known before, and their previous run."""
    (text,) = con.execute(READ_KNOWN).fetchone()
    if text == "[]":
        return pl.DataFrame(schema=_KNOWN_SCHEMA)
    return split_sets(pl.read_json(io.BytesIO(text.encode()), schema=_KNOWN_SCHEMA))


def with_merged(frame: pl.DataFrame, merged: pl.DataFrame, run: int) -> pl.DataFrame:
    """The batch with the merged provenance of known URLs, and ``new``/``repeat`` set."""
    if not merged.height:
        return frame.with_columns(pl.lit(True).alias("new"), pl.lit(False).alias("repeat"))
    marks = merged.select("url", pl.lit(False).alias("new"), (pl.col("previous_run") == run).alias("repeat"))
    updated = frame.update(merged.drop("previous_run"), on="url").drop("new", "repeat")
    return (
        updated.join(marks, on="url", how="left", maintain_order="left")
        .with_columns(pl.col("new").fill_null(True), pl.col("repeat").fill_null(False))
        .select(frame.columns)
    )
