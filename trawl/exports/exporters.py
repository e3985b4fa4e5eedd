"""Feed exporters for ``-o``: batches in, one record per line out.

Registered in ``FEED_EXPORTERS`` for the ``txt``, ``jsonl``/``jsonlines`` and
``csv`` formats, which Scrapy picks from the output file's extension. A URL
batch is written by polars' own writers, one call per batch; URLs this run
passed on already (``repeat``) are left out, so each URL is written once,
and so are URLs a file appended to (``-o``) holds already
(:mod:`trawl.exports.append`). A batch of another record kind is written if
its type says how (``export_frame()``: the rows of ``jsonl`` and ``csv``;
``export_urls()``: the lines of ``txt``), as the ``probe`` kind does
(:mod:`trawl.sources.probe.records`), and skipped otherwise. A batch whose type
says ``EXPORTED = False`` is never written (mining's records and URLs in a
responses run: its ``-o`` is the response index, as before mining). Non-batch
items fall back to Scrapy's behaviour for that format.
"""

from __future__ import annotations

import io
from typing import IO, Any

import polars as pl
from scrapy.exporters import BaseItemExporter, CsvItemExporter, JsonLinesItemExporter

from trawl.exports.append import known_urls, unseen
from trawl.records.batches import Batch, UrlBatch
from trawl.records.kinds import stored_columns

CSV_FIELDS = ("url", "host", "sources", "first_seen", "last_seen", "captures", "statuses", "mimes", "new")
_RECORD = ("url", "host", "sources", "first_seen", "last_seen", "captures", "statuses", "mimes", "new")


def record_frame(batch: UrlBatch) -> pl.DataFrame:
    """The rows and fields an export writes."""
    return batch.first_in_run().select(_RECORD)


def not_exported(item: Any) -> bool:
    """A batch whose kind says it is stored, not exported (``EXPORTED = False``)."""
    return isinstance(item, Batch) and getattr(type(item), "EXPORTED", True) is False


def kind_frame(item: Any) -> pl.DataFrame | None:
    """The rows a batch of another record kind exports (``None``: not such a batch; empty: none)."""
    if not isinstance(item, Batch) or isinstance(item, UrlBatch):
        return None
    export = getattr(item, "export_frame", None)
    if export is not None:  # a kind that says how (the probe's)
        return export()
    if type(item).KEY:  # a declared kind (the responses index): its stored columns
        return item.frame.select(c for c in stored_columns(type(item)) if c in item.frame.columns)
    return pl.DataFrame()


class UrlListExporter(BaseItemExporter):
    """One canonical URL per line, like waymore's ``waymore.txt``."""

    def __init__(self, file: IO[bytes], **kwargs: Any) -> None:
        super().__init__(dont_fail=True, **kwargs)
        self.file = file
        self.known = known_urls(file, "txt")

    def export_item(self, item: Any) -> None:
        if not_exported(item):
            return
        if isinstance(item, UrlBatch):
            urls = unseen(item.first_in_run().select("url"), self.known).get_column("url")
            if len(urls):
                self.file.write(("\n".join(urls.to_list()) + "\n").encode())
            return
        if isinstance(item, Batch):
            lines = item.export_urls() if hasattr(item, "export_urls") else []
            if lines:
                self.file.write(("\n".join(lines) + "\n").encode())
            return
        url = getattr(item, "url", None) or (item.get("url") if isinstance(item, dict) else None)
        if url:
            self.file.write(str(url).encode() + b"\n")


class RecordJsonLinesExporter(JsonLinesItemExporter):
    """One JSON object per URL, with its provenance."""

    def __init__(self, file: IO[bytes], **kwargs: Any) -> None:
        super().__init__(file, **kwargs)
        self.known = known_urls(file, "jsonl")

    def export_item(self, item: Any) -> None:
        if not_exported(item):
            return
        other = kind_frame(item)
        if other is not None:
            if other.height:
                buffer = io.BytesIO()
                other.write_ndjson(buffer)
                self.file.write(buffer.getvalue())
            return
        if not isinstance(item, UrlBatch):
            super().export_item(item)
            return
        frame = unseen(record_frame(item), self.known)
        if frame.height:
            buffer = io.BytesIO()
            frame.write_ndjson(buffer)
            self.file.write(buffer.getvalue())


class RecordCsvExporter(CsvItemExporter):
    """One CSV row per URL; set-valued fields joined with ``|``."""

    def __init__(self, file: IO[bytes], **kwargs: Any) -> None:
        kwargs.setdefault("fields_to_export", list(CSV_FIELDS))
        super().__init__(file, **kwargs)
        self.known = known_urls(file, "csv")
        if self.known is not None:
            self._headers_not_written = False  # the file has its header row

    def export_item(self, item: Any) -> None:
        if not_exported(item):
            return
        other = kind_frame(item)
        if other is not None:
            self._write_frame(other)
            return
        if not isinstance(item, UrlBatch):
            super().export_item(item)
            return
        frame = unseen(record_frame(item), self.known).with_columns(
            pl.col("sources", "statuses", "mimes").list.join("|"),
            pl.when(pl.col("new")).then(pl.lit("true")).otherwise(pl.lit("false")).alias("new"),
        )
        self._write_frame(frame)

    def _write_frame(self, frame: pl.DataFrame) -> None:
        if not frame.width:  # a kind that exports nothing
            return
        header = self._headers_not_written and self.include_headers_line
        self._headers_not_written = False
        if frame.height or header:
            buffer = io.BytesIO()
            frame.write_csv(buffer, include_header=header, line_terminator="\r\n")
            self.stream.buffer.write(buffer.getvalue())
