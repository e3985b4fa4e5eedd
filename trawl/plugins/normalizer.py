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
    # Archives repeat a URL once per capture: canonicalize each distinct string once.
    cache: dict[str, tuple[str | None, str]] = {}
    get = cache.get
    pairs = []
    append = pairs.append
    for url in batch.urls:
        pair = get(url)
        if pair is None:
            pair = cache[url] = canonicalize_with_host(url) or _INVALID
        append(pair)
    if pairs:
        urls, hosts = zip(*pairs, strict=True)
        batch.urls, batch.hosts = list(urls), list(hosts)
    else:
        batch.hosts = []
