"""``scrapy search`` on the Elasticsearch store: :mod:`trawl.search` trees become ES queries
(:mod:`.query`).

Records come in URL order, facets by count then value (``terms`` ordered by
``_count`` desc, ``_key`` asc): the order SQLite's searcher gives, so both
stores answer a query alike (``tests/test_search.py`` checks it on every query).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from trawl.records.batches import UrlRecord
from trawl.search import field_named
from trawl.stores.elasticsearch.connection import connect
from trawl.stores.elasticsearch.documents import READ_FIELDS, record_from_doc
from trawl.stores.elasticsearch.query import es_field, to_es
from trawl.stores.elasticsearch.reading import scan
from trawl.stores.elasticsearch.templates import names_from

if TYPE_CHECKING:
    from trawl.search import Node


class ElasticsearchSearcher:
    """The read side of one Elasticsearch store (a :class:`trawl.stores.contract.Searcher`)."""

    def __init__(self, uri: str, settings: Any) -> None:
        self.index = names_from(settings).urls_pattern
        self.client = connect(uri, settings)

    def __enter__(self) -> ElasticsearchSearcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    def records(self, node: Node, limit: int | None = None) -> Iterator[UrlRecord]:
        for hit in scan(self.client, self.index, to_es(node), limit=limit, fields=READ_FIELDS):
            yield record_from_doc(hit["_source"])

    def count(self, node: Node) -> int:
        return int(self.client.count(index=self.index, query=to_es(node)).body["count"])

    def facet(self, node: Node, name: str, size: int) -> list[tuple[str, int]]:
        field = field_named(name)
        order = [{"_count": "desc"}, {"_key": "asc"}]
        aggs = {"f": {"terms": {"field": es_field(field), "size": size, "order": order}}}
        answer = self.client.search(index=self.index, query=to_es(node), size=0, aggs=aggs).body
        return [(str(b["key"]), int(b["doc_count"])) for b in answer["aggregations"]["f"]["buckets"]]
