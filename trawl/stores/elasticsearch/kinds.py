"""Declared record kinds in Elasticsearch: an index per kind, its strict mapping made from the declaration.

A kind that declares its key (:mod:`trawl.records.kinds`: the crates.io
``crate``, ``version``, ``dependency``, ``version_download``...) is kept in
``<prefix>-records-<kind>``, made the first time the store meets the kind, as
the SQLite store makes ``<kind>_records``: one document per key (``_id``: the
key's values), the declared columns as top-level fields, and ``first_run``,
``last_run``, ``trawl_key`` (the ``_id`` again: the listing's sort). The mapping
is ``dynamic: strict`` and comes from the polars types: text -> ``keyword``,
integers -> ``long``, floats -> ``double``, booleans -> ``boolean``; a text
column named ``*_at`` or ``date`` holds ISO 8601 times or days
(:mod:`trawl.sources.crates.records`) and is a ``date``, what Kibana's
histograms and time filters need. A declaration that gains a column adds the
field (allowed on a strict mapping).

A batch is merged the way the SQLite store merges it, by the kind's rules
(``last``, ``first``, ``min``, ``max``, ``sum``; ``NEWER``): one ``_mget`` of the
batch's keys, the merge as whole polars columns, one ``_bulk`` that creates the
new documents and overwrites the known ones with ``if_seq_no``. A document
another writer changed meanwhile (409) is read and merged again, a few rounds at
most; what still conflicts fails the batch as a :class:`~trawl.errors.StoreError`.

Refusals are waited out as the URL writer waits them out (:mod:`.writer`): items
a busy cluster refuses with 429, and requests that fail as a whole (a 429, 502,
503 or 504, a timeout, a refused connection), are sent again after
``ELASTICSEARCH_BACKOFF`` doubled up to ``ELASTICSEARCH_BACKOFF_MAX``, at most
``ELASTICSEARCH_RETRIES`` times. A refused item is merged again from a fresh
``_mget``, so a retry never adds a ``sum`` twice. What still fails stops the run
with one line; the batch's pages stay out of the ledger, so a resumed run fetches
them again (nothing is kept in a dead-letter file: a kind's batch is re-made from
its page, unlike a URL batch whose merge needs the provenance it carried).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import orjson
import polars as pl

from trawl.errors import StoreError
from trawl.records.batches import Batch
from trawl.records.kinds import check_declaration, collapse, merge_rules, stored_columns

_KEYWORD = {"type": "keyword", "ignore_above": 1024}
_DATE = {"type": "date", "format": "strict_date_optional_time||yyyy-MM-dd||epoch_millis"}
BOOKKEEPING = {
    "first_run": {"type": "keyword"},
    "last_run": {"type": "keyword"},
    "trawl_key": {"type": "keyword"},
}
_ROUNDS = 5
#: Whole-request answers worth waiting out (the URL writer's, with 429: a bulk refused whole).
_RETRY_STATUSES = frozenset({429, 502, 503, 504})
_T = TypeVar("_T")
_BULK_FILTER = "items.*.status,items.*.error"
_SMALL = {"index": {"number_of_shards": 1, "auto_expand_replicas": "0-1"}}


def kind_index(prefix: str, batch_type: type[Batch]) -> str:
    return f"{prefix}-records-{batch_type.kind}"


def field_type(name: str, dtype: Any) -> dict[str, Any]:
    """The mapping of one declared column (see the module docstring)."""
    if dtype == pl.String:
        return _DATE if name.endswith("_at") or name == "date" else _KEYWORD
    if dtype == pl.Boolean:
        return {"type": "boolean"}
    if dtype.is_integer():
        return {"type": "long"}
    if dtype.is_float():
        return {"type": "double"}
    raise StoreError(f"a column of type {dtype} cannot be stored in Elasticsearch by declaration")


def mappings(batch_type: type[Batch]) -> dict[str, Any]:
    properties = {name: field_type(name, dtype) for name, dtype in stored_columns(batch_type).items()}
    return {
        "dynamic": "strict",
        "_meta": {"trawl_kind": batch_type.kind},
        "properties": {**properties, **BOOKKEEPING},
    }


def ensure_index(client: Any, index: str, batch_type: type[Batch]) -> None:
    """The kind's index with its strict mapping, or the fields an older declaration lacked."""
    from elasticsearch import BadRequestError

    try:
        check_declaration(batch_type)
    except ValueError as exc:
        raise StoreError(f"record kind {batch_type.kind!r} cannot be stored: {exc}") from None
    body = mappings(batch_type)
    if client.indices.exists(index=index):
        client.indices.put_mapping(index=index, properties=body["properties"])
        return
    try:
        client.indices.create(index=index, mappings=body, settings=_SMALL)
    except BadRequestError as exc:  # made meanwhile by another worker
        if "resource_already_exists" not in str(exc):
            raise


def doc_ids(frame: pl.DataFrame, key: Sequence[str]) -> pl.Series:
    """Each row's ``_id``: its key's values, ``|``-joined (JSON for text keys, which may hold ``|``)."""
    parts = [
        pl.col(k).cast(pl.String)
        if frame.schema[k] != pl.String
        else pl.col(k).map_elements(lambda v: orjson.dumps(v).decode(), return_dtype=pl.String)
        for k in key
    ]
    return frame.select(pl.concat_str(parts, separator="|").alias("_id")).get_column("_id")


def _merged(batch_type: type[Batch], incoming: pl.DataFrame, stored: pl.DataFrame) -> pl.DataFrame:
    """``incoming`` merged with the ``stored`` rows of the same ``_id`` by the kind's rules."""
    rules = merge_rules(batch_type)
    both = incoming.join(stored, on="_id", how="left", suffix="_old")
    expressions = []
    for column, rule in rules.items():
        new, old = pl.col(column), pl.col(f"{column}_old")
        merged = {
            "last": pl.coalesce(new, old),
            "first": pl.coalesce(old, new),
            "min": pl.min_horizontal(new, old),
            "max": pl.max_horizontal(new, old),
            "sum": new.fill_null(0) + old.fill_null(0),
        }[rule]
        if batch_type.NEWER:
            newer, older = (
                pl.col(batch_type.NEWER).str.strip_chars_end("Z"),
                pl.col(f"{batch_type.NEWER}_old"),
            )
            merged = pl.when(newer < older.str.strip_chars_end("Z")).then(old).otherwise(merged)
        expressions.append(merged.alias(column))
    return both.with_columns(expressions)


def _stored_frame(docs: list[dict[str, Any]], batch_type: type[Batch]) -> pl.DataFrame:
    """The found documents of an ``_mget``: their columns (``<name>_old`` after the join), version, runs."""
    columns = stored_columns(batch_type)
    found = [d for d in docs if d.get("found")]
    data: dict[str, list[Any]] = {name: [d["_source"].get(name) for d in found] for name in columns}
    schema = {
        **columns,
        "_id": pl.String,
        "first_run": pl.String,
        "last_run": pl.String,
        "_seq_no": pl.Int64,
        "_primary_term": pl.Int64,
    }
    data.update(
        _id=[d["_id"] for d in found],
        first_run=[d["_source"].get("first_run") for d in found],
        last_run=[d["_source"].get("last_run") for d in found],
        _seq_no=[d.get("_seq_no") for d in found],
        _primary_term=[d.get("_primary_term") for d in found],
    )
    frame = pl.DataFrame(data, schema=schema)
    return frame.drop([k for k in batch_type.KEY])


class Retrying:
    """The backoff of one batch's write: every wait (a refused item or request) counts against ``retries``."""

    def __init__(
        self, retries: int, wait: Callable[[int], float], sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.retries, self.wait, self.sleep = retries, wait, sleep
        self.attempts = 0
        #: Items refused with 429, and whole requests sent again, for the crawl's stats.
        self.rejected = 0
        self.retried = 0

    def pause(self, why: str) -> None:
        """Wait before the next try, or raise when the retries are spent."""
        self.attempts += 1
        if self.attempts > self.retries:
            raise StoreError(f"Elasticsearch still refused after {self.retries} retries: {why}")
        self.sleep(self.wait(self.attempts))

    def call(self, request: Callable[[], _T]) -> _T:
        """``request()``, sent again after the backoff while it fails in a way worth waiting out."""
        from elasticsearch import ApiError, ConnectionError, ConnectionTimeout

        while True:
            try:
                return request()
            except (ConnectionError, ConnectionTimeout) as exc:
                why = type(exc).__name__
            except ApiError as exc:
                if exc.meta.status not in _RETRY_STATUSES:
                    raise
                why = f"HTTP {exc.meta.status}"
            self.retried += 1
            self.pause(why)


def write_kind(
    client: Any, index: str, batch: Batch, run: str, retrying: Retrying | None = None
) -> tuple[pl.DataFrame, int]:
    """Merge a batch of a declared kind into its index; the merged rows with ``new``/``repeat``, and
    how many keys were new (see the module docstring)."""
    retrying = retrying or Retrying(0, lambda attempt: 0.0)
    client = client.options(max_retries=0)  # the transport re-sends a 503 at once, with no backoff
    batch_type = type(batch)
    columns = list(stored_columns(batch_type))
    rows = collapse(batch_type, batch.frame).select(columns)
    rows = rows.with_columns(doc_ids(rows, batch_type.KEY).alias("_id"))
    done: list[pl.DataFrame] = []
    pending = rows
    conflict_rounds = 0
    while pending.height:
        if conflict_rounds == _ROUNDS:
            break
        ids = pending.get_column("_id").to_list()
        docs = retrying.call(lambda ids=ids: client.mget(index=index, ids=ids).body["docs"])
        merged = _merged(batch_type, pending, _stored_frame(docs, batch_type))
        body = bytearray()
        for row in merged.iter_rows(named=True):
            known = row["_seq_no"] is not None
            action = {"_index": index, "_id": row["_id"]}
            if known:
                action.update(if_seq_no=row["_seq_no"], if_primary_term=row["_primary_term"])
            body += orjson.dumps({"index" if known else "create": action}) + b"\n"
            doc = {c: row[c] for c in columns if row[c] is not None}
            doc.update(first_run=row["first_run"] or run, last_run=run, trawl_key=row["_id"])
            body += orjson.dumps(doc) + b"\n"
        operations = bytes(body)
        answer = retrying.call(
            lambda ops=operations: client.bulk(operations=ops, filter_path=_BULK_FILTER).body
        )
        statuses = [next(iter(item.values())) for item in answer.get("items", [])]
        conflicts = {i for i, s in enumerate(statuses) if s.get("status") == 409}
        refused = {i for i, s in enumerate(statuses) if s.get("status") == 429}
        failed = [s for s in statuses if s.get("status", 500) >= 300 and s.get("status") not in (409, 429)]
        if failed:
            raise StoreError(
                f"Elasticsearch refused {len(failed)} {batch_type.kind} records: {failed[0].get('error')}"
            )
        again = conflicts | refused
        keep = pl.Series([i not in again for i in range(merged.height)])
        done.append(merged.filter(keep))
        pending = rows.filter(pl.col("_id").is_in(merged.filter(~keep).get_column("_id").to_list()))
        if refused:  # a busy cluster: wait, then merge what it refused again from a fresh read
            retrying.rejected += len(refused)
            retrying.pause(f"{len(refused)} {batch_type.kind} records refused with HTTP 429")
        else:
            conflict_rounds += 1
    if pending.height:
        raise StoreError(f"{pending.height} {batch_type.kind} records kept changing under other writers")
    whole = (
        pl.concat(done)
        if done
        else rows.with_columns(_seq_no=pl.lit(None, pl.Int64), last_run=pl.lit(None, pl.String))
    )
    whole = whole.with_columns(
        pl.col("_seq_no").is_null().alias("new"), (pl.col("last_run") == run).fill_null(False).alias("repeat")
    )
    return whole.select(*columns, "new", "repeat"), int(whole.get_column("new").sum())


def read_kind(
    client: Any, index: str, batch_type: type[Batch], columns: Sequence[str], size: int = 5000
) -> pl.DataFrame:
    """``columns`` of every document of the kind, in ``_id`` order, as one frame typed by its ``SCHEMA``."""
    schema = {name: batch_type.SCHEMA[name] for name in columns}
    data: dict[str, list[Any]] = {name: [] for name in columns}
    if not client.indices.exists(index=index):
        return pl.DataFrame(schema=schema)
    after: list[Any] | None = None
    while True:
        kwargs: dict[str, Any] = {
            "index": index,
            "size": size,
            "sort": [{"trawl_key": "asc"}],
            "source_includes": list(columns),
            "track_total_hits": False,
        }
        if after is not None:
            kwargs["search_after"] = after
        hits = client.search(**kwargs).body["hits"]["hits"]
        for hit in hits:
            for name in columns:
                data[name].append(hit["_source"].get(name))
        if len(hits) < size:
            return pl.DataFrame(data, schema=schema)
        after = hits[-1]["sort"]
