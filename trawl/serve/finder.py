"""The search page's SQL: trawl's query language, the words box, the facets, one page of URLs.

The query box goes through the parser and SQL translation ``trawl search`` uses
(:func:`trawl.search.parse`, :func:`trawl.stores.sqlite.query.to_sql`), so a
query means the same in the browser as on the command line; the words box adds
a full-text match (:mod:`.fts`). A facet click adds a clause to the query
(``host:"api.example.com"``), so the query box always says what is shown.

Each facet runs under its own time limit (:data:`FACET_MS`): on 5,000,000 URLs
an unfiltered facet on a derived field (``ext``, computed per row in Python)
takes tens of seconds, and the page answers without it ("timed out: narrow the
query") rather than after it. Six facets and the count stay under 0.65 s together;
the unfiltered page's are counted once in the background (:mod:`.summary`).
Facets on sets (sources, statuses, mimes) group by the stored set first and
split the few distinct sets in Python.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from trawl.records.batches import UrlRecord
from trawl.search import MatchAll, field_named, parse
from trawl.serve.fts import ATTACHED, match_expression
from trawl.stores.sqlite.query import sql_expr, to_sql

#: The facets of the search page: (label, query field, SQL expression or None for the field's own).
FACETS: tuple[tuple[str, str, str | None], ...] = (
    ("host", "host", None),
    ("source", "source", None),
    ("status", "status", None),
    ("mime", "mime", None),
    ("extension", "ext", None),
    ("first seen (year)", "first_seen", "substr(first_seen, 1, 4)"),
)
#: Values a facet lists.
FACET_SIZE = 10
#: Each facet's time budget, all six facets', and the count's: a page stays within a second
#: when a background count holds the GIL too (a broad query's page took 1.15 s with 6 x 100 ms).
FACET_MS = 100
FACETS_MS = 500
COUNT_MS = 150
#: URLs a page shows.
PAGE_SIZE = 100
#: The columns a search reads, in :class:`UrlRecord`'s order.
COLUMNS = "url, host, sources, first_seen, last_seen, captures, statuses, mimes"


@dataclass
class Where:
    sql: str
    params: list[Any]


def where_of(query: str, words: str = "", fts: bool = False) -> Where:
    """The ``WHERE`` of a query (``*`` or empty: every URL) and words; a bad query raises QueryError.

    Words alone: the index lists the URLs holding them. Words beside a query: each URL
    the query selects is looked up in the index by its row id, so a page of a host's
    URLs does not wait for every URL holding a common word (4.5 s on 5,000,000 URLs).
    """
    node = parse(query.strip() or "*")
    translated = to_sql(node)
    sql, params = translated.where, list(translated.params)
    expression = match_expression(words) if fts else ""
    if expression and isinstance(node, MatchAll):
        sql = f"({sql}) AND url IN (SELECT url FROM {ATTACHED}.url_words WHERE url_words MATCH ?)"
        params.append(expression)
    elif expression:
        sql = (
            f"({sql}) AND EXISTS (SELECT 1 FROM {ATTACHED}.url_words"
            " WHERE url_words MATCH ? AND url_words.rowid = trawl_url_id(urls.url))"
        )
        params.append(expression)
    return Where(sql, params)


@contextmanager
def time_limit(con: sqlite3.Connection, ms: int | None) -> Iterator[None]:
    """Interrupt what runs on ``con`` after ``ms`` ms (``sqlite3.OperationalError``); ``None``: never."""
    import time

    if ms is None:
        yield
        return
    deadline = time.monotonic() + ms / 1000

    def handler() -> int:
        return int(time.monotonic() > deadline)

    con.set_progress_handler(handler, 1000)
    try:
        yield
    finally:
        con.set_progress_handler(None, 1000)


@dataclass
class Facet:
    label: str
    field: str
    values: list[tuple[str, int]] = field(default_factory=list)
    timed_out: bool = False

    def clause(self, value: str) -> str:
        """The query clause a click on ``value`` adds."""
        return f'{self.field}:"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def facet(
    con: sqlite3.Connection, where: Where, label: str, name: str, expr: str | None, ms: int | None = FACET_MS
) -> Facet:
    """The top values of one facet among the URLs ``where`` selects, within ``ms``."""
    result = Facet(label, name)
    query_field = field_named(name)
    column = expr or sql_expr(query_field)
    sql = (
        f"SELECT {column} AS value, count(*) AS n FROM urls WHERE {where.sql} AND {column} IS NOT NULL"
        " GROUP BY value"
    )
    try:
        with time_limit(con, ms):
            rows = con.execute(sql, where.params).fetchall()
    except sqlite3.OperationalError as exc:
        if "interrupted" not in str(exc):
            raise
        result.timed_out = True
        return result
    counts: Counter[str] = Counter()
    if query_field.kind in ("set", "intset") and expr is None:
        for text, n in rows:
            for member in set(str(text).split(",")) - {""}:
                counts[member] += n
    else:
        counts.update({str(value): n for value, n in rows if value != ""})
    result.values = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:FACET_SIZE]
    return result


def facets(con: sqlite3.Connection, where: Where, ms: int | None = FACET_MS) -> list[Facet]:
    """Every facet, each within ``ms`` and all within :data:`FACETS_MS` (``None``: no limit)."""
    if ms is None:
        return [facet(con, where, label, name, expr, None) for label, name, expr in FACETS]
    import time

    deadline = time.monotonic() + FACETS_MS / 1000
    found = []
    for label, name, expr in FACETS:
        left = int((deadline - time.monotonic()) * 1000)
        found.append(
            facet(con, where, label, name, expr, min(ms, left)) if left > 0 else Facet(label, name, [], True)
        )
    return found


def count(con: sqlite3.Connection, where: Where, ms: int | None = COUNT_MS) -> int | None:
    """How many URLs match; ``None`` when counting takes longer than ``ms``."""
    try:
        with time_limit(con, ms):
            return int(
                con.execute(f"SELECT count(*) FROM urls WHERE {where.sql}", where.params).fetchone()[0]
            )
    except sqlite3.OperationalError as exc:
        if "interrupted" not in str(exc):
            raise
        return None


def page(con: sqlite3.Connection, where: Where, after: str = "", size: int = PAGE_SIZE) -> list[UrlRecord]:
    """One page of matching URLs in URL order, from the URL after ``after`` (keyset paging)."""
    sql = f"SELECT {COLUMNS} FROM urls WHERE ({where.sql}) AND url > ? ORDER BY url LIMIT ?"
    return list(records(con.execute(sql, [*where.params, after, size])))


def records(rows: Any) -> Iterator[UrlRecord]:
    """Rows of :data:`COLUMNS` as the records ``trawl search`` prints."""
    for url, host, sources, first, last, captures, statuses, mimes in rows:
        yield UrlRecord(
            url, host, _split(sources), first, last, captures, _split(statuses), _split(mimes), False
        )


def all_records(con: sqlite3.Connection, where: Where) -> Iterator[UrlRecord]:
    """Every matching URL in URL order (the exports)."""
    return records(con.execute(f"SELECT {COLUMNS} FROM urls WHERE {where.sql} ORDER BY url", where.params))


def patterns(con: sqlite3.Connection, where: Where, mode: str, size: int = PAGE_SIZE) -> list[tuple]:
    """The ``size`` largest patterns of the matching URLs (``trawl search --collapse MODE``'s rows).

    Every matching URL is read: the patterns of 1,000,000 URLs take a few seconds.
    """
    from trawl.search.collapse import collapse, url_column

    urls = url_column(url for (url,) in con.execute(f"SELECT url FROM urls WHERE {where.sql}", where.params))
    found = collapse(urls, mode).select("count", "pattern", "example")  # type: ignore[arg-type]
    return list(found.head(size).iter_rows())


def _split(text: str) -> list[str]:
    return text.split(",") if text else []


def day(timestamp: str | None) -> str:
    """``20220223040759`` -> ``2022-02-23``: the page's dates."""
    if not timestamp or len(timestamp) < 8:
        return timestamp or ""
    return f"{timestamp[:4]}-{timestamp[4:6]}-{timestamp[6:8]}"
