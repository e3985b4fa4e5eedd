"""Rewrites every URL of a batch to its canonical form (see trawl.canonical)."""

from __future__ import annotations

from trawl.canonical import canonicalize
from trawl.context import RunContext
from trawl.items import CaptureBatch
from trawl.pluginmanager import hookimpl


@hookimpl(tryfirst=True)
def trawl_normalize_batch(batch: CaptureBatch, context: RunContext) -> None:
    # Archives repeat a URL once per capture: canonicalize each distinct string once.
    cache: dict[str, str | None] = {}
    get = cache.get
    out = []
    append = out.append
    for url in batch.urls:
        canonical = get(url, cache)
        if canonical is cache:
            canonical = cache[url] = canonicalize(url)
        append(canonical)
    batch.urls = out
