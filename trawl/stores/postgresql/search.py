"""The PostgreSQL store's read side for ``trawl search`` (the ``Searcher`` of :mod:`trawl.stores.contract`).

Records come in URL order (byte order: the ``"C"`` collation), facets by
count then value, the answers of the SQLite and Elasticsearch stores. A
query is one SQL statement (:mod:`.query`); records stream from a
server-side cursor.

A query or facet on a part of the URL (``ext``, ``tld``, ``param``...) first
fills the session table ``url_parts`` with those parts, computed in Python
by :mod:`trawl.records.ecs` for every stored URL, once per search: the
SQLite store computes them row by row the same way, and the public-suffix
split has no SQL form.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg

from trawl.errors import StoreError
from trawl.records.batches import UrlRecord
from trawl.records.ecs import domain_parts, extension_of, param_names, split_url
from trawl.search import Node, field_named
from trawl.stores.postgresql import connection
from trawl.stores.postgresql.errors import store_error
from trawl.stores.postgresql.query import DERIVED, sql_expr, to_sql
from trawl.stores.postgresql.reading import timeout

_COLUMNS = "u.url, u.host, u.sources, u.first_seen, u.last_seen, u.captures, u.statuses, u.mimes"
_PARTS_TABLE = (
    'CREATE TEMP TABLE url_parts (url text COLLATE "C" PRIMARY KEY, scheme text COLLATE "C", port integer,'
    ' path text COLLATE "C", query text COLLATE "C", extension text COLLATE "C",'
    ' top_level_domain text COLLATE "C", registered_domain text COLLATE "C", subdomain text COLLATE "C",'
    ' params text[] COLLATE "C")'
)
#: URLs read per round trip while the parts are computed.
_CHUNK = 10_000


def url_parts(url: str) -> tuple[Any, ...]:
    """The row of ``url_parts`` for ``url``: :func:`trawl.records.ecs.url_part`'s values, all at once."""
    scheme, host, port, path, query = split_url(url)
    registered, subdomain, tld = domain_parts(host)
    return (
        url, scheme, port, path, query, extension_of(path), tld or None, registered or None,
        subdomain or None, param_names(query),
    )  # fmt: skip


class PostgresSearcher:
    """Searches a PostgreSQL store (read-only, but for its session table)."""

    def __init__(self, uri: str, settings: Any = None) -> None:
        self.shown = connection.hide(uri)
        try:
            self.con = connection.connect(uri, timeout(settings))
            row = self.con.execute("SELECT to_regclass('urls') IS NOT NULL").fetchone()
        except psycopg.Error as exc:
            raise store_error(f"cannot read the PostgreSQL store {self.shown}", exc) from None
        if not row or not row[0]:
            self.con.close()
            raise StoreError(f"no trawl store in {self.shown} (run a crawl first, or set STORE_URI)")
        self._parts = False

    def __enter__(self) -> PostgresSearcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.con.close()

    def _ensure_parts(self) -> None:
        if self._parts:
            return
        self.con.execute(_PARTS_TABLE)
        # A COPY per chunk: the connection cannot fetch from the cursor while a COPY is open on it.
        with self.con.cursor(name="trawl_parts") as urls, self.con.cursor() as cur:
            urls.execute("SELECT url FROM urls")
            while chunk := urls.fetchmany(_CHUNK):
                with cur.copy("COPY url_parts FROM STDIN") as copy:
                    for (url,) in chunk:
                        copy.write_row(url_parts(url))
        self.con.execute("ANALYZE url_parts")
        self._parts = True

    def _from(self, derived: bool) -> str:
        if derived:
            self._ensure_parts()
            return "urls u LEFT JOIN url_parts p ON p.url = u.url"
        return "urls u"

    def _run(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        try:
            return self.con.execute(sql, params).fetchall()
        except psycopg.Error as exc:
            raise store_error(f"cannot search the PostgreSQL store {self.shown}", exc) from None

    def records(self, node: Node, limit: int | None = None) -> Iterator[UrlRecord]:
        query = to_sql(node)
        try:
            sql = f"SELECT {_COLUMNS} FROM {self._from(query.derived)} WHERE {query.where} ORDER BY u.url"
            params = list(query.params)
            if limit is not None:
                sql += " LIMIT %s"
                params.append(limit)
            with self.con.cursor(name="trawl_search") as cursor:
                cursor.execute(sql, params)
                for url, host, sources, first, last, captures, statuses, mimes in cursor:
                    yield UrlRecord(url, host, sources, first, last, captures, statuses, mimes, False)
        except psycopg.Error as exc:
            raise store_error(f"cannot search the PostgreSQL store {self.shown}", exc) from None

    def count(self, node: Node) -> int:
        query = to_sql(node)
        sql = f"SELECT count(*) FROM {self._from(query.derived)} WHERE {query.where}"
        return int(self._run(sql, query.params)[0][0])

    def facet(self, node: Node, name: str, size: int) -> list[tuple[str, int]]:
        field = field_named(name)
        column = sql_expr(field)
        query = to_sql(node)
        source = self._from(query.derived or field.name in DERIVED)
        if field.kind in ("set", "intset"):
            member = "(m::numeric)::text" if field.kind == "intset" else "m"
            only = r" AND m ~ '^-?[0-9]+$'" if field.kind == "intset" else ""
            sql = (
                f"SELECT value, n FROM (SELECT {member} AS value, count(DISTINCT u.url) AS n FROM {source}"
                f" CROSS JOIN LATERAL unnest({column}) AS m WHERE {query.where}{only} GROUP BY 1) AS counted"
                ' ORDER BY n DESC, value COLLATE "C" LIMIT %s'
            )
        else:
            sql = (
                f"SELECT {column} AS value, count(*) AS n FROM {source}"
                f" WHERE {query.where} AND {column} IS NOT NULL"
                " GROUP BY value ORDER BY n DESC, value LIMIT %s"
            )
        return [(str(value), int(n)) for value, n in self._run(sql, [*query.params, size])]
