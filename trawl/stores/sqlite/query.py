"""A :mod:`trawl.search` syntax tree as SQL over the SQLite store's ``urls`` table.

:data:`SQL_FIELDS` maps each search field to a column of ``urls`` or to a part
of the URL that ``trawl_url()`` computes on the fly with the function the
Elasticsearch store indexes by (:func:`trawl.records.ecs.url_part`), so
``ext:js`` means the same on both stores. :func:`register_sql_functions` adds
the functions the SQL calls to a connection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from trawl.records.ecs import url_part
from trawl.search import (
    And,
    Exists,
    Field,
    MatchAll,
    Node,
    Not,
    Or,
    Pattern,
    Range,
    Term,
    pattern_regex,
    searched_kinds,
    wildcard_pattern,
)
from trawl.stores.sqllike import like_pattern

#: Search field -> SQL expression: a column of ``urls``, or a part ``trawl_url()`` derives from the URL.
SQL_FIELDS: dict[str, str] = {
    "url": "url",
    "host": "host",
    "domain": "host",
    "scheme": "trawl_url(url, 'scheme')",
    "port": "trawl_url(url, 'port')",
    "path": "trawl_url(url, 'path')",
    "query": "trawl_url(url, 'query')",
    "ext": "trawl_url(url, 'extension')",
    "tld": "trawl_url(url, 'top_level_domain')",
    "registered_domain": "trawl_url(url, 'registered_domain')",
    "subdomain": "trawl_url(url, 'subdomain')",
    "param": "trawl_url(url, 'params')",
    "source": "sources",
    "status": "statuses",
    "mime": "mimes",
    "first_seen": "first_seen",
    "last_seen": "last_seen",
    "captures": "captures",
}
#: Fields derived from the URL in Python, row by row (:func:`_prefilter` keeps that to rows that can match).
DERIVED = frozenset(name for name, expr in SQL_FIELDS.items() if expr.startswith("trawl_url("))


def sql_expr(field: Field) -> str:
    """The SQL expression of ``field``: a column, a ``trawl_url()`` call, or the column of another
    record kind's record about the URL (``<kind>_records``, joined by the kind's declared URL column)."""
    if not field.record:
        return SQL_FIELDS[field.name]
    return f"(SELECT k.{field.column} FROM {field.record}_records k WHERE k.{field.join} = urls.url)"


def ensure_kind_tables(con: Any) -> None:
    """Give a connection to a store that never kept a searchable kind's records an empty stand-in
    table (TEMP: the connection's own, the file is not written), so that the kind's fields match
    nothing instead of failing; made from the kind's declared ``SEARCH_FIELDS``."""
    for kind, fields in searched_kinds().items():
        table = f"{kind}_records"
        known = con.execute(
            "SELECT 1 FROM sqlite_master WHERE name = ?"
            " UNION ALL SELECT 1 FROM sqlite_temp_master WHERE name = ?",
            (table, table),
        ).fetchone()
        if known is None:
            join = next(iter(fields.values())).join
            columns = dict.fromkeys([join, *(field.column for field in fields.values())])
            con.execute(f"CREATE TEMP TABLE {table} ({', '.join(columns)})")


@dataclass
class SqlQuery:
    where: str
    params: list[Any]
    #: Indexes (column names) that make this query fast: the search creates them.
    indexes: set[str]


def to_sql(node: Node) -> SqlQuery:
    """A ``WHERE`` clause over the SQLite store's ``urls`` table.

    Needs the functions of :func:`register_sql_functions` on the connection.
    Every leaf is made a strict 0/1 (``NULL`` counts as no match), so that
    ``NOT`` means what ``must_not`` means in Elasticsearch.
    """
    params: list[Any] = []
    indexes: set[str] = set()
    where = _sql(node, params, indexes)
    return SqlQuery(where, params, indexes)


#: Columns of the ``urls`` table that are never NULL.
_NOT_NULL = frozenset({"url", "host", "sources", "statuses", "mimes", "captures"})


def _strict(field: Field, condition: str) -> str:
    """``condition`` as 0/1, never NULL (so that NOT of it is what must_not means)."""
    if sql_expr(field) in _NOT_NULL:
        return f"({condition})"
    return f"(coalesce({condition}, 0) = 1)"


def _set_expr(column: str) -> str:
    return f"(',' || {column} || ',')"


def _sql(node: Node, params: list[Any], indexes: set[str]) -> str:
    if isinstance(node, MatchAll):
        return "1"
    if isinstance(node, And):
        return "(" + " AND ".join(_sql(n, params, indexes) for n in node.nodes) + ")"
    if isinstance(node, Or):
        return "(" + " OR ".join(_sql(n, params, indexes) for n in node.nodes) + ")"
    if isinstance(node, Not):
        return f"(NOT {_sql(node.node, params, indexes)})"
    prefilter = _prefilter(node, params)
    leaf = _leaf(node, params, indexes)
    return f"({prefilter} AND {leaf})" if prefilter else leaf


_SAFE_NAME = re.compile(r"[A-Za-z0-9._~-]+")


def _prefilter(node: Node, params: list[Any]) -> str | None:
    """A cheap test in C that every URL a derived-field condition can match passes.

    ``trawl_url()`` parses the URL in Python for each row it sees; this keeps it
    to the rows that can match (``ext:js`` needs ``.js`` in the URL).
    """
    field = getattr(node, "field", None)
    if field is None or field.name not in DERIVED:
        return None
    if field.name == "ext" and isinstance(node, Term):
        params.append("%." + like_pattern(wildcard_pattern(str(node.value), ())) + "%")
        return "url LIKE ? ESCAPE '\\'"
    if field.name in ("param", "query") and isinstance(node, (Term, Pattern, Exists)):
        if field.name == "param" and isinstance(node, Term) and _SAFE_NAME.fullmatch(str(node.value)):
            params.append(node.value)
            return "instr(url, '?') > 0 AND instr(url, ?) > 0"
        return "instr(url, '?') > 0"
    return None


def _leaf(node: Node, params: list[Any], indexes: set[str]) -> str:
    field = node.field  # type: ignore[union-attr]
    column = sql_expr(field)
    if isinstance(node, Exists):
        if field.kind in ("set", "intset"):
            if field.kind == "intset":
                return f"(trawl_set_range({column}, NULL, NULL, 1, 1) = 1)"
            return f"(coalesce({column}, '') != '')"
        return f"({column} IS NOT NULL)"
    if isinstance(node, Pattern):
        like = like_pattern(node.pattern)
        if field.kind == "set":
            params.append(node.pattern)
            return f"(coalesce(trawl_set_match({column}, ?), 0) = 1)"
        if node.pattern.isascii():
            params.append(like)
            return _strict(field, f"{column} LIKE ? ESCAPE '\\'")
        params.append(node.pattern)
        return f"(coalesce(trawl_match({column}, ?), 0) = 1)"
    if isinstance(node, Term):
        if field.kind == "set":
            params.append("," + str(node.value) + ",")
            expr = _set_expr(column)
            if field.lower:
                expr = f"lower({expr})"
            return f"(instr({expr}, ?) > 0)"
        if field.kind == "intset":
            params.append(f",{node.value},")
            return f"(instr({_set_expr(column)}, ?) > 0)"
        if column in ("host", "url"):
            indexes.add(column)
            params.append(node.value)
            return f"({column} = ?)"
        params.append(node.value)
        if field.lower:
            return _strict(field, f"lower({column}) = ?")
        return _strict(field, f"{column} = ?")
    if isinstance(node, Range):
        if field.kind == "intset":
            params.extend([node.low, node.high, int(node.include_low), int(node.include_high)])
            return f"(trawl_set_range({column}, ?, ?, ?, ?) = 1)"
        if column in ("first_seen", "last_seen", "captures", "host", "url"):
            indexes.add(column)
        parts = [f"{column} IS NOT NULL"]
        if node.low is not None:
            parts.append(f"{column} {'>=' if node.include_low else '>'} ?")
            params.append(node.low)
        if node.high is not None:
            parts.append(f"{column} {'<=' if node.include_high else '<'} ?")
            params.append(node.high)
        # "x IS NOT NULL AND ..." is 0, not NULL, for a NULL x, and keeps indexes usable.
        return "(" + " AND ".join(parts) + ")"
    raise TypeError(node)


def _set_range(
    text: str | None, low: int | None, high: int | None, include_low: int, include_high: int
) -> int:
    """1 if a member of the comma-joined ``text`` is an integer within the bounds."""
    if not text:
        return 0
    for member in text.split(","):
        try:
            value = int(member)
        except ValueError:
            continue
        if low is not None and (value < low or (value == low and not include_low)):
            continue
        if high is not None and (value > high or (value == high and not include_high)):
            continue
        return 1
    return 0


def _set_match(text: str | None, pattern: str) -> int:
    if not text:
        return 0
    regex = _regex(pattern)
    return int(any(regex.fullmatch(member) for member in text.split(",")))


def _match(text: str | None, pattern: str) -> int | None:
    if text is None:
        return None
    return int(_regex(pattern).fullmatch(str(text)) is not None)


_regex_cache: dict[str, re.Pattern[str]] = {}


def _regex(pattern: str) -> re.Pattern[str]:
    regex = _regex_cache.get(pattern)
    if regex is None:
        regex = _regex_cache[pattern] = pattern_regex(pattern)
    return regex


def register_sql_functions(con: Any) -> None:
    """Add the functions :func:`to_sql` uses to a ``sqlite3`` connection (this connection only)."""
    con.create_function("trawl_url", 2, url_part, deterministic=True)
    con.create_function("trawl_match", 2, _match, deterministic=True)
    con.create_function("trawl_set_match", 2, _set_match, deterministic=True)
    con.create_function("trawl_set_range", 5, _set_range, deterministic=True)
