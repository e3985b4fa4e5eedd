"""Feed exporters for ``-o``: batches in, one record per line out.

Registered in ``FEED_EXPORTERS`` for the ``txt``, ``jsonl``/``jsonlines`` and
``csv`` formats, which Scrapy picks from the output file's extension.
Non-batch items fall back to Scrapy's behaviour for that format.
"""

from __future__ import annotations

from typing import IO, Any

import orjson
from scrapy.exporters import BaseItemExporter, CsvItemExporter, JsonLinesItemExporter

from trawl.items import UrlBatch

CSV_FIELDS = ("url", "host", "sources", "first_seen", "last_seen", "captures", "statuses", "mimes", "new")


class UrlListExporter(BaseItemExporter):
    """One canonical URL per line, like waymore's ``waymore.txt``."""

    def __init__(self, file: IO[bytes], **kwargs: Any) -> None:
        super().__init__(dont_fail=True, **kwargs)
        self.file = file

    def export_item(self, item: Any) -> None:
        if isinstance(item, UrlBatch):
            urls = item.first_in_run_urls()
            if urls:
                self.file.write("\n".join(urls).encode() + b"\n")
            return
        url = getattr(item, "url", None) or (item.get("url") if isinstance(item, dict) else None)
        if url:
            self.file.write(str(url).encode() + b"\n")


class RecordJsonLinesExporter(JsonLinesItemExporter):
    """One JSON object per URL, with its provenance."""

    def export_item(self, item: Any) -> None:
        if not isinstance(item, UrlBatch):
            super().export_item(item)
            return
        self.file.write(b"".join(orjson.dumps(r.as_dict()) + b"\n" for r in item.records(first_in_run=True)))


class RecordCsvExporter(CsvItemExporter):
    """One CSV row per URL; set-valued fields joined with ``|``."""

    def __init__(self, file: IO[bytes], **kwargs: Any) -> None:
        kwargs.setdefault("fields_to_export", list(CSV_FIELDS))
        super().__init__(file, **kwargs)

    def export_item(self, item: Any) -> None:
        if not isinstance(item, UrlBatch):
            super().export_item(item)
            return
        if self._headers_not_written:
            self._headers_not_written = False
            if self.include_headers_line:
                self.csv_writer.writerow(CSV_FIELDS)
        self.csv_writer.writerows(
            (
                r.url,
                r.host,
                r.sources.replace(",", "|"),
                r.first_seen or "",
                r.last_seen or "",
                r.captures,
                r.statuses.replace(",", "|"),
                r.mimes.replace(",", "|"),
                "true" if r.new else "false",
            )
            for r in item.records(first_in_run=True)
        )
