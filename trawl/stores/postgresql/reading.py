"""The PostgreSQL store's read side: exports from the store, ``trawl report``, the run summary.

Connections of their own (autocommit, read-only), never the writer thread's:
they run after the crawl, or beside it in another process. A database
without trawl's tables yet reads as an empty store (SQLite's missing file).
Frames come as one JSON text per frame that the server writes and polars
reads: no Python object per row. Every ``psycopg.Error`` leaves as a
:class:`~trawl.errors.StoreError` naming the cause (:mod:`.errors`).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import polars as pl
import psycopg

from trawl.records.batches import URL_SCHEMA, Batch, UrlBatch
from trawl.records.runs import FIRST_SEEN_SCHEMA, RUNS_SCHEMA, covering_domains, empty_runs
from trawl.settings_checks import read
from trawl.stores.postgresql import connection
from trawl.stores.postgresql.errors import store_error

_COLUMNS = ("url", "host", "sources", "first_seen", "last_seen", "captures", "statuses", "mimes")
_READ_SCHEMA = {**{name: URL_SCHEMA[name] for name in _COLUMNS}, "new": pl.Boolean}


def suffix_pattern(domain: str) -> str:
    """``LIKE`` pattern of the subdomains of ``domain`` (``%``, ``_``, ``\\`` escaped)."""
    escaped = domain.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%.{escaped}"


def timeout(settings: Any) -> int:
    from trawl.stores.postgresql.store import SETTINGS

    return int(read(settings, SETTINGS, "POSTGRES_CONNECT_TIMEOUT"))


@contextmanager
def connected(uri: str, settings: Any) -> Iterator[psycopg.Connection | None]:
    """A read-only connection (``None`` when the database has no trawl tables yet), closed after;
    any failure inside, a ``StoreError`` naming the cause."""
    con = None
    try:
        con = connection.connect(uri, timeout(settings), autocommit=True)
        con.read_only = True
        (exists,) = con.execute("SELECT to_regclass('urls') IS NOT NULL").fetchone() or (False,)
        yield con if exists else None
    except psycopg.Error as exc:
        raise store_error(f"cannot read the PostgreSQL store {connection.hide(uri)}", exc) from None
    finally:
        if con is not None:
            con.close()


def read_runs(uri: str, settings: Any, run_ids: list[str], size: int) -> Iterator[UrlBatch]:
    """The URLs the given runs wrote or updated, in batches, as stored now."""
    if not run_ids:
        return
    runs = "(SELECT run FROM runs WHERE run_id = ANY(%(runs)s))"
    yield from _read(uri, settings, f"first_run IN {runs}", f"last_run IN {runs}", {"runs": run_ids}, size)


def read_domain(uri: str, settings: Any, domain: str, size: int) -> Iterator[UrlBatch]:
    """Every URL of ``domain`` and its subdomains, as stored now, in URL order."""
    where = "host = %(domain)s OR host LIKE %(suffix)s"
    params = {"domain": domain, "suffix": suffix_pattern(domain)}
    yield from _read(uri, settings, "false", where, params, size)


def _read(
    uri: str, settings: Any, new: str, where: str, params: dict[str, Any], size: int
) -> Iterator[UrlBatch]:
    """The rows ``where`` selects, in URL order, ``size`` at a time, one JSON text a frame."""
    fields = ", ".join(f"'{name}', {name}" for name in _READ_SCHEMA)
    sql = (
        f"SELECT coalesce(json_agg(json_build_object({fields}) ORDER BY url), '[]')::text, max(url) FROM"
        f" (SELECT {', '.join(_COLUMNS)}, {new} AS new FROM urls"
        f" WHERE ({where}) AND url > %(after)s ORDER BY url LIMIT %(size)s) AS page"
    )
    with connected(uri, settings) as con:
        if con is None:
            return
        last = ""
        while True:
            row = con.execute(sql, {**params, "after": last, "size": size}).fetchone()
            assert row is not None
            text, last = row
            if last is None:
                return
            frame = pl.read_json(io.BytesIO(text.encode()), schema=_READ_SCHEMA)
            yield UrlBatch("store", frame.with_columns(pl.lit(False).alias("repeat")))


def list_runs(uri: str, settings: Any, domain: str) -> pl.DataFrame:
    """The runs of ``domain``, its parents and its subdomains (times: epoch seconds)."""
    with connected(uri, settings) as con:
        if con is None:
            return empty_runs()
        rows = con.execute(
            "SELECT run_id, coalesce(job, run_id), source, domain, extract(epoch FROM started_at)::float8,"
            " extract(epoch FROM finished_at)::float8, finish_reason FROM runs"
            " WHERE domain = ANY(%s) OR domain LIKE %s",
            (covering_domains(domain), suffix_pattern(domain)),
        ).fetchall()
    return pl.DataFrame(rows, schema=RUNS_SCHEMA, orient="row")


def read_first_seen(
    uri: str, settings: Any, run_ids: list[str], domain: str, limit: int | None, size: int
) -> Iterator[pl.DataFrame]:
    """URLs of ``domain`` that one of ``run_ids`` stored first, in URL order (one join, in SQL)."""
    if not run_ids or limit == 0:
        return
    sql = (
        "SELECT u.url, u.host, u.sources, u.first_seen, u.last_seen, u.captures, u.statuses, u.mimes,"
        " r.run_id FROM urls u JOIN runs r ON r.run = u.first_run"
        " WHERE r.run_id = ANY(%s) AND (u.host = %s OR u.host LIKE %s) ORDER BY u.url"
    )
    params: tuple[Any, ...] = (run_ids, domain, suffix_pattern(domain))
    if limit is not None:
        sql += " LIMIT %s"
        params += (limit,)
    with connected(uri, settings) as con:
        if con is None:
            return
        with con.cursor() as cursor:
            cursor.execute(sql, params)
            while rows := cursor.fetchmany(size):
                yield pl.DataFrame(rows, schema=FIRST_SEEN_SCHEMA, orient="row")


def stored_kind(uri: str, settings: Any, batch_type: type[Batch], columns: list[str]) -> pl.DataFrame:
    """A declared kind's stored columns (:func:`trawl.stores.postgresql.kinds.kind_columns`), on a
    read-only connection of its own; empty when the database holds no trawl tables yet."""
    from trawl.stores.postgresql.kinds import kind_columns

    with connected(uri, settings) as con:
        if con is None:
            return pl.DataFrame(schema={name: batch_type.SCHEMA[name] for name in columns})
        return kind_columns(con, batch_type, columns)
