"""Drops records outside the crawl's domain, and URLs that are not web URLs.

``notexample.com`` is not ``example.com``; neither is ``example.com.evil.net``.
Sources report such neighbours (URLScan results that merely contacted the
domain, substring matches, VirusTotal siblings), so scope is checked on every
record, whatever the source.
"""

from __future__ import annotations

from trawl.canonical import host_of
from trawl.context import RunContext
from trawl.items import CaptureBatch
from trawl.pluginmanager import hookimpl


@hookimpl
def trawl_filter_batch(batch: CaptureBatch, context: RunContext) -> list[bool] | None:
    target = context.target
    hosts = batch.hosts
    if hosts is None:  # a normalizer that does not fill hosts replaced ours
        hosts = [host_of(u) if u else "" for u in batch.urls]
    verdicts: dict[str, bool] = {"": False}
    if target is None:
        keep = [bool(u) for u in batch.urls]
    else:
        in_scope = target.in_scope
        for host in set(hosts):
            if host:
                verdicts[host] = in_scope(host)
        keep = [verdicts[h] for h in hosts]
    dropped = keep.count(False)
    if not dropped:
        return None
    invalid = sum(1 for u in batch.urls if u is None)
    if invalid:
        context.stats.inc_value("trawl/filtered/invalid_url", invalid)
    if dropped - invalid:
        context.stats.inc_value("trawl/filtered/out_of_scope", dropped - invalid)
    return keep
