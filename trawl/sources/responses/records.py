"""The ``response`` record kind: the index of stored archived responses.

One record per capture (``url`` + ``timestamp``, the key), naming the file that
holds its bytes (``path``, relative to ``FILES_STORE``). Files are named by
content hash, so captures that share a digest (the same ``jquery.js`` under two
paths, a page that did not change for years) share one file and one download:
the miner reads each file once and finds every capture it stands for by
``digest``.

Why a capture, not a file, is the record: a miner tells when an
endpoint appeared and disappeared, which needs every capture's timestamp, while
one download per digest keeps the archive's budget for new content.

``origin`` says where the bytes came from (``wayback``, ``files``, ``warc``);
``served`` is the timestamp of the capture the archive served, after the
redirects it answered with (a capture whose time is not exact is redirected to
the nearest one; an archived redirect to its target). ``digest`` is the CDX's
(what "downloaded before" is decided by); ``path`` is named by the hash of the
bytes stored, the same digest unless the archive served other bytes.
``replay`` and ``payload`` travel with a batch only: the raw replay URL to download,
or the bytes of a local entry; the store keeps neither.
"""

from __future__ import annotations

import polars as pl

from trawl.records.batches import Batch

#: The columns a store keeps.
RESPONSE_SCHEMA = {
    "url": pl.String,
    "timestamp": pl.String,
    "host": pl.String,
    "digest": pl.String,
    "status": pl.String,
    "mime": pl.String,
    "length": pl.Int64,
    "path": pl.String,
    "origin": pl.String,
    "served": pl.String,
}
#: Columns a batch carries on its way to the store, never stored.
TRANSIENT = {"replay": pl.String, "payload": pl.Binary}


class ResponseBatch(Batch):
    """Captures of archived responses and the files that hold them."""

    __slots__ = ()
    kind = "response"
    SCHEMA = RESPONSE_SCHEMA
    KEY = ("url", "timestamp")
    #: A capture's file does not change: the first one written stays (a rerun that
    #: meets the same capture under another digest spelling keeps the stored file).
    MERGE = {"path": "first", "digest": "first"}

    @classmethod
    def with_transient(cls, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame`` with every column of the schema and the transient ones, in order."""
        columns = {**RESPONSE_SCHEMA, **TRANSIENT}
        return frame.select(
            pl.col(c).cast(t) if c in frame.columns else pl.lit(None, dtype=t).alias(c)
            for c, t in columns.items()
        )

    def stored_frame(self) -> pl.DataFrame:
        """The rows as an export writes them: the stored columns, no bytes."""
        return self.frame.select(c for c in RESPONSE_SCHEMA if c in self.frame.columns)
