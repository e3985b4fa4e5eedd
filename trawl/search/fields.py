"""The fields a query can name: their kinds, their aliases, the ones ``--facet`` counts.

No backend appears here: each store maps these names to what it holds in its
own query module (``trawl/stores/<store>/query.py``), so a new store adds a
module, not a column to this table. ``tests/test_search.py`` checks that every
field has a mapping in every built-in store.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    """A field of the query language; ``kind`` says which values and operators it takes."""

    name: str
    kind: str  # url, keyword, set, intset, int, date, domain, bool
    lower: bool = False  # values are compared lower-cased
    #: The numbers an ``int``/``intset`` field takes (both stores hold them in 64 bits or less).
    bounds: tuple[int, int] = (0, 2**63 - 1)


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
#: Fields of the ``probe`` record kind (``trawl crawl probe``), searched beside the URL's
#: (``live:true AND ext:php``): a URL never probed has none of them. A store that keeps
#: probe records joins them in its own query module; one that cannot refuses them in one line.
PROBE_FIELDS: dict[str, Field] = {
    f.name: f
    for f in (
        Field("live", "bool"),
        Field("status_live", "int", bounds=(0, 999)),
        Field("title", "keyword"),
        Field("verdict", "keyword", lower=True),
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
