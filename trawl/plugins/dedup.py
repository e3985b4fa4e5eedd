"""Collapses captures into one record per canonical URL, with provenance.

Within a batch this is a few C-level passes (``Counter``, a dict of first
rows) plus one Python step per distinct URL. Across the batches of a run a set
of URLs already passed on marks repeats: the store still merges their
provenance (a URL split over two CDX pages has captures on both), but exports
write each URL once. Across runs and sources the store's merge dedups.
"""

from __future__ import annotations

from collections import Counter

from trawl.canonical import host_of
from trawl.context import RunContext
from trawl.items import CaptureBatch, UrlBatch
from trawl.pluginmanager import hookimpl

_SEEN = "dedup.seen"


@hookimpl
def trawl_open(context: RunContext) -> None:
    context.state[_SEEN] = set()


def _joined(values: set[str]) -> str:
    values.discard("")
    return ",".join(sorted(values))


@hookimpl(trylast=True)
def trawl_dedup_batch(batch: CaptureBatch, context: RunContext) -> UrlBatch:
    urls = batch.urls
    size = len(urls)
    hosts = batch.hosts if batch.hosts is not None else [host_of(u) for u in urls]
    blank = [""] * size
    timestamps = batch.timestamps or blank
    statuses = batch.statuses or blank
    mimes = batch.mimes or blank
    counts = Counter(urls)
    # url -> its first row; built in C from the rows in reverse order.
    first = dict(zip(reversed(urls), range(size - 1, -1, -1), strict=True))
    groups: dict[str, list[int]] = {}
    if len(counts) < size:
        groups = {url: [] for url, n in counts.items() if n > 1}
        get = groups.get
        for i, url in enumerate(urls):
            rows = get(url)
            if rows is not None:
                rows.append(i)
    out_urls: list[str] = list(first)
    out_hosts: list[str] = []
    first_seen: list[str | None] = []
    last_seen: list[str | None] = []
    captures: list[int] = []
    out_statuses: list[str] = []
    out_mimes: list[str] = []
    for url in out_urls:
        i = first[url]
        out_hosts.append(hosts[i])
        rows = groups.get(url)
        if rows is None:
            ts = timestamps[i] or None
            first_seen.append(ts)
            last_seen.append(ts)
            captures.append(1)
            out_statuses.append(statuses[i])
            out_mimes.append(mimes[i])
            continue
        seen_ts = [t for t in (timestamps[r] for r in rows) if t]
        first_seen.append(min(seen_ts) if seen_ts else None)
        last_seen.append(max(seen_ts) if seen_ts else None)
        captures.append(len(rows))
        out_statuses.append(_joined({statuses[r] for r in rows}))
        out_mimes.append(_joined({mimes[r] for r in rows}))
    seen: set[str] = context.state.setdefault(_SEEN, set())
    repeats = seen.intersection(out_urls) if seen else set()
    seen.update(out_urls)
    duplicates = size - len(out_urls) + len(repeats)
    if duplicates:
        context.stats.inc_value("trawl/duplicates", duplicates)
    return UrlBatch(
        source=batch.source,
        urls=out_urls,
        hosts=out_hosts,
        first_seen=first_seen,
        last_seen=last_seen,
        captures=captures,
        statuses=out_statuses,
        mimes=out_mimes,
        page=batch.page,
        page_rows=batch.page_rows,
        repeats=repeats,
    )


@hookimpl
def trawl_close(context: RunContext, reason: str) -> None:
    context.state.pop(_SEEN, None)
