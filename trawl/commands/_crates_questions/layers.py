"""Where the questions read the crates' columns: the store, or the Parquet raw layer.

Both give :meth:`Layer.read`: whole columns of one record kind, one row per key,
typed by the kind's ``SCHEMA``, so every answer is computed the same way from
either (:mod:`.graph`, :mod:`.downloads`) and is the same from each.

* :class:`StoreLayer`: the store ``STORE_URI`` names, through the contract's
  class-level :class:`~trawl.stores.contract.KindReadableStore` (read-only: a
  question registers no run). Holds what every mode wrote, API top-ups included.
* :class:`ParquetLayer`: ``CRATES_PARQUET_DIR``, the db-dump's tables as
  Parquet datasets (``<table>/dump_date=YYYY-MM-DD/*.parquet``, written by the
  dump loader). Scanned lazily by polars, only the columns asked for, only
  the newest dump's partition. A kind spread over several tables (``crate``:
  ``crates``, ``crate_downloads``, ``default_versions``) is joined by its key the
  way the store's ``last`` merge joins them: the newest non-null value per column.
  It holds dumps only, not what ``mode=api`` or ``incremental`` wrote since.
  The archived days ``-a history=`` wrote (``version_download_archive``) are
  read from every ``version_downloads_archive/day=YYYY-MM-DD/`` file: they are
  not snapshots, each day is written once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import polars as pl

from trawl.errors import TrawlUsageError
from trawl.records.batches import Batch
from trawl.sources.crates.archive import DATASET as ARCHIVE_DATASET
from trawl.sources.crates.archive import VersionDownloadArchiveBatch

#: Record kind -> the db-dump tables its rows come from (the raw layer keeps one dataset per table).
KIND_TABLES: dict[str, tuple[str, ...]] = {
    "crate": ("crates", "crate_downloads", "default_versions"),
    "version": ("versions",),
    "dependency": ("dependencies",),
    "version_download": ("version_downloads",),
    VersionDownloadArchiveBatch.kind: (ARCHIVE_DATASET,),
}
LAYERS = ("auto", "store", "parquet")


class Layer(Protocol):
    """Whole columns of a record kind; the name a user is told the answer came from."""

    name: str

    def read(self, batch_type: type[Batch], columns: list[str]) -> pl.DataFrame: ...


class StoreLayer:
    """A store that reads declared kinds back with no crawl (``KindReadableStore``: SQLite today);
    :func:`trawl.stores.registry.store_class` refuses one that cannot, in one line."""

    name = "store"

    def __init__(self, store_class: type, uri: str, settings: Any) -> None:
        self.store_class: Any = store_class
        self.uri = uri
        self.settings = settings

    def read(self, batch_type: type[Batch], columns: list[str]) -> pl.DataFrame:
        return self.store_class.read_stored_kind(self.uri, batch_type, columns, self.settings)


class ParquetLayer:
    """The raw layer under one directory (see the module docstring)."""

    name = "parquet"

    def __init__(self, root: Path) -> None:
        self.root = root

    def holds_a_dump(self) -> bool:
        return any(self._newest(table) for tables in KIND_TABLES.values() for table in tables)

    def _newest(self, table: str) -> list[Path]:
        """The files of ``table``'s newest ``dump_date=`` partition (none: no such dataset)."""
        partitions = sorted(p for p in (self.root / table).glob("dump_date=*") if p.is_dir())
        return sorted(partitions[-1].glob("*.parquet")) if partitions else []

    def _files(self, batch_type: type[Batch], table: str) -> list[Path]:
        """The files to read of ``table``: every archived day's, or the newest dump's partition."""
        if batch_type.kind == VersionDownloadArchiveBatch.kind:
            return sorted((self.root / table).glob("day=*/*.parquet"))
        return self._newest(table)

    def read(self, batch_type: type[Batch], columns: list[str]) -> pl.DataFrame:
        schema = {name: batch_type.SCHEMA[name] for name in columns}
        key = list(batch_type.KEY)
        wanted = list(dict.fromkeys([*key, *columns]))
        frames = []
        for table in KIND_TABLES.get(batch_type.kind, ()):
            files = self._files(batch_type, table)
            if not files:
                continue
            scan = pl.scan_parquet(files, hive_partitioning=False)
            have = scan.collect_schema().names()
            frames.append(
                scan.select(
                    pl.col(c).cast(batch_type.SCHEMA[c])
                    if c in have
                    else pl.lit(None, batch_type.SCHEMA[c]).alias(c)
                    for c in wanted
                ).collect()
            )
        if not frames:
            return pl.DataFrame(schema=schema)
        whole = pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]
        if len(frames) > 1 or not whole.select(key).is_unique().all():
            whole = _last_non_null(whole, key)
        return whole.select(columns)


def _last_non_null(frame: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """One row per key, each column its last non-null value: the store's ``last`` merge rule
    (:func:`trawl.records.kinds.collapse` for a whole batch type; here only some columns are read)."""
    others = [c for c in frame.columns if c not in key]
    return frame.group_by(key, maintain_order=True).agg(pl.col(c).drop_nulls().last() for c in others)


def choose_layer(chosen: str, parquet_dir: str, store: StoreLayer | None) -> Layer:
    """``--layer``: ``parquet`` when asked for or (``auto``) when ``CRATES_PARQUET_DIR`` holds a dump,
    else the store; one usage line when the one asked for is not there."""
    if chosen not in LAYERS:
        raise TrawlUsageError(f"--layer takes one of {', '.join(LAYERS)}, not {chosen!r}")
    parquet = ParquetLayer(Path(parquet_dir).expanduser()) if parquet_dir else None
    if chosen == "parquet" or (chosen == "auto" and parquet is not None and parquet.holds_a_dump()):
        if parquet is None:
            raise TrawlUsageError("--layer parquet reads CRATES_PARQUET_DIR, and it is not set")
        return parquet
    if store is None:
        raise TrawlUsageError("no store to read crates from: set STORE_URI (or --store URI)")
    return store


__all__ = ["KIND_TABLES", "LAYERS", "Layer", "ParquetLayer", "StoreLayer", "choose_layer"]
