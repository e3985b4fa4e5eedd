"""Client-side waymore filters: URL substrings, keywords, status, mime, dates.

Spiders that can send status and mime filters to the server still have them
checked here, because not every server applies them (pywb falls back to fuzzy,
unfiltered matches; some sources cannot filter at all).
"""

from __future__ import annotations

from trawl.context import RunContext
from trawl.filters import FilterConfig
from trawl.items import CaptureBatch
from trawl.pluginmanager import hookimpl


@hookimpl
def trawl_filter_batch(batch: CaptureBatch, context: RunContext) -> list[bool] | None:
    config: FilterConfig | None = getattr(context.spider, "filters", None)
    if config is None:
        return None
    size = len(batch.urls)
    keep = [True] * size
    dropped: dict[str, int] = {}

    def drop(column: list[str] | None, allowed, reason: str) -> None:  # type: ignore[no-untyped-def]
        if column is None:
            return
        verdicts: dict[str, bool] = {}
        count = 0
        for i, value in enumerate(column):
            if not keep[i]:
                continue
            ok = verdicts.get(value)
            if ok is None:
                ok = verdicts[value] = allowed(value)
            if not ok:
                keep[i] = False
                count += 1
        if count:
            dropped[reason] = count

    if config.enabled:
        drop(batch.statuses, config.code_allowed, "status")
        drop(batch.mimes, config.mime_allowed, "mime")
        if config.checks_urls:
            urls = [u or "" for u in batch.urls]
            drop(urls, config.url_allowed, "url" if not config.keywords_only else "url_or_keyword")
    if config.from_date or config.to_date:
        drop(batch.timestamps, config.date_allowed, "date")
    for reason, count in dropped.items():
        context.stats.inc_value(f"trawl/filtered/{reason}", count)
    return keep if dropped else None
