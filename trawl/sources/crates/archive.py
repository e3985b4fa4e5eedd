"""One day of crates.io's version-downloads archive: its kinds, its CSV read and checked, its Parquet.

The db-dump holds only the last 90 days of ``version_downloads``; older days
are one CSV a day under ``https://static.crates.io/archive/version-downloads/``
(``YYYY-MM-DD.csv``, api-formats.md section h), the dump's columns read by
header name (``version_id``, ``downloads``, ``date``: in any order, others
ignored; a file without ``date`` is all its day's). A day may come gzipped.

Why kinds of their own (:class:`VersionDownloadArchiveBatch`, the
``version_download`` columns and key): the dump's ``version_download`` kind is
switched as a whole snapshot with every dump (:mod:`.snapshot`), which would
drop the archive's days each morning; archived days never change, so they are
kept apart and merged like any keyed kind. :class:`ArchiveDayBatch` is the
ledger: one row per day, written after the day's rows (a store writes a run's
batches in order), so a day in it is a day stored whole, and a rerun fetches
only the days it lacks.

A day is checked whole before any of it is handed on (nothing half-written):
a body cut short (no line end after its last row, a gzip stream that ends
early), a missing column, a row whose version or count is not a whole number
or whose date is another day's, is one :class:`ArchiveError` naming the row.

Parquet (``CRATES_PARQUET_DIR``): ``version_downloads_archive/day=YYYY-MM-DD/part-000000.parquet``,
written to a temporary name and renamed into place, so a day's file is whole
or absent; readable by polars, pyarrow and DuckDB (hive partitioning by ``day``).
"""

from __future__ import annotations

import io
import os
import zlib
from pathlib import Path

import polars as pl

from trawl.records.batches import Batch
from trawl.sources.crates.parquet import WRITE_ERRORS, cannot_write
from trawl.sources.crates.records import VersionDownloadBatch

#: The Parquet dataset of the archived days, under ``CRATES_PARQUET_DIR``.
DATASET = "version_downloads_archive"
#: The ``mode`` (provenance) of the archive's rows.
MODE = "history"
#: The columns a day's CSV must have (``date`` may be absent: the file's day).
NEEDED = ("version_id", "downloads")


class VersionDownloadArchiveBatch(VersionDownloadBatch):  # type: ignore[misc, valid-type]
    """Downloads of one version on one day older than the dump's 90 days (the per-day archive)."""

    __slots__ = ()
    kind = "version_download_archive"


class ArchiveDayBatch(Batch):
    """One row per archived day stored whole: what a rerun does not fetch again."""

    __slots__ = ()
    kind = "version_download_archive_day"
    SCHEMA = {"date": pl.String, "rows": pl.Int64, "downloads": pl.Int64}
    KEY = ("date",)
    MERGE: dict[str, str] = {}


class ArchiveError(Exception):
    """A day's file that cannot be read whole (the message says what, the caller says where)."""


#: What a day's file may inflate to: the biggest day of 2026 is about 20 MB of CSV; a gzip
#: bomb of 1 MB would otherwise inflate whole in memory (``gzip.decompress`` has no bound).
DAY_MAX_BYTES = 256 << 20


def _inflated(body: bytes, limit: int = DAY_MAX_BYTES) -> bytes:
    """A gzipped day (one member or several) inflated 1 MiB at a time, at most ``limit`` bytes;
    a plain one as it is."""
    if body[:2] != b"\x1f\x8b":
        return body
    parts, size, pending = [], 0, body
    try:
        while pending:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # the next gzip member
            while pending and not inflater.eof:
                part = inflater.decompress(pending, 1 << 20)
                pending = inflater.unconsumed_tail
                size += len(part)
                if size > limit:
                    raise ArchiveError(f"the gzip stream inflates past {limit >> 20} MiB: not a day's file")
                parts.append(part)
            if not inflater.eof:
                raise ArchiveError("the gzip stream is cut short or corrupt")
            pending = inflater.unused_data
    except zlib.error:
        raise ArchiveError("the gzip stream is cut short or corrupt") from None
    return b"".join(parts)


def parse_day(body: bytes, day: str) -> pl.DataFrame:
    """The day's rows as ``version_download`` columns (``mode`` = ``history``); ``ArchiveError`` else."""
    text = _inflated(body)
    if not text.strip():
        raise ArchiveError("the file is empty")
    if not text.endswith(b"\n"):
        raise ArchiveError("the file is cut short (its last row has no line end)")
    try:
        raw = pl.read_csv(io.BytesIO(text), infer_schema=False)
    except pl.exceptions.PolarsError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ArchiveError(f"not CSV: {first}") from None
    missing = [c for c in NEEDED if c not in raw.columns]
    if missing:
        raise ArchiveError(f"no {', '.join(missing)} column (the header is {','.join(raw.columns)!r})")
    dates = pl.col("date").str.strip_chars() if "date" in raw.columns else pl.lit(day)
    frame = raw.select(
        pl.col("version_id").str.strip_chars().cast(pl.Int64, strict=False),
        dates.alias("date"),
        pl.col("downloads").str.strip_chars().cast(pl.Int64, strict=False),
        pl.lit(MODE).alias("mode"),
    )
    bad = (
        pl.col("version_id").is_null() | pl.col("downloads").is_null() | (pl.col("date") != day)
    ).fill_null(True)
    wrong = frame.with_row_index("row").filter(bad)
    if wrong.height:
        index = int(wrong.item(0, "row"))
        values = ",".join("" if v is None else str(v) for v in raw.row(index))
        raise ArchiveError(
            f"row {index + 1} ({values!r}) is not a version id, a count and this day"
            + (f" ({wrong.height} such rows)" if wrong.height > 1 else "")
        )
    return frame.select(list(VersionDownloadArchiveBatch.SCHEMA))


def parquet_days(root: Path) -> set[str]:
    """The days the Parquet dataset holds whole (a day's file is renamed into place)."""
    return {p.parent.name.removeprefix("day=") for p in (root / DATASET).glob("day=*/part-000000.parquet")}


def write_parquet(root: Path, day: str, frame: pl.DataFrame) -> None:
    """The day's rows as ``<root>/version_downloads_archive/day=<day>/part-000000.parquet``, whole or
    none; :class:`~.parquet.ParquetError` (one line naming ``root``) when it cannot be written."""
    folder = root / DATASET / f"day={day}"
    final = folder / "part-000000.parquet"
    partial = folder / f".part-000000.parquet.{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        frame.drop("mode").write_parquet(partial)
        os.replace(partial, final)
    except WRITE_ERRORS as exc:
        partial.unlink(missing_ok=True)
        raise cannot_write(root, exc) from None
