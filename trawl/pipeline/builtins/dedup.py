"""Collapses captures into one record per canonical URL, with provenance.

Within a batch this is one polars ``group_by`` (first host, first and last
capture, count, sorted status and mime sets): 0.22 s for 320,000 captures
where a Counter plus one Python step per distinct URL took ~3.3 s of a 41 s
profile (issue 8). Across batches and runs the store merges: it knows which
URLs this run wrote before (``repeat``) from its own index, so no in-run set
of strings grows with the crawl (10,000,000 captures / 5,000,000 URLs must fit
in 1 GB).
"""

from __future__ import annotations

import polars as pl

from trawl import hookimpl
from trawl.pipeline.context import RunContext
from trawl.records.batches import Batch, UrlBatch


def _clean_sets(*columns: str) -> pl.Expr:
    """Drop empty values and sort, over the whole list column at once: filtering
    and sorting inside the aggregation, group by group, took 2.3 s per million
    captures against 1.4 s this way."""
    value = pl.element()
    return pl.col(*columns).list.eval(value.filter(value.is_not_null() & (value != "")).sort())


@hookimpl(trylast=True)
def trawl_dedup_batch(batch: Batch, context: RunContext) -> UrlBatch | None:
    if batch.kind != "capture":
        return None
    frame = batch.frame
    stamp = pl.col("timestamp")
    dated = stamp.filter(stamp.is_not_null() & (stamp != ""))
    urls = (
        frame.group_by("url", maintain_order=True)
        .agg(
            pl.col("host").first(),
            dated.min().alias("first_seen"),
            dated.max().alias("last_seen"),
            pl.len().cast(pl.Int64).alias("captures"),
            pl.col("status").unique().alias("statuses"),
            pl.col("mime").unique().alias("mimes"),
        )
        .with_columns(_clean_sets("statuses", "mimes"))
        .select(
            "url",
            "host",
            pl.concat_list(pl.lit(batch.source)).alias("sources"),
            "first_seen",
            "last_seen",
            "captures",
            "statuses",
            "mimes",
            pl.lit(False).alias("new"),
            pl.lit(False).alias("repeat"),
        )
    )
    duplicates = frame.height - urls.height
    if duplicates:
        context.stats.inc_value("trawl/duplicates", duplicates)
    return UrlBatch.for_pages_of(batch, urls)
