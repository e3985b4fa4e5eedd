"""``-a domain=``: the crates' own URLs on a domain, into the URL store as source ``crates``.

The bridge from the registry to trawl's URL mission: a
crate's ``homepage``, ``repository`` and ``documentation`` are URLs its
authors published, and those on the domain a user follows (and its
subdomains, unless ``-a subs=false``, as for every URL source) are URLs of that
domain that no web archive may know.

Why captures and not URL records made here: a :class:`~trawl.records.batches.CaptureBatch`
travels the URL sources' own hooks (canonical form, scope, the waymore
filters, dedup into a :class:`~trawl.records.batches.UrlBatch`, the store's
provenance merge), so a crate's URL is stored exactly as the same URL from an
archive would be: source ``crates``, the run, and as its "capture" time the
crate's ``updated_at`` (when the registry last said the crate points there).
The pre-filter here (by host, on whole columns) only keeps the scope plugin
from counting 200,000 crates' other URLs as out of scope; the plugin checks
again.

It reads the crate rows whatever the mode yields them from (the dump's
``crates`` table, the API's crate details), so each mode bridges as it goes.
"""

from __future__ import annotations

import polars as pl

from trawl.records.batches import Batch, CaptureBatch
from trawl.records.canonical import canonicalize_series
from trawl.sources.crates.records import CrateBatch
from trawl.sources.target import Target

#: The crate columns that hold URLs its authors published.
URL_COLUMNS = ("homepage", "repository", "documentation")


class UrlBridge:
    """Capture batches of the crates' URLs on one domain (see the module docstring)."""

    def __init__(self, source: str, target: Target) -> None:
        self.source = source
        self.target = target

    def captures(self, batch: Batch) -> CaptureBatch | None:
        """The URLs on the domain among a crate batch's rows (None: not a crate batch, or none)."""
        if not isinstance(batch, CrateBatch):
            return None
        frame = batch.frame
        present = [c for c in URL_COLUMNS if c in frame.columns]
        if not present or not frame.height:
            return None
        stamp = pl.col("updated_at") if "updated_at" in frame.columns else pl.lit(None, pl.String)
        urls = (
            frame.select(stamp.alias("updated_at"), *present)
            .unpivot(index="updated_at", on=present, value_name="url")
            .filter(pl.col("url").str.strip_chars().str.len_chars() > 0)
        )
        if not urls.height:
            return None
        urls = urls.with_columns(pl.col("url").str.strip_chars())
        hosts = canonicalize_series(urls.get_column("url")).get_column("host")
        uniques = hosts.drop_nulls().unique()
        verdicts = [self.target.in_scope(h) for h in uniques.to_list()]
        keep = hosts.replace_strict(uniques, verdicts, default=False, return_dtype=pl.Boolean)
        urls = urls.filter(keep.fill_null(False))
        if not urls.height:
            return None
        timestamps = urls.get_column("updated_at").str.replace_all(r"[^0-9]", "").str.slice(0, 14).to_list()
        return CaptureBatch.from_columns(
            self.source,
            urls.get_column("url").to_list(),
            timestamps=[t if t and len(t) == 14 else None for t in timestamps],
            page=f"{batch.page}/urls" if batch.page else "",
            page_rows=urls.height,
        )
