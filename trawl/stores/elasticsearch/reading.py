"""Reading URLs back, in URL order: what ``crawl all -o``, store exports and searches read.

Every listing pages with ``search_after`` on ``url.full``: URLs are unique, so
the URL alone pages exactly, with no scroll context held open on the cluster
(and Elasticsearch 8 cannot sort on ``_id``). Keyword order is byte order,
the order SQLite's ``ORDER BY url`` gives, so both stores list alike.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import polars as pl

from trawl.records.batches import UrlBatch
from trawl.records.runs import FIRST_SEEN_SCHEMA, RUNS_SCHEMA, covering_domains
from trawl.search import field_named, leaf
from trawl.stores.elasticsearch.connection import connect
from trawl.stores.elasticsearch.documents import READ_FIELDS
from trawl.stores.elasticsearch.query import to_es
from trawl.stores.elasticsearch.templates import names_from

logger = logging.getLogger(__name__)

#: URLs per batch read back: a CDX page's worth, what the pipeline hands exporters too.
BATCH_URLS = 5000


def scan(
    client: Any, index: str, query: Mapping[str, Any], size: int = 1000, sort_field: str = "url.full",
    limit: int | None = None, fields: list[str] | None = None,
) -> Iterator[Mapping[str, Any]]:  # fmt: skip
    """Every hit of ``query`` in ``sort_field`` order (``fields``: the ``_source`` fields wanted)."""
    after: list[Any] | None = None
    seen = 0
    while True:
        page = size if limit is None else min(size, limit - seen)
        if page <= 0:
            return
        kwargs: dict[str, Any] = {
            "index": index,
            "query": query,
            "size": page,
            "sort": [{sort_field: {"order": "asc", "missing": "_last"}}],
            "track_total_hits": False,
        }
        if fields is not None:
            kwargs["source_includes"] = fields
        if after is not None:
            kwargs["search_after"] = after
        hits = client.search(**kwargs).body["hits"]["hits"]
        if not hits:
            return
        yield from hits
        seen += len(hits)
        if len(hits) < page:
            return
        after = hits[-1].get("sort")
        if not after or after[0] is None:
            logger.warning("elasticsearch: a document without %s ends the listing early", sort_field)
            return


def url_batches(
    hits: Iterable[Mapping[str, Any]], size: int, new_runs: set[str], keep_first_run: bool = False
) -> Iterator[UrlBatch]:
    """Hits as :class:`UrlBatch` chunks of ``size`` (``new``: first written by one of ``new_runs``).

    ``keep_first_run`` adds a ``run_id`` column: the run that wrote the URL first.

    Columns are gathered as lists and the frame built once per chunk: building
    it row by row would cost a frame per URL.
    """
    columns: dict[str, list[Any]] = {name: [] for name in _COLUMNS}
    first_runs: list[str | None] = []
    for hit in hits:
        source = hit["_source"]
        url = source.get("url", {})
        trawl = source.get("trawl", {})
        columns["urls"].append(url.get("full", ""))
        columns["hosts"].append(url.get("domain", ""))
        columns["sources"].append(trawl.get("sources") or [])
        columns["first_seen"].append(trawl.get("first_seen"))
        columns["last_seen"].append(trawl.get("last_seen"))
        columns["captures"].append(int(trawl.get("captures") or 0))
        columns["statuses"].append([str(s) for s in trawl.get("status_codes") or []])
        columns["mimes"].append(trawl.get("mime_types") or [])
        columns["new"].append(trawl.get("first_run") in new_runs)
        first_runs.append(trawl.get("first_run"))
        if len(columns["urls"]) >= size:
            yield _batch(columns, first_runs if keep_first_run else None)
            columns = {name: [] for name in _COLUMNS}
            first_runs = []
    if columns["urls"]:
        yield _batch(columns, first_runs if keep_first_run else None)


def _batch(columns: dict[str, list[Any]], first_runs: list[str | None] | None) -> UrlBatch:
    batch = UrlBatch.from_columns("store", **columns)
    if first_runs is not None:
        batch.frame = batch.frame.with_columns(pl.Series("run_id", first_runs, dtype=pl.String))
    return batch


def first_seen_frames(hits: Iterable[Mapping[str, Any]], size: int) -> Iterator[pl.DataFrame]:
    """Hits as frames of :data:`trawl.records.runs.FIRST_SEEN_SCHEMA`, ``size`` rows each."""
    for batch in url_batches(hits, size, set(), keep_first_run=True):
        yield batch.frame.select(list(FIRST_SEEN_SCHEMA))


_COLUMNS = ("urls", "hosts", "sources", "first_seen", "last_seen", "captures", "statuses", "mimes", "new")


def read_runs(uri: str, run_ids: list[str], settings: Any, size: int = BATCH_URLS) -> Iterator[UrlBatch]:
    """The URLs the given runs wrote or updated, as stored now, in URL order (``new``: a run added it)."""
    if not run_ids:
        return
    client = connect(uri, settings)
    try:
        query = {"terms": {"trawl.run_ids": list(run_ids)}}
        hits = scan(client, names_from(settings).urls_pattern, query, size=size, fields=READ_FIELDS)
        yield from url_batches(hits, size, set(run_ids))
    finally:
        client.close()


def read_domain(uri: str, domain: str, settings: Any, size: int = BATCH_URLS) -> Iterator[UrlBatch]:
    """Every URL of ``domain`` and its subdomains, in URL order.

    The query is ``scrapy search domain:<domain>``'s (:mod:`trawl.search`): the
    host itself or any host ending in ``.<domain>``, so a store export and a
    search agree on what "the domain" holds.
    """
    client = connect(uri, settings)
    try:
        query = to_es(leaf(field_named("domain"), domain.strip().lower().rstrip("."), ()))
        hits = scan(client, names_from(settings).urls_pattern, query, size=size, fields=READ_FIELDS)
        yield from url_batches(hits, size, set())
    finally:
        client.close()


def _domain_query(field: str, domain: str) -> dict[str, Any]:
    """``field`` is the domain or ends in ``.<domain>`` (a keyword field)."""
    domain = domain.strip().lower().rstrip(".")
    return {
        "bool": {
            "should": [{"term": {field: domain}}, {"wildcard": {field: {"value": "*." + domain}}}],
            "minimum_should_match": 1,
        }
    }


_RUN_FIELDS = ["run_id", "job", "source", "domain", "started_at", "finished_at", "finish_reason"]


def list_runs(uri: str, domain: str, settings: Any) -> pl.DataFrame:
    """The runs of ``domain``, its parents and its subdomains, from ``<prefix>-runs`` (epoch seconds)."""
    from elasticsearch import NotFoundError

    client = connect(uri, settings)
    columns: dict[str, list[Any]] = {name: [] for name in _RUN_FIELDS}
    try:
        query = _domain_query("domain", domain)
        query["bool"]["should"][0] = {"terms": {"domain": covering_domains(domain)}}
        hits = scan(client, names_from(settings).runs, query, sort_field="run_id")
        for hit in hits:
            run = hit["_source"]
            for name in _RUN_FIELDS:
                value = run.get(name)
                if name in ("started_at", "finished_at") and value is not None:
                    value = float(value) / 1000
                columns[name].append(value)
    except NotFoundError:  # nothing was ever stored under this prefix
        pass
    finally:
        client.close()
    return pl.DataFrame(columns, schema=RUNS_SCHEMA)


def read_first_seen(
    uri: str, run_ids: list[str], domain: str, settings: Any, limit: int | None = None, size: int = BATCH_URLS
) -> Iterator[pl.DataFrame]:
    """URLs of ``domain`` whose ``trawl.first_run`` is one of ``run_ids``, in URL order."""
    if not run_ids or limit == 0:
        return
    client = connect(uri, settings)
    try:
        query = {
            "bool": {
                "filter": [{"terms": {"trawl.first_run": list(run_ids)}}, _domain_query("url.domain", domain)]
            }
        }
        hits = scan(
            client, names_from(settings).urls_pattern, query, size=min(size, limit or size), limit=limit,
            fields=READ_FIELDS,
        )  # fmt: skip
        yield from first_seen_frames(hits, size)
    finally:
        client.close()
