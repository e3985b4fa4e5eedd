"""The SQLite store's read side for ``scrapy search`` (the ``Searcher`` of
:mod:`trawl.stores.contract`).

Records come in URL order (byte order), facets by count then value, so that
every store gives the same answer to the same query. The query becomes one SQL
statement over the ``urls`` table. The indexes a query can use (``host``,
``first_seen``, ``last_seen``, ``captures``) are created the first time a
search needs them, not by the store: a crawl into a store nobody searches
keeps its full write speed (an index on ``host`` costs inserts ~25%), and
a store that has been searched keeps them (later crawls pay that price).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trawl.errors import StoreError
from trawl.records.record import UrlRecord
from trawl.search import Node, field_named
from trawl.stores.sqlite.query import ensure_kind_tables, register_sql_functions, sql_expr, to_sql

#: Indexes a search may create, by column.
SEARCH_INDEXES = {
    "host": "CREATE INDEX IF NOT EXISTS urls_search_host ON urls(host)",
    "first_seen": "CREATE INDEX IF NOT EXISTS urls_search_first_seen ON urls(first_seen)",
    "last_seen": "CREATE INDEX IF NOT EXISTS urls_search_last_seen ON urls(last_seen)",
    "captures": "CREATE INDEX IF NOT EXISTS urls_search_captures ON urls(captures)",
}
_COLUMNS = "url, host, sources, first_seen, last_seen, captures, statuses, mimes"


class SqliteSearcher:
    """Searches a SQLite store file (read-only, except for creating search indexes)."""

    def __init__(self, path: str, create_indexes: bool = True) -> None:
        if path != ":memory:" and not Path(path).exists():
            raise StoreError(f"no SQLite store at {path!r} (run a crawl first, or set STORE_URI)")
        try:
            self.con = sqlite3.connect(path, timeout=60)
            self.con.execute("SELECT 1 FROM urls LIMIT 1")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the SQLite store {path!r}: {exc}") from None
        register_sql_functions(self.con)
        ensure_kind_tables(self.con)
        self.create_indexes = create_indexes

    def __enter__(self) -> SqliteSearcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.con.close()

    def _where(self, node: Node) -> tuple[str, list[Any]]:
        query = to_sql(node)
        if self.create_indexes:
            self.ensure_indexes(query.indexes)
        return query.where, query.params

    def ensure_indexes(self, columns: set[str]) -> None:
        for column in sorted(columns):
            statement = SEARCH_INDEXES.get(column)
            if statement is None:
                continue
            try:
                self.con.execute(statement)
            except sqlite3.OperationalError:
                pass  # a read-only file or a busy writer: the search still works, slower

    def records(self, node: Node, limit: int | None = None) -> Iterator[UrlRecord]:
        where, params = self._where(node)
        sql = f"SELECT {_COLUMNS} FROM urls WHERE {where} ORDER BY url"
        if limit is not None:
            sql += " LIMIT ?"
            params = [*params, limit]
        for url, host, sources, first, last, captures, statuses, mimes in self.con.execute(sql, params):
            yield UrlRecord(
                url, host, _split(sources), first, last, captures, _split(statuses), _split(mimes), False
            )

    def count(self, node: Node) -> int:
        where, params = self._where(node)
        return int(self.con.execute(f"SELECT count(*) FROM urls WHERE {where}", params).fetchone()[0])

    def facet(self, node: Node, name: str, size: int) -> list[tuple[str, int]]:
        field = field_named(name)
        column = sql_expr(field)
        where, params = self._where(node)
        if field.kind in ("set", "intset"):
            counts: Counter[str] = Counter()
            for (text,) in self.con.execute(f"SELECT {column} FROM urls WHERE {where}", params):
                if not text:
                    continue
                members = set(text.split(","))
                if field.kind == "intset":
                    members = {str(int(m)) for m in members if m.strip().lstrip("-").isdigit()}
                counts.update(members)
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            return ranked[:size]
        if column == "host":
            self.ensure_indexes({"host"})
        rows = self.con.execute(
            f"SELECT {column} AS value, count(*) AS n FROM urls WHERE {where} AND {column} IS NOT NULL"
            " GROUP BY value ORDER BY n DESC, value LIMIT ?",
            [*params, size],
        )
        return [(str(value), int(n)) for value, n in rows]


def _split(text: str) -> list[str]:
    return text.split(",") if text else []
