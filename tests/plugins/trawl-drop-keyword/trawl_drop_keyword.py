"""A third-party trawl plugin, packaged on its own: it knows trawl only by its hooks.

Drops every URL that contains the ``DROP_KEYWORD`` setting (default
``private``) and counts them under ``trawl/filtered/drop_keyword``. A batch is
a polars ``DataFrame`` (``batch.frame``): the filter is one column operation,
whatever the page size.
"""

from __future__ import annotations

import pluggy

hookimpl = pluggy.HookimplMarker("trawl")


@hookimpl
def trawl_filter_batch(batch, context):
    if batch.kind != "capture":  # leave other record kinds alone
        return None
    keyword = context.settings.get("DROP_KEYWORD", "private")
    keep = ~batch.frame.get_column("url").fill_null("").str.contains(keyword, literal=True)
    dropped = int((~keep).sum())
    if not dropped:
        return None
    context.stats.inc_value("trawl/filtered/drop_keyword", dropped)
    return keep
