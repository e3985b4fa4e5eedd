"""A :mod:`trawl.search` syntax tree as PostgreSQL SQL over the store's ``urls`` table.

:data:`SQL_FIELDS` maps each search field to a column of ``urls`` (``u``) or
of ``url_parts`` (``p``), the parts of each URL the Elasticsearch store
indexes, computed with the very function it indexes by
(:func:`trawl.records.ecs.url_part`'s pieces) into a session table by the
searcher (:mod:`.search`) when a query names one: ``ext:js`` means the same
on every store, public-suffix rules included, which SQL alone cannot say.

Every leaf is strictly true or false (``coalesce(..., false)``): ``NOT`` then
means what ``must_not`` means in Elasticsearch and ``NOT`` in the SQLite
store. Patterns are case-insensitive (``ILIKE``), as the language wants;
set fields are ``text[]``, matched member by member.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    refuse_kind_fields,
)
from trawl.stores.sqllike import like_pattern

#: Search field -> SQL expression: a column of ``urls u``, or of the derived ``url_parts p``.
SQL_FIELDS: dict[str, str] = {
    "url": "u.url",
    "host": "u.host",
    "domain": "u.host",
    "scheme": "p.scheme",
    "port": "p.port",
    "path": "p.path",
    "query": "p.query",
    "ext": "p.extension",
    "tld": "p.top_level_domain",
    "registered_domain": "p.registered_domain",
    "subdomain": "p.subdomain",
    "param": "p.params",
    "source": "u.sources",
    "status": "u.statuses",
    "mime": "u.mimes",
    "first_seen": "u.first_seen",
    "last_seen": "u.last_seen",
    "captures": "u.captures",
}
#: Fields that need the ``url_parts`` session table.
DERIVED = frozenset(name for name, expr in SQL_FIELDS.items() if expr.startswith("p."))
_INTEGER = r"'^-?[0-9]+$'"


def sql_expr(field: Field) -> str:
    return SQL_FIELDS[field.name]


@dataclass
class SqlQuery:
    where: str
    params: list[Any]
    #: Whether the query reads ``url_parts`` (the searcher makes it first).
    derived: bool


def uses_derived(node: Node) -> bool:
    if isinstance(node, (And, Or)):
        return any(uses_derived(n) for n in node.nodes)
    if isinstance(node, Not):
        return uses_derived(node.node)
    field = getattr(node, "field", None)
    return field is not None and field.name in DERIVED


def to_sql(node: Node) -> SqlQuery:
    """A ``WHERE`` clause over ``urls u`` (``LEFT JOIN url_parts p`` when ``derived``)."""
    refuse_kind_fields(node, "the PostgreSQL store")
    params: list[Any] = []
    where = _sql(node, params)
    return SqlQuery(where, params, uses_derived(node))


def _sql(node: Node, params: list[Any]) -> str:
    if isinstance(node, MatchAll):
        return "true"
    if isinstance(node, And):
        return "(" + " AND ".join(_sql(n, params) for n in node.nodes) + ")"
    if isinstance(node, Or):
        return "(" + " OR ".join(_sql(n, params) for n in node.nodes) + ")"
    if isinstance(node, Not):
        return f"(NOT {_sql(node.node, params)})"
    return f"coalesce({_leaf(node, params)}, false)"


def _any_member(column: str, condition: str) -> str:
    """True if a member ``m`` of the array ``column`` meets ``condition``."""
    return f"EXISTS (SELECT 1 FROM unnest({column}) AS m WHERE {condition})"


def _leaf(node: Node, params: list[Any]) -> str:
    field = node.field  # type: ignore[union-attr]
    column = sql_expr(field)
    if isinstance(node, Exists):
        if field.kind == "intset":
            return _any_member(column, f"m ~ {_INTEGER}")
        if field.kind == "set":
            return f"(cardinality({column}) > 0)"
        return f"({column} IS NOT NULL)"
    if isinstance(node, Pattern):
        params.append(like_pattern(node.pattern))
        if field.kind in ("set", "intset"):
            return _any_member(column, "m ILIKE %s")
        return f"({column})::text ILIKE %s"
    if isinstance(node, Term):
        if field.kind in ("set", "intset"):
            params.append(str(node.value))
            return _any_member(column, "lower(m) = %s" if field.lower else "m = %s")
        params.append(node.value)
        if field.lower and column not in ("u.host", "u.url"):
            return f"(lower({column}) = %s)"
        return f"({column} = %s)"
    if isinstance(node, Range):
        if field.kind == "intset":
            parts = [f"m ~ {_INTEGER}"]
            value = "m::numeric"
        else:
            parts = [f"{column} IS NOT NULL"]
            value = column
        if node.low is not None:
            parts.append(f"{value} {'>=' if node.include_low else '>'} %s")
            params.append(node.low)
        if node.high is not None:
            parts.append(f"{value} {'<=' if node.include_high else '<'} %s")
            params.append(node.high)
        condition = " AND ".join(parts)
        return _any_member(column, condition) if field.kind == "intset" else f"({condition})"
    raise TypeError(node)
