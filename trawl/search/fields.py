"""The fields a query can name: their kinds, their aliases, the ones ``--facet`` counts.

No backend appears here: each store maps these names to what it holds in its
own query module (``trawl/stores/<store>/query.py``), so a new store adds a
module, not a column to this table. ``tests/test_search.py`` checks that every
field has a mapping in every built-in store.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import import_module

from trawl.errors import TrawlUsageError


@dataclass(frozen=True)
class Field:
    """A field of the query language; ``kind`` says which values and operators it takes."""

    name: str
    kind: str  # url, keyword, set, intset, int, date, domain, bool
    lower: bool = False  # values are compared lower-cased
    #: The numbers an ``int``/``intset`` field takes (both stores hold them in 64 bits or less).
    bounds: tuple[int, int] = (0, 2**63 - 1)
    #: The record kind whose records hold it ("": the URL record itself), its column there,
    #: and the kind's column that holds the URL it describes (what a store joins on).
    record: str = ""
    column: str = ""
    join: str = "url"


FIELDS: dict[str, Field] = {
    f.name: f
    for f in (
        Field("url", "url"),
        Field("host", "keyword", lower=True),
        Field("domain", "domain", lower=True),
        Field("scheme", "keyword", lower=True),
        Field("port", "int", bounds=(0, 65535)),
        Field("path", "keyword"),
        Field("query", "keyword"),
        Field("ext", "keyword", lower=True),
        Field("tld", "keyword", lower=True),
        Field("registered_domain", "keyword", lower=True),
        Field("subdomain", "keyword", lower=True),
        Field("param", "set"),
        Field("source", "set", lower=True),
        Field("status", "intset", bounds=(0, 999)),  # Elasticsearch holds it as a short
        Field("mime", "set", lower=True),
        Field("first_seen", "date"),
        Field("last_seen", "date"),
        Field("captures", "int"),
    )
}
ALIASES = {
    "extension": "ext",
    "sources": "source",
    "statuses": "status",
    "status_code": "status",
    "mimes": "mime",
    "mime_type": "mime",
    "params": "param",
    "parameter": "param",
    # The names of a URL record's ECS document (trawl/records/ecs.py and trawl.*),
    # the ones Kibana shows, work on every store too (``url.domain:``, ``trawl.sources:``).
    "url.full": "url",
    "url.domain": "host",
    "url.scheme": "scheme",
    "url.port": "port",
    "url.path": "path",
    "url.query": "query",
    "url.extension": "ext",
    "url.top_level_domain": "tld",
    "url.registered_domain": "registered_domain",
    "url.subdomain": "subdomain",
    "trawl.params": "param",
    "trawl.sources": "source",
    "trawl.status_codes": "status",
    "trawl.mime_types": "mime",
    "trawl.first_seen": "first_seen",
    "trawl.last_seen": "last_seen",
    "trawl.captures": "captures",
}
#: Fields ``--facet`` can count.
FACETS = ("host", "source", "status", "mime", "ext", "scheme", "tld", "registered_domain", "port")


_NAME = re.compile(r"[a-z][a-z0-9_]*")
#: Fields other record kinds declare (``SEARCH_FIELDS`` on their batch type), by name.
_KIND_FIELDS: dict[str, Field] = {}
_builtins_declared = False


def declare_kind_fields(kind: str, fields: Mapping[str, Field]) -> None:
    """Make a record kind's ``SEARCH_FIELDS`` searchable (called when its batch type is defined).

    A kind's field is searched beside the URL's (``live:true AND ext:php``) and a URL
    without a record of that kind has none of it. A store that keeps the kind joins it
    by :attr:`Field.join`; one that cannot refuses it in one line (:func:`refuse_kind_fields`).
    A bad declaration is one :class:`TrawlUsageError` line when the plugin is imported.
    """
    for name, field in fields.items():
        spelled = (kind, name, field.column or name, field.join)
        if not all(_NAME.fullmatch(word) for word in spelled):  # each goes into a store's SQL as is
            raise TrawlUsageError(f"record kind {kind!r} search field {name!r}: names are [a-z][a-z0-9_]*")
        if name in FIELDS or name in ALIASES:
            raise TrawlUsageError(f"record kind {kind!r} declares search field {name!r}, a URL field's name")
        owner = _KIND_FIELDS.get(name)
        if owner is not None and owner.record != kind:
            raise TrawlUsageError(f"search field {name!r} is declared by kinds {owner.record!r} and {kind!r}")
        _KIND_FIELDS[name] = replace(field, name=name, record=kind, column=field.column or name)


def kind_fields() -> Mapping[str, Field]:
    """Every declared kind's search fields: the built-in kinds' (their declarations are
    light modules, imported here without the kinds' polars batch types) and those of the
    kinds of the plugins imported so far."""
    global _builtins_declared
    if not _builtins_declared:
        _builtins_declared = True
        from trawl.records.searchable import BUILTIN_SEARCH_FIELDS

        for kind, path in BUILTIN_SEARCH_FIELDS.items():
            module, _, attribute = path.partition(":")
            declare_kind_fields(kind, getattr(import_module(module), attribute))
    return _KIND_FIELDS


def searched_kinds() -> dict[str, dict[str, Field]]:
    """The declared kinds and their fields (a store makes each kind's stand-in table from them)."""
    kinds: dict[str, dict[str, Field]] = {}
    for field in kind_fields().values():
        kinds.setdefault(field.record, {})[field.name] = field
    return kinds
