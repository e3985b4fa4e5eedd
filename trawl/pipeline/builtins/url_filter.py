"""Client-side waymore filters: URL substrings, keywords, status, mime, dates.

Spiders that can send status and mime filters to the server still have them
checked here, because not every server applies them (pywb falls back to fuzzy,
unfiltered matches; some sources cannot filter at all). Status and mime are
judged once per distinct value, URLs with one case-insensitive Aho-Corasick
pass (polars ``contains_any``), dates as string comparisons on the column.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from trawl import hookimpl
from trawl.common import statkeys
from trawl.pipeline.filters import FILTER_SETTINGS

if TYPE_CHECKING:  # polars, imported by the masks: registering costs a read command nothing
    import polars as pl

    from trawl.pipeline.context import RunContext
    from trawl.pipeline.filters import FilterConfig
    from trawl.records.batches import Batch

#: The waymore filter settings this plugin applies (declared with the filters: trawl.pipeline.filters).
settings_declared = FILTER_SETTINGS


def _by_value(column: pl.Series, allowed: Callable[[str], bool]) -> pl.Series | None:
    """Which rows' value is allowed (null: allowed), judged once a distinct value;
    ``None`` when all are, as they nearly always are after the server's own filter."""
    refused = [value for value in column.drop_nulls().unique().to_list() if not allowed(value)]
    if not refused:
        return None
    return ~column.is_in(refused).fill_null(False)


def _url_mask(urls: pl.Series, config: FilterConfig) -> pl.Series:
    import polars as pl

    text = urls.fill_null("")
    keep = pl.repeat(True, len(text), eager=True)
    if config.filter_url:
        keep &= ~text.str.contains_any(list(config.filter_url), ascii_case_insensitive=True)
    if config.keywords_only and config.filter_keywords:
        keep &= text.str.contains_any(list(config.filter_keywords), ascii_case_insensitive=True)
    return keep


def _date_mask(stamps: pl.Series, config: FilterConfig) -> pl.Series:
    """Inclusive at both ends: ``to_date=2020`` keeps all of 2020 (as CDX does)."""
    import polars as pl

    text = stamps.fill_null("")
    keep = pl.repeat(True, len(text), eager=True)
    if config.from_date:
        keep &= text.str.slice(0, len(config.from_date)) >= config.from_date
    if config.to_date:
        keep &= text.str.slice(0, len(config.to_date)) <= config.to_date
    return keep


@hookimpl
def trawl_filter_batch(batch: Batch, context: RunContext) -> pl.Series | None:
    config: FilterConfig | None = context.filters
    if config is None or batch.kind != "capture" or not len(batch):
        return None
    frame = batch.frame
    checks: list[tuple[str, Callable[[], pl.Series | None]]] = []
    if config.enabled:
        checks.append(("status", lambda: _by_value(frame.get_column("status"), config.code_allowed)))
        checks.append(("mime", lambda: _by_value(frame.get_column("mime"), config.mime_allowed)))
        if config.checks_urls:
            reason = "url" if not config.keywords_only else "url_or_keyword"
            checks.append((reason, lambda: _url_mask(frame.get_column("url"), config)))
    if (config.from_date or config.to_date) and frame.get_column("timestamp").null_count() < frame.height:
        checks.append(("date", lambda: _date_mask(frame.get_column("timestamp"), config)))
    # Each polars call on the reactor's thread waits for the GIL again: no mask is made
    # until a check drops a row.
    keep: pl.Series | None = None
    for reason, mask in checks:
        verdict = mask()
        if verdict is None:
            continue
        dropped = int((~verdict if keep is None else keep & ~verdict).sum())
        if dropped:
            context.stats.inc_value(statkeys.filtered(reason), dropped)
            keep = verdict if keep is None else keep & verdict
    return keep
