"""The ``probe`` record kind: what one stored URL answered when trawl asked it, now.

Keyed by the URL (one record per URL, the last probe wins: ``NEWER`` is
``probed_at``, so a stale result loaded after a fresh one does not take the
record back in time). Every store that keeps declared kinds keeps it
(:mod:`trawl.records.kinds`); its ``SEARCH_FIELDS`` (:mod:`.fields`) are what ``live:``,
``status_live:``, ``title:`` and ``verdict:`` search.

``verdict`` is the one word a user filters on: ``live`` (an answer that is not
the host's error page), ``soft-404`` (a 2xx/3xx answer that looks like the
host's answer to a path that cannot exist: :mod:`.soft404`), ``dead`` (4xx, 5xx,
or no answer at all; ``error`` says which). ``live`` is ``verdict == "live"``.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from trawl.records.batches import Batch
from trawl.sources.probe.fields import SEARCH_FIELDS

#: Columns, in the order exports write them.
PROBE_SCHEMA: dict[str, Any] = {
    "url": pl.String,
    "host": pl.String,
    "probed_at": pl.String,  # ISO 8601 UTC, the answer's arrival
    "verdict": pl.String,  # live | soft-404 | dead
    "live": pl.Boolean,
    "status": pl.Int64,  # the last answer's (after redirects); null: no answer
    "final_url": pl.String,
    "redirects": pl.String,  # JSON list of [status, url] hops before the final answer
    "content_type": pl.String,
    "content_length": pl.Int64,  # Content-Length, else the bytes of a body read whole
    "title": pl.String,
    "server": pl.String,
    "protocol": pl.String,  # HTTP/2 | HTTP/1.1: what the final answer came by (trawl.politeness.http2)
    "response_ms": pl.Int64,  # request sent to answer received (the last hop)
    "tls_subject": pl.String,
    "tls_issuer": pl.String,
    "tls_not_after": pl.String,  # ISO 8601 UTC
    "favicon_mmh3": pl.Int64,  # Shodan's favicon hash of the host's /favicon.ico
    "body_sha256": pl.String,  # of the bytes read (at most PROBE_MAX_BYTES)
    "body_simhash": pl.String,  # 16 hex digits (:mod:`.fingerprint`)
    "truncated": pl.Boolean,  # the body was cut at PROBE_MAX_BYTES
    "error": pl.String,  # why there was no answer (dead without a status)
    "new": pl.Boolean,
    "repeat": pl.Boolean,
}

#: What ``-o file.jsonl|csv`` writes: every stored column.
EXPORT_COLUMNS = tuple(name for name in PROBE_SCHEMA if name not in ("new", "repeat"))


class ProbeBatch(Batch):
    """Probe results; one row per URL answered (or not)."""

    __slots__ = ()
    kind = "probe"
    SCHEMA = PROBE_SCHEMA
    KEY = ("url",)
    NEWER = "probed_at"
    SEARCH_FIELDS = SEARCH_FIELDS

    @classmethod
    def from_rows(cls, source: str, rows: list[dict[str, Any]]) -> ProbeBatch:
        """Rows (dicts of the schema's columns) as one batch; missing columns are null."""
        frame = pl.DataFrame(
            [{name: row.get(name) for name in PROBE_SCHEMA} for row in rows],
            schema=PROBE_SCHEMA,
            orient="row",
        ).with_columns(pl.lit(True).alias("new"), pl.lit(False).alias("repeat"))
        return cls(source, frame)

    def export_frame(self) -> pl.DataFrame:
        """The rows ``-o x.jsonl|csv`` writes (every stored column, once a URL)."""
        return self.frame.select(EXPORT_COLUMNS)

    def export_urls(self) -> list[str]:
        """What ``-o x.txt`` writes: the URLs found live (httpx's list of what answers)."""
        return self.frame.filter(pl.col("live")).get_column("url").to_list()
