"""A record kind of its own: declared once on its batch type, stored by any store.

A kind beyond captures and URLs (DNS records in the tests, crates.io crates,
versions and downloads next) is a :class:`~trawl.records.batches.Batch`
subclass with four class attributes::

    class DnsBatch(Batch):
        kind = "dns"
        SCHEMA = {"name": pl.String, "type": pl.String, "value": pl.String,
                  "first_seen": pl.String, "last_seen": pl.String, "count": pl.Int64}
        KEY = ("name", "type", "value")
        MERGE = {"first_seen": "min", "last_seen": "max", "count": "max"}

Why the kind declares its key and merge, and the store derives its table and
its merge from that declaration (rather than a plugin handing each store its
SQL, or a store subclass per kind): one declaration serves every store (SQLite
now, PostgreSQL or Elasticsearch later) and every kind (the crates.io ETL adds
three kinds and no store code), the SQL stays inside each store's package, and
a plugin author writes polars types and five words of merge rule, never a
``CREATE TABLE``. The cost is that a rule outside these five (the URL kind's
per-source capture counts) needs a store's own code: URLs keep theirs.

A kind loaded as whole snapshots (the crates.io db-dump, where a row missing
from today's dump is a row deleted upstream, and a crash mid-load must leave
yesterday's dump readable) is written through its :func:`staged` twin: the
same kind with ``STAGED = True``, whose rows a store keeps apart (SQLite: a
``<kind>_records_next`` table, emptied when a new run starts filling it), and
a last batch of a kind that declares ``SWITCHES`` makes them the live records
of every kind it lists, in one transaction. Readers see the old snapshot or
the new one, never a mix; a rerun after a crash loads the snapshot again.

The rules are those a store can run as one upsert: ``min``/``max`` (first and
last seen: idempotent, so a rerun changes nothing), ``first`` (keep what is
stored), ``last`` (the newest non-null value wins: the default) and ``sum``
(adds every write, a rerun's too: for per-run counts, not totals).

A kind may also name a ``NEWER`` column (ISO 8601 UTC text, ``updated_at``):
when the stored record's value is later than the incoming one, the stored
record keeps every column (an old db-dump loaded after an API top-up must not
take the registry back in time). A row without that value merges as usual.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from trawl.records.batches import Batch

MERGE_RULES = frozenset({"min", "max", "sum", "first", "last"})
#: Columns every kind's rows carry only for the pipeline's sake, never stored.
RUN_MARKS = ("new", "repeat")
_NAME = re.compile(r"[a-z][a-z0-9_]*")


_STAGED: dict[type[Batch], type[Batch]] = {}


def staged(batch_type: type[Batch]) -> type[Batch]:
    """The kind's twin whose batches a store stages until a ``SWITCHES`` batch (made once per kind)."""
    if batch_type.STAGED:
        return batch_type
    twin = _STAGED.get(batch_type)
    if twin is None:
        namespace = {"__slots__": (), "STAGED": True, "__module__": batch_type.__module__}
        twin = _STAGED[batch_type] = type(f"Staged{batch_type.__name__}", (batch_type,), namespace)
    return twin


def is_keyed(batch_type: type[Batch]) -> bool:
    """Does this kind declare a natural key (and so can be stored by any generic store)?"""
    return bool(batch_type.KEY)


def stored_columns(batch_type: type[Batch]) -> dict[str, Any]:
    """The declared columns a store keeps (its schema without ``new``/``repeat``)."""
    return {name: dtype for name, dtype in batch_type.SCHEMA.items() if name not in RUN_MARKS}


def merge_rules(batch_type: type[Batch]) -> dict[str, str]:
    """Every stored column that is not part of the key, with its rule (``last`` when not named)."""
    return {c: batch_type.MERGE.get(c, "last") for c in stored_columns(batch_type) if c not in batch_type.KEY}


def check_declaration(batch_type: type[Batch]) -> None:
    """Raise ``ValueError`` naming what is wrong in a kind's declaration."""
    name = batch_type.__name__
    if not _NAME.fullmatch(batch_type.kind or ""):
        raise ValueError(f"{name}.kind {batch_type.kind!r} is not a lower-case name")
    columns = stored_columns(batch_type)
    for column in columns:
        if not _NAME.fullmatch(column):
            raise ValueError(f"{name}: column {column!r} is not a lower-case name")
    missing = [c for c in batch_type.KEY if c not in columns]
    if missing:
        raise ValueError(f"{name}.KEY names {', '.join(missing)}, not in its SCHEMA")
    newer = batch_type.NEWER
    if newer and (newer not in columns or newer in batch_type.KEY):
        raise ValueError(f"{name}.NEWER names {newer!r}, not a non-key column of its SCHEMA")
    for switched in batch_type.SWITCHES:
        if not _NAME.fullmatch(switched):
            raise ValueError(f"{name}.SWITCHES names {switched!r}, not a lower-case kind name")
    for column, rule in batch_type.MERGE.items():
        if column not in columns or column in batch_type.KEY:
            raise ValueError(f"{name}.MERGE names {column!r}, not a non-key column of its SCHEMA")
        if rule not in MERGE_RULES:
            raise ValueError(
                f"{name}.MERGE[{column!r}] = {rule!r}: not one of {', '.join(sorted(MERGE_RULES))}"
            )


def collapse(batch_type: type[Batch], frame: pl.DataFrame) -> pl.DataFrame:
    """One row per key, the duplicates within a batch merged by the same rules as in a store.

    A store's upsert then meets each key once per batch, so its ``new`` count
    and the merged values a batch gets back are those of whole records.
    """
    key = list(batch_type.KEY)
    rules = merge_rules(batch_type)
    if frame.select(key).is_unique().all():
        return frame.select(*key, *rules)
    picks = {
        "min": lambda c: pl.col(c).min(),
        "max": lambda c: pl.col(c).max(),
        "sum": lambda c: pl.col(c).sum(),
        "first": lambda c: pl.col(c).drop_nulls().first(),
        "last": lambda c: pl.col(c).drop_nulls().last(),
    }
    return frame.group_by(key, maintain_order=True).agg(picks[rule](c).alias(c) for c, rule in rules.items())
