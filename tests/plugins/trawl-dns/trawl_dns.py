"""A third-party trawl plugin with a record kind of its own: DNS records.

It proves that the pipeline carries any record kind: a source with
no domain (:class:`trawl.sources.base.Source`), a batch type that declares its
natural key and merge rule (so the SQLite store makes its table and merges it
without knowing DNS), and hooks that handle their kind and leave URLs alone.

``scrapy crawl dns -s DNS_BASE_URL=http://... [-a zone=example.com]`` reads a
passive-DNS API page by page (``/v1/records?page=N``, ``{"records": [...],
"next": N}``); ``zone`` keeps the names in that zone (the filter hook reads it
from the run context, not from the spider).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pluggy
import polars as pl
import scrapy

from trawl.records.batches import Batch
from trawl.sources.base import Source

hookimpl = pluggy.HookimplMarker("trawl")


class DnsBatch(Batch):
    """DNS records of one upstream page: one record per (name, type, value)."""

    __slots__ = ()
    kind = "dns"
    SCHEMA = {
        "name": pl.String,
        "type": pl.String,
        "value": pl.String,
        "first_seen": pl.String,
        "last_seen": pl.String,
        "count": pl.Int64,
    }
    KEY = ("name", "type", "value")
    #: first and last sighting over every run; ``count`` is the upstream's running total.
    MERGE = {"first_seen": "min", "last_seen": "max", "count": "max"}


class DnsSpider(Source):
    """Passive-DNS records, page by page; no domain (``-a zone=`` is optional)."""

    name = "dns"
    base_url_setting = "DNS_BASE_URL"
    extra_arguments = frozenset({"zone"})

    def configure_kind(self, settings: Any, arguments: Any) -> None:
        self.zone = str(arguments.get("zone") or "").strip().lower().rstrip(".")

    def run_inputs(self) -> dict[str, Any]:
        return {**super().run_inputs(), "zone": self.zone}

    async def start(self) -> AsyncIterator[Any]:
        yield self._page(1)

    def _page(self, number: int) -> scrapy.Request:
        return scrapy.Request(
            f"{self.base_url}/v1/records?page={number}",
            callback=self.parse,
            errback=self.on_request_error,
            cb_kwargs={"number": number},
        )

    def parse(self, response: Any, number: int) -> Any:
        data = orjson.loads(response.body)
        records = data["records"]
        frame = pl.DataFrame(records, schema=DnsBatch.SCHEMA) if records else DnsBatch.empty_frame()
        yield DnsBatch(self.name, frame, page=f"page={number}", page_rows=len(records))
        if data.get("next"):
            yield self._page(int(data["next"]))


@hookimpl
def trawl_register_sources() -> dict[str, type[scrapy.Spider]]:
    return {DnsSpider.name: DnsSpider}


@hookimpl
def trawl_normalize_batch(batch: Any, context: Any) -> None:
    if batch.kind != "dns":  # leave other record kinds alone
        return
    # Names as DNS compares them: case-insensitive, the root's dot implied.
    batch.frame = batch.frame.with_columns(
        pl.col("name").str.to_lowercase().str.strip_chars_end("."), pl.col("type").str.to_uppercase()
    )


@hookimpl
def trawl_filter_batch(batch: Any, context: Any) -> Any:
    zone = context.inputs.get("zone")
    if batch.kind != "dns" or not zone:
        return None
    names = pl.col("name")
    keep = (names == zone) | names.str.ends_with("." + zone)
    dropped = batch.frame.filter(~keep).height
    if dropped:
        context.stats.inc_value("trawl/filtered/out_of_zone", dropped)
    return keep


@hookimpl
def trawl_batch_stored(batch: Any, new: int, context: Any) -> None:
    if batch.kind == "dns":
        context.stats.inc_value("trawl/dns_new", new)
        context.stats.inc_value("trawl/dns_records", len(batch))
