"""What the live crawl stores: the URLs (the ``url`` kind, source ``live``) and their provenance.

Each page's answer becomes one :class:`~trawl.records.batches.CaptureBatch`
(the page itself with its status and type, and every in-scope URL it names,
without a status), which goes through the same pipeline as every URL source's
(canonical form, scope, filters, dedup, the store). Beside it, one
:class:`LinkBatch` of the same URLs: the ``link`` record kind, keyed by the URL,
that says where the crawl found each one (``found_on``: the page that named it,
empty for a seed), at which ``depth`` (seeds 0), how (``a``, ``form``, ``js``,
``sitemap``, ``redirect``...: :mod:`.links`), and, once fetched, its ``status``,
``content_type`` and ``verdict`` (``page``, ``soft-404``, ``redirect``,
``headers-only``, ``error``). The first finding is kept (``found_on``, ``how``:
``first``; ``depth``: ``min``); a visit fills in the rest.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import polars as pl

from trawl.records.batches import Batch, CaptureBatch

LINK_SCHEMA: dict[str, Any] = {
    "url": pl.String,
    "host": pl.String,
    "found_on": pl.String,
    "depth": pl.Int64,
    "how": pl.String,
    "found_at": pl.String,  # ISO 8601 UTC
    "status": pl.Int64,  # null until fetched
    "content_type": pl.String,
    "verdict": pl.String,
    "new": pl.Boolean,
    "repeat": pl.Boolean,
}


class LinkBatch(Batch):
    """Where the live crawl found URLs, and what their pages answered."""

    __slots__ = ()
    kind = "link"
    SCHEMA = LINK_SCHEMA
    KEY = ("url",)
    MERGE = {"found_on": "first", "how": "first", "depth": "min", "found_at": "min"}

    @classmethod
    def from_rows(cls, source: str, rows: list[dict[str, Any]]) -> LinkBatch:
        frame = pl.DataFrame(
            [{name: row.get(name) for name in LINK_SCHEMA} for row in rows], schema=LINK_SCHEMA, orient="row"
        ).with_columns(pl.lit(True).alias("new"), pl.lit(False).alias("repeat"))
        return cls(source, frame)


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def captures(source: str, rows: list[dict[str, Any]]) -> CaptureBatch:
    """The URL rows of one page: each as a capture of now (a status only for the page fetched)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d%H%M%S")
    return CaptureBatch.from_columns(
        source,
        [row["url"] for row in rows],
        timestamps=[stamp] * len(rows),
        statuses=[str(row["status"]) if row.get("status") is not None else None for row in rows],
        mimes=[row.get("content_type") for row in rows],
    )
