"""A third-party trawl plugin, packaged on its own: it knows trawl only by its hooks.

Drops every URL that contains the ``DROP_KEYWORD`` setting (default
``private``) and counts them under ``trawl/filtered/drop_keyword``.
"""

from __future__ import annotations

import pluggy

hookimpl = pluggy.HookimplMarker("trawl")


@hookimpl
def trawl_filter_batch(batch, context):
    keyword = context.settings.get("DROP_KEYWORD", "private")
    keep = [keyword not in (url or "") for url in batch.urls]
    dropped = keep.count(False)
    if not dropped:
        return None
    context.stats.inc_value("trawl/filtered/drop_keyword", dropped)
    return keep
