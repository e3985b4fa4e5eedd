"""Drops records outside the crawl's domain, and URLs that are not web URLs.

``notexample.com`` is not ``example.com``; neither is ``example.com.evil.net``.
Sources report such neighbours (URLScan results that merely contacted the
domain, substring matches, VirusTotal siblings), so scope is checked on every
record, whatever the source: once per distinct host, then mapped over the rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trawl import hookimpl
from trawl.common import statkeys

if TYPE_CHECKING:  # polars, imported by the hook: registering costs a read command nothing
    import polars as pl

    from trawl.pipeline.context import RunContext
    from trawl.records.batches import Batch


@hookimpl
def trawl_filter_batch(batch: Batch, context: RunContext) -> pl.Series | None:
    if batch.kind != "capture":
        return None
    frame = batch.frame
    hosts = frame.get_column("host")
    target = context.target
    if target is None:
        keep = hosts.is_not_null()
    else:
        uniques = hosts.drop_nulls().unique().to_list()
        allowed = [host for host in uniques if target.in_scope(host)]
        # An archive's batch is nearly always all in scope, over a few hosts: then no lookup at all.
        keep = hosts.is_not_null() if len(allowed) == len(uniques) else hosts.is_in(allowed).fill_null(False)
    dropped = len(keep) - keep.sum()
    if not dropped:
        return None
    invalid = frame.get_column("url").null_count()
    if invalid:
        context.stats.inc_value(statkeys.FILTERED_INVALID_URL, invalid)
    if dropped - invalid:
        context.stats.inc_value(statkeys.FILTERED_OUT_OF_SCOPE, int(dropped - invalid))
    return keep
