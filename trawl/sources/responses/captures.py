"""Which captures of one URL to download: the CDX query, then the choice.

One CDX query per URL (``matchType=exact``), asking for the fields trawl
reads from every CDX page (:mod:`trawl.sources.cdx.parse`), with the waymore
filters sent as the wayback source sends them (:func:`~trawl.sources.cdx.parse.filter_params`)
and checked again here (a server that ignores a filter cannot sneak a capture in).
Only ``200`` captures are taken unless ``-a match_code=`` says otherwise: a
redirect or an error page is not a response worth mining.

The choice (``-a captures=``):

* ``latest`` (default): the newest capture;
* ``all``: every distinct content, with the first and the last capture of each run
  of identical captures (A A A B A keeps A1 A3 B A5): a digest is still
  downloaded once, and the index knows when each content appeared, how long it
  stayed and when it came back, which mining's first/last seen and
  ``trawl endpoints --history`` read; the captures in between add nothing;
* ``yearly``: the newest capture of each year.
"""

from __future__ import annotations

import polars as pl

from trawl.pipeline.filters import FilterConfig
from trawl.sources.cdx.parse import Dialect, filter_params, fl_fields, fl_param, parse_page

MODES = ("latest", "all", "yearly")
#: The fields asked for, in order (``url timestamp status mime digest length``).
FIELDS = fl_fields(Dialect.IA)


def cdx_params(url: str, filters: FilterConfig) -> list[tuple[str, str]]:
    """The query string of one URL's CDX lookup."""
    params = [("url", url), ("matchType", "exact"), ("fl", fl_param(Dialect.IA))]
    if not (filters.enabled and filters.match_code):
        params.append(("filter", "statuscode:200"))
    params += filter_params(filters, Dialect.IA)
    if filters.from_date:
        params.append(("from", filters.from_date))
    if filters.to_date:
        params.append(("to", filters.to_date))
    return params


def read_captures(body: bytes) -> pl.DataFrame:
    """A CDX answer as ``url, timestamp, status, mime, digest, length`` text columns."""
    frame = parse_page(body, FIELDS).frame
    columns = ("url", "timestamp", "status", "mime", "digest", "length")
    if frame.height == 0:
        return pl.DataFrame(schema={c: pl.String for c in columns})
    return frame.select(
        pl.col(c) if c in frame.columns else pl.lit(None, dtype=pl.String).alias(c) for c in columns
    )


def choose(frame: pl.DataFrame, mode: str, filters: FilterConfig) -> pl.DataFrame:
    """The captures to index, oldest first, after the filters."""
    if frame.height == 0:
        return frame
    frame = frame.filter(pl.col("timestamp").str.contains(r"^\d{14}$") & pl.col("url").is_not_null())
    keep = [
        filters.code_allowed(s or "")
        and filters.mime_allowed(m or "")
        and filters.date_allowed(t)
        and (bool(filters.enabled and filters.match_code) or s == "200")
        for s, m, t in frame.select("status", "mime", "timestamp").iter_rows()
    ]
    frame = frame.filter(pl.Series(keep, dtype=pl.Boolean)).sort("timestamp")
    if frame.height == 0:
        return frame
    if mode == "latest":
        return frame.tail(1)
    if mode == "all":
        digest = pl.col("digest").fill_null("")
        starts = digest != digest.shift(1).fill_null("\0")
        ends = digest != digest.shift(-1).fill_null("\0")
        return frame.filter(starts | ends)
    year = pl.col("timestamp").str.slice(0, 4)
    return (
        frame.with_columns(year.alias("_year"))
        .unique("_year", keep="last", maintain_order=True)
        .drop("_year")
    )
