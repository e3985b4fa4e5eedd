"""A URL batch merged into ``urls``: a ``COPY`` and one statement, whatever its size.

1. :func:`stage`: polars writes the batch as CSV (sets as array literals) and
   ``COPY ... FROM STDIN`` loads it into the session's staging table: no
   Python object per row, one round trip;
2. :func:`merge`: :data:`~trawl.stores.postgresql.schema.MERGE` inserts the
   new URLs, merges the known ones, and returns their merged provenance as
   one JSON text that polars reads (a cursor's tuples cost ~3 µs a row in
   the SQLite store's measurements);
3. :func:`with_merged` (SQLite's): the batch's frame as stored, ``new`` and
   ``repeat`` set.

:func:`read_back`: a batch whose ``COMMIT`` an outage cut, found committed
after the reconnection (:mod:`.outage`), is not merged again; its frame is
read back from ``urls`` instead.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import polars as pl

from trawl.errors import StoreError
from trawl.records.batches import URL_SCHEMA
from trawl.stores.postgresql.schema import COPY, MERGE, MERGED, STAGED
from trawl.stores.sqlite.merge import with_merged

if TYPE_CHECKING:
    import psycopg

__all__ = ["merge", "read_back", "stage", "to_csv", "with_merged"]

_SETS = ("sources", "statuses", "mimes")
#: What :data:`MERGE` gives back for the URLs that were known, as polars reads it.
KNOWN_SCHEMA = {**{name: URL_SCHEMA[name] for name in MERGED}, "previous_run": pl.Int64}


def array_literal(column: str) -> pl.Expr:
    """A list column as PostgreSQL array literals: ``{"a","b\\"c"}`` (every member quoted)."""
    quoted = (
        pl.lit('"')
        + pl.element().str.replace_all("\\", "\\\\", literal=True).str.replace_all('"', '\\"', literal=True)
        + pl.lit('"')
    )
    return (pl.lit("{") + pl.col(column).list.eval(quoted).list.join(",") + pl.lit("}")).alias(column)


def to_csv(frame: pl.DataFrame) -> bytes:
    """The batch's staged columns as ``COPY``'s CSV: ``""`` an empty string, nothing a NULL."""
    rows = frame.select(array_literal(c) if c in _SETS else pl.col(c) for c in STAGED)
    return rows.write_csv(include_header=False, quote_style="necessary").encode()


def stage(con: psycopg.Connection, frame: pl.DataFrame) -> None:
    """The batch into the staging table (empty: every transaction's commit empties it)."""
    with con.cursor() as cur, cur.copy(COPY) as copy:
        copy.write(to_csv(frame))


def merge(con: psycopg.Connection, params: dict[str, Any], size: int) -> tuple[int, pl.DataFrame]:
    """Merge the staged rows; (how many were new, the merged provenance of the known ones)."""
    row = con.execute(MERGE, params).fetchone()
    assert row is not None
    written, inserted, text = row
    if written != size:
        raise StoreError(f"{size - written} of {size} URLs could not be stored")
    if text == "[]":
        return inserted, pl.DataFrame(schema=KNOWN_SCHEMA)
    return inserted, pl.read_json(io.BytesIO(text.encode()), schema=KNOWN_SCHEMA)


#: The known URLs of a batch that committed, as :data:`MERGE` would have given them back (``previous_run``
#: unknown: 0). Parameters: ``urls``, ``run``, ``now`` (the batch's time: ``added_at`` of what it inserted).
READ_BACK = f"""
SELECT coalesce(json_agg(json_build_object({", ".join(f"'{c}', {c}" for c in MERGED)}, 'previous_run', 0)),
    '[]')::text
FROM urls WHERE url = ANY(%(urls)s) AND NOT (first_run = %(run)s AND added_at = %(now)s)
"""


def read_back(con: psycopg.Connection, params: dict[str, Any], frame: pl.DataFrame) -> pl.DataFrame:
    """The batch's frame as :func:`with_merged` gives it, for a batch that committed without the writer
    hearing of it: read back from ``urls`` as stored now. ``new`` is exact (the rows this batch's time
    inserted); whether a known URL was a ``repeat`` (this run wrote it before this batch) is not
    recorded anywhere, and reads as not."""
    urls = frame.get_column("url").to_list()
    row = con.execute(READ_BACK, {"urls": urls, "run": params["run"], "now": params["now"]}).fetchone()
    text = row[0] if row else "[]"
    known = (
        pl.DataFrame(schema=KNOWN_SCHEMA)
        if text == "[]"
        else pl.read_json(io.BytesIO(text.encode()), schema=KNOWN_SCHEMA)
    )
    return with_merged(frame, known, int(params["run"]))
