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
    keep: list[bool] = []
    invalid = 0
    out_of_scope = 0
    in_scope_cache: dict[str, bool] = {}
    for url in batch.urls:
        if url is None:
            invalid += 1
            keep.append(False)
            continue
        if target is None:
            keep.append(True)
            continue
        host = host_of(url)
        ok = in_scope_cache.get(host)
        if ok is None:
            ok = in_scope_cache[host] = target.in_scope(host)
        if not ok:
            out_of_scope += 1
        keep.append(ok)
    if invalid:
        context.stats.inc_value("trawl/filtered/invalid_url", invalid)
    if out_of_scope:
        context.stats.inc_value("trawl/filtered/out_of_scope", out_of_scope)
    return keep if invalid or out_of_scope else None
