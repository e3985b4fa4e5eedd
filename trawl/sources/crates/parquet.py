"""The raw layer: the db-dump's tables as Parquet datasets, one per table, partitioned by dump date.

``CRATES_PARQUET_DIR/<table>/dump_date=YYYY-MM-DD/part-NNNNNN.parquet``, each
file one block of the table (8 MiB of its CSV; NNNNNN: its first batch's
number) in its record kind's columns and types (as the store gets them:
``crates``, ``crate_downloads`` and ``default_versions`` in the ``crate``
kind's columns, the two latter filling only the key and their own column;
``versions``, ``dependencies``... one kind each), and
``crates_dump/`` one row per dump loaded. Hive-style partitions: polars
(``pl.scan_parquet(dir / "versions", hive_partitioning=True)``), pyarrow
(``pyarrow.dataset.dataset(dir / "versions", partitioning="hive")``) and
DuckDB (``read_parquet('dir/versions/*/*.parquet', hive_partitioning=true)``)
read them as they are.

Why one dataset per table, not one per kind: the three tables of the crate
kind hold different columns of the same crates, which the store joins by its
merge rule; in Parquet they would be three partial rows per crate. A table is
also what a reader of the raw layer expects to find from crates.io's own docs.

Written by the thread that reads the dump, batch by batch (polars releases
the GIL), so the reactor never waits on it. A dump is one snapshot here too:
its files go to ``.loading/<snapshot>/`` and each table's folder is renamed
into place only once the whole dump was read (:meth:`ParquetLayer.commit`),
so a crash leaves the earlier partitions as they were, and a rerun starts the
snapshot's folder anew. A dump date loaded again replaces its partition.

A write that fails (a full disk, a file-size limit, a read-only folder) is one
:class:`ParquetError` naming the folder and the cause: polars reports an I/O error
of its Rust writer as a ``ComputeError`` (``... underlying IO error: No space left
on device (os error 28)``), not as an ``OSError``, which escaped as a traceback.
"""

from __future__ import annotations

import os
import re
import shutil
from datetime import datetime
from pathlib import Path

import polars as pl

from trawl.errors import TrawlError

#: The dataset of the dumps themselves (one row each): the newest is the snapshot this layer holds.
DUMPS = "crates_dump"


class ParquetError(TrawlError):
    """The Parquet layer cannot be written (a full disk, a directory not writable)."""


#: The OS error inside a polars I/O error: ``... underlying IO error: File too large (os error 27)``.
_OS_ERROR = re.compile(r"\(os error (\d+)\)")
#: The errors a write fails with that are about the disk, not the data (said as the OS says them).
WRITE_ERRORS = (OSError, pl.exceptions.PolarsError)


def cannot_write(root: Path, exc: BaseException) -> ParquetError:
    """One line naming the folder and the cause, as ``strerror`` says it (``No space left on device``)."""
    if isinstance(exc, OSError):
        cause = exc.strerror or str(exc) or type(exc).__name__
    else:
        found = _OS_ERROR.search(str(exc))
        number = int(found.group(1)) if found else 0
        cause = os.strerror(number) if number else (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return ParquetError(f"cannot write Parquet under {str(root)!r}: {cause}")


def newest_dump(root: Path) -> str | None:
    """The newest ``timestamp`` in ``crates_dump/`` (None: no dump loaded yet)."""
    files = sorted((root / DUMPS).glob("dump_date=*/*.parquet"))
    if not files:
        return None
    return pl.scan_parquet(files).select(pl.col("timestamp").max()).collect().item()


class ParquetLayer:
    """One dump's files, staged under ``.loading/`` until :meth:`commit`."""

    def __init__(self, root: Path, snapshot: str, made: datetime) -> None:
        self.root = root
        self.date = made.strftime("%Y-%m-%d")
        self.staging = root / ".loading" / snapshot
        try:
            shutil.rmtree(self.staging, ignore_errors=True)  # a load that crashed
            self.staging.mkdir(parents=True)
        except OSError as exc:
            raise cannot_write(root, exc) from None

    def write(self, table: str, number: int, frame: pl.DataFrame) -> None:
        folder = self.staging / table
        try:
            folder.mkdir(exist_ok=True)
            # The raw layer is the dump's own columns: ``mode`` (which mode of the source wrote a
            # row) is the store's provenance, always empty here.
            raw = frame.drop("mode", strict=False)
            # zstd level 1: a quarter less CPU than polars' default level, and no bigger here.
            path = folder / f"part-{number:06d}.parquet"
            raw.write_parquet(path, statistics=True, compression="zstd", compression_level=1)
        except WRITE_ERRORS as exc:
            raise cannot_write(self.root, exc) from None

    def commit(self, dump_row: pl.DataFrame) -> None:
        """Every table's partition into place, then the dump's own row (last: it says "loaded")."""
        self.write(DUMPS, 1, dump_row)
        tables = sorted(p.name for p in self.staging.iterdir() if p.name != DUMPS)
        try:
            for table in [*tables, DUMPS]:
                target = self.root / table / f"dump_date={self.date}"
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.exists():
                    shutil.rmtree(target)
                (self.staging / table).rename(target)
            shutil.rmtree(self.staging, ignore_errors=True)
        except WRITE_ERRORS as exc:
            raise cannot_write(self.root, exc) from None

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)
