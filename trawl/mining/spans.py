"""First and last seen that stay true when a later capture shares a file already mined.

An ``endpoint`` record's ``first_seen``/``last_seen`` are the earliest and latest
captures of the file's digest. A file is mined once, with the captures known
then; a capture of the same digest indexed later (a later run, ``-a to_date=``
lifted, the same library under another URL in a later batch of the same run)
widens the span without new bytes to mine. The miner compares each stored
capture with the span the ``mined`` record keeps and, for the digests whose span
grew, reads their stored ``endpoint`` and ``secret`` records back and sends them
again with the wider span (the kinds merge ``first_seen`` by ``min`` and
``last_seen`` by ``max``, so sending them again is all it takes), plus the
``mined`` rows with the new span. Nothing is mined again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl

from trawl.mining.records import ENDPOINT_SCHEMA, MINED_SCHEMA, SECRET_SCHEMA, EndpointBatch, SecretBatch

if TYPE_CHECKING:
    from trawl.records.batches import Batch

Span = tuple[str, str]


def wider(known: Span | None, seen: Span) -> Span | None:
    """The span ``seen`` makes of ``known``, or None when it adds nothing."""
    if known is None or not known[0] or not known[1]:
        return seen
    span = (min(known[0], seen[0]), max(known[1], seen[1]))
    return None if span == known else span


def widened(records: pl.DataFrame, spans: dict[str, Span]) -> pl.DataFrame:
    """``records`` of the digests in ``spans``, their ``first_seen``/``last_seen`` those spans."""
    if not spans or records.height == 0:
        return records.clear()
    table = pl.DataFrame(
        {
            "digest": list(spans),
            "_first": [s[0] for s in spans.values()],
            "_last": [s[1] for s in spans.values()],
        },
        schema={"digest": pl.String, "_first": pl.String, "_last": pl.String},
    )
    joined = records.join(table, on="digest", how="inner")
    return joined.with_columns(
        pl.col("_first").alias("first_seen"), pl.col("_last").alias("last_seen")
    ).select(records.columns)


def read_widened(
    read_kind: Callable[[type[Batch], list[str]], pl.DataFrame], spans: dict[str, Span]
) -> tuple[pl.DataFrame, ...]:
    """On a thread: the stored endpoint and secret records of ``spans``' digests (``read_kind``:
    a kind's columns from the run's store), widened, and the ``mined`` rows that keep the new spans."""
    endpoints = read_kind(EndpointBatch, list(ENDPOINT_SCHEMA))
    secrets = read_kind(SecretBatch, list(SECRET_SCHEMA))
    given = {"digest": list(spans), "first_seen": [s[0] for s in spans.values()],
             "last_seen": [s[1] for s in spans.values()]}  # fmt: skip
    mined = pl.DataFrame({c: given.get(c, [None] * len(spans)) for c in MINED_SCHEMA}, schema=MINED_SCHEMA)
    return widened(endpoints, spans), widened(secrets, spans), mined
