"""``crawl all -o``/``-O``: the store's URLs for the domain, each once, provenance merged.

Per-crawler feed exports cannot merge what several sources found, so ``all``
writes its files from the store once every source has finished. It writes
every URL the store holds for the domain (``ReadableStore.read_domain``; only
the domain itself and ``www.`` with ``-a subs=false``), not only the URLs this
run touched: the file is the store's view of the domain, so a rerun whose
sources are down, or that ran fewer sources, still exports everything known.
``new`` is true for the URLs this run added to the store;
with ``-a new_only=true`` only those are written (waymore's ``-nlf``).

The files are written like a single source's (:mod:`trawl.exports.storage`):
``-O`` replaces a file at the end, and only with one that has URLs; ``-o``
appends the URLs the file lacks (:mod:`trawl.exports.append`), so a rerun adds
what is new and never doubles the file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import polars as pl
from scrapy.utils.misc import load_object

from trawl.errors import TrawlUsageError
from trawl.exports.storage import SafeFileFeedStorage
from trawl.pipeline.seen import SeenUrls
from trawl.records.batches import UrlBatch
from trawl.sources.target import Target
from trawl.stores.registry import store_class


def export_from_store(
    run_ids: list[str],
    feeds: Mapping[str, Mapping[str, Any]],
    settings: Any,
    pm: Any,
    target: Target,
    new_only: bool = False,
    completed: bool = True,
) -> int:
    """Write the ``-o``/``-O`` files of ``all``; returns the URLs read from the store.

    ``new_only`` (``-a new_only=true``): only the URLs these runs added to the store.
    ``completed``: every source's run completed; if not, an ``-O`` to a new path
    that would be empty is not created (:mod:`trawl.exports.storage`).
    """
    if not feeds:
        return 0
    uri = (settings.get("STORE_URI") or "").strip()
    if not uri:
        raise TrawlUsageError("-o with 'all' exports from the store: set STORE_URI")
    reader: Any = store_class(uri, pm, needs=("read",))
    exporters = settings.getdict("FEED_EXPORTERS")
    formats = {path: opts.get("format") or Path(path).suffix.lstrip(".") for path, opts in feeds.items()}
    for path, fmt in formats.items():
        if fmt not in exporters:
            raise TrawlUsageError(f"no exporter for the {fmt!r} format of {path}")
    new = new_urls(reader, uri, run_ids, settings)
    written = 0
    for path, options in feeds.items():
        storage = SafeFileFeedStorage(
            path, feed_options={**options, "format": formats[path]}, completed=lambda: completed
        )
        file = storage.open(None)
        try:
            exporter = load_object(exporters[formats[path]])(file)
            exporter.start_exporting()
            for batch in domain_batches(reader, uri, target, new, settings):
                if new_only:
                    batch.frame = batch.frame.filter(pl.col("new"))
                exporter.export_item(batch)
                written += len(batch)
            exporter.finish_exporting()
        except BaseException:
            storage.abandon(file)
            raise
        storage.store(file)
    return written


def new_urls(reader: Any, uri: str, run_ids: list[str], settings: Any) -> SeenUrls:
    """The URLs these runs added to the store (what ``new`` says in the export)."""
    new = SeenUrls()
    for batch in reader.read_runs(uri, run_ids, settings):
        new.add(batch.frame.filter(pl.col("new")).get_column("url"))
    return new


def domain_batches(reader: Any, uri: str, target: Target, new: SeenUrls, settings: Any) -> Iterator[UrlBatch]:
    """The store's URLs for the target's scope, with ``new`` set from this run."""
    for batch in reader.read_domain(uri, target.domain, settings):
        frame = batch.frame
        hosts = frame.get_column("host").unique().drop_nulls()
        outside = [host for host in hosts.to_list() if not target.in_scope(host)]
        if outside:
            frame = frame.filter(~pl.col("host").is_in(outside))
        if frame.height:
            batch.frame = frame.with_columns(new.contains(frame.get_column("url")).alias("new"))
            yield batch
