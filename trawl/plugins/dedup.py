"""Collapses captures into one record per canonical URL, with provenance.

Within a batch this is a dict keyed by URL. Across the batches of a run a set
of URLs already passed on marks repeats: the store still merges their
provenance (a URL split over two CDX pages has captures on both), but exports
write each URL once. Across runs and sources the store's merge dedups.
"""

from __future__ import annotations

from trawl.canonical import host_of
from trawl.context import RunContext
from trawl.items import CaptureBatch, UrlBatch, UrlRecord
from trawl.pluginmanager import hookimpl

_SEEN = "dedup.seen"


@hookimpl
def trawl_open(context: RunContext) -> None:
    context.state[_SEEN] = set()


@hookimpl(trylast=True)
def trawl_dedup_batch(batch: CaptureBatch, context: RunContext) -> UrlBatch:
    source = batch.source
    records: dict[str, UrlRecord] = {}
    timestamps = batch.timestamps
    statuses = batch.statuses
    mimes = batch.mimes
    for i, url in enumerate(batch.urls):
        record = records.get(url)
        if record is None:
            record = records[url] = UrlRecord(url=url, host=host_of(url), sources={source})
        record.captures += 1
        if timestamps is not None:
            ts = timestamps[i]
            if ts:
                if record.first_seen is None or ts < record.first_seen:
                    record.first_seen = ts
                if record.last_seen is None or ts > record.last_seen:
                    record.last_seen = ts
        if statuses is not None and statuses[i]:
            record.statuses.add(statuses[i])
        if mimes is not None and mimes[i]:
            record.mimes.add(mimes[i])
    seen: set[str] = context.state.setdefault(_SEEN, set())
    keys = records.keys()
    repeats = seen.intersection(keys) if seen else set()
    seen.update(keys)
    duplicates = len(batch.urls) - len(records) + len(repeats)
    if duplicates:
        context.stats.inc_value("trawl/duplicates", duplicates)
    return UrlBatch(source=source, records=list(records.values()), page=batch.page, repeats=repeats)


@hookimpl
def trawl_close(context: RunContext, reason: str) -> None:
    context.state.pop(_SEEN, None)
