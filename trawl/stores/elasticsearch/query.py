"""A :mod:`trawl.search` syntax tree as an Elasticsearch query (filter context, no scoring).

:data:`ES_FIELDS` maps each search field to the field of the URL document that
holds it (:mod:`.templates`' mapping: ECS ``url.*`` and ``trawl.*``). The tree's
patterns are in the syntax of ES's ``wildcard`` query already, and dates are
``yyyyMMddHHmmss`` bounds, so the translation only maps names and operators.
"""

from __future__ import annotations

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

#: Search field -> URL document field. ``domain`` is a ``url.domain`` question too.
ES_FIELDS: dict[str, str] = {
    "url": "url.full",
    "host": "url.domain",
    "domain": "url.domain",
    "scheme": "url.scheme",
    "port": "url.port",
    "path": "url.path",
    "query": "url.query",
    "ext": "url.extension",
    "tld": "url.top_level_domain",
    "registered_domain": "url.registered_domain",
    "subdomain": "url.subdomain",
    "param": "trawl.params",
    "source": "trawl.sources",
    "status": "trawl.status_codes",
    "mime": "trawl.mime_types",
    "first_seen": "trawl.first_seen",
    "last_seen": "trawl.last_seen",
    "captures": "trawl.captures",
}


def es_field(field: Field) -> str:
    """The document field that holds ``field`` (what a ``terms`` facet aggregates)."""
    return ES_FIELDS[field.name]


def to_es(node: Node) -> dict[str, Any]:
    """The Elasticsearch query DSL for a syntax tree (filter context, no scoring).

    The fields other record kinds declare (``SEARCH_FIELDS``) are refused in one line:
    this store does not join them.
    """
    refuse_kind_fields(node, "the Elasticsearch store")
    if isinstance(node, MatchAll):
        return {"match_all": {}}
    if isinstance(node, And):
        return {"bool": {"filter": [to_es(n) for n in node.nodes]}}
    if isinstance(node, Or):
        return {"bool": {"should": [to_es(n) for n in node.nodes], "minimum_should_match": 1}}
    if isinstance(node, Not):
        return {"bool": {"must_not": [to_es(node.node)]}}
    if isinstance(node, Exists):
        return {"exists": {"field": es_field(node.field)}}
    if isinstance(node, Pattern):
        return {"wildcard": {es_field(node.field): {"value": node.pattern, "case_insensitive": True}}}
    if isinstance(node, Term):
        body: dict[str, Any] = {"value": node.value}
        if node.field.lower:
            body["case_insensitive"] = True
        return {"term": {es_field(node.field): body}}
    if isinstance(node, Range):
        body = {}
        if node.low is not None:
            body["gte" if node.include_low else "gt"] = node.low
        if node.high is not None:
            body["lte" if node.include_high else "lt"] = node.high
        if node.field.kind == "date":
            body["format"] = "yyyyMMddHHmmss"
        if not body:
            return {"exists": {"field": es_field(node.field)}}
        return {"range": {es_field(node.field): body}}
    raise TypeError(node)
