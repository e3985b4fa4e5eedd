"""Rewrites every URL of a batch to its canonical form (see trawl.canonical).

It also fills ``batch.hosts``: the host falls out of the parse, and the scope
filter and dedup need it for every row.
"""

from __future__ import annotations

from trawl.canonical import canonicalize_with_host
from trawl.context import RunContext
from trawl.items import CaptureBatch
from trawl.pluginmanager import hookimpl

_INVALID = (None, "")


@hookimpl(tryfirst=True)
def trawl_normalize_batch(batch: CaptureBatch, context: RunContext) -> None:
    urls = batch.urls
    if not urls:
        batch.hosts = []
        return
    # Archives repeat a URL once per capture: canonicalize each distinct string
    # once, then map every row through the table (C-level loops, no per-row frames).
    table = {url: canonicalize_with_host(url) or _INVALID for url in set(urls)}
    canonical, hosts = zip(*map(table.__getitem__, urls), strict=True)
    batch.urls, batch.hosts = list(canonical), list(hosts)
