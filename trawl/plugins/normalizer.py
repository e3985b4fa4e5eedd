"""Rewrites every URL of a batch to its canonical form (see trawl.canonical).

It also fills ``batch.hosts``: the host falls out of the parse, and the scope
filter and dedup need it for every row.
"""

from __future__ import annotations

from trawl.canonical import canonicalize_many
from trawl.context import RunContext
from trawl.items import CaptureBatch
from trawl.pluginmanager import hookimpl


@hookimpl(tryfirst=True)
def trawl_normalize_batch(batch: CaptureBatch, context: RunContext) -> None:
    # canonicalize_many parses each distinct string once (archives repeat a URL
    # once per capture). Invalid rows keep url None; their host is "" because
    # scope and dedup take hosts as strings.
    urls, hosts = canonicalize_many(batch.urls)
    batch.urls = urls
    batch.hosts = [host or "" for host in hosts]
