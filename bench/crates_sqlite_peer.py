"""The least a SQLite load of a crates.io dump costs with the libraries trawl uses: a peer for bench_crates.

One process reads the tar.gz as a stream (``tarfile``), parses each table trawl
stores with polars (all its threads) and binds it through ADBC's SQLite driver
(in C) into a fresh file with no journal and no fsync, into tables keyed as
trawl's are (``WITHOUT ROWID`` unless the key is one integer). Nothing else: no
Parquet, no provenance, no snapshot switch, no second reader, no memory bound
(a table is read whole: several GB of RSS). What it costs against ``gzip -dc``
says what ratio a one-file SQLite load can reach at all.

    python bench/crates_sqlite_peer.py DUMP.tar.gz STORE.db   # prints: rows, seconds binding them
"""

from __future__ import annotations

import sys
import tarfile
import time

import adbc_driver_sqlite.dbapi as adbc
import polars as pl

#: The tables trawl's SQLite store holds (their columns as the dump names them) and their keys.
TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "crates": (
        ("id", "name", "created_at", "updated_at", "description", "homepage", "documentation", "repository"),
        ("id",),
    ),
    "versions": (
        (
            "id",
            "crate_id",
            "num",
            "created_at",
            "updated_at",
            "downloads",
            "yanked",
            "license",
            "crate_size",
            "rust_version",
        ),
        ("id",),
    ),  # fmt: skip
    "dependencies": (
        (
            "id",
            "version_id",
            "crate_id",
            "req",
            "optional",
            "default_features",
            "features",
            "target",
            "kind",
            "explicit_name",
        ),
        ("id",),
    ),  # fmt: skip
    "version_downloads": (("version_id", "date", "downloads"), ("version_id", "date")),
    "crate_owners": (
        ("crate_id", "owner_id", "owner_kind", "created_at", "created_by"),
        ("crate_id", "owner_id"),
    ),
    "crates_keywords": (("crate_id", "keyword_id"), ("crate_id", "keyword_id")),
    "crates_categories": (("crate_id", "category_id"), ("crate_id", "category_id")),
    "crate_downloads": (("crate_id", "downloads"), ("crate_id",)),
}


def create(cursor: object, table: str, frame: pl.DataFrame, key: tuple[str, ...]) -> None:
    sqlite_type = {pl.Int64: "INTEGER", pl.Boolean: "INTEGER", pl.Float64: "REAL"}
    columns = ", ".join(f"{name} {sqlite_type.get(dtype, 'TEXT')}" for name, dtype in frame.schema.items())
    rowid = len(key) == 1 and frame.schema[key[0]] == pl.Int64
    suffix = "" if rowid else " WITHOUT ROWID"
    cursor.execute(f"CREATE TABLE {table} ({columns}, PRIMARY KEY ({', '.join(key)})){suffix}")  # type: ignore[attr-defined]


def main() -> int:
    dump, store = sys.argv[1], sys.argv[2]
    rows, binding = 0, 0.0
    with adbc.connect(store, autocommit=True) as connection, tarfile.open(dump, "r|gz") as archive:
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=OFF")
        cursor.execute("PRAGMA synchronous=OFF")
        cursor.execute("PRAGMA cache_size=-1000000")  # 1 GB: pages written once, at the end
        for member in archive:
            name = member.name.rsplit("/", 1)[-1].removesuffix(".csv")
            if name not in TABLES or not member.isfile():
                continue
            columns, key = TABLES[name]
            data = archive.extractfile(member).read()  # type: ignore[union-attr]
            frame = pl.read_csv(data, columns=list(columns), infer_schema_length=10_000)
            # The dump's rows come in key order: each insert at the B-tree's end.
            frame = frame.select(columns)
            create(cursor, name, frame, key)
            start = time.perf_counter()
            cursor.execute("BEGIN")
            cursor.adbc_ingest(name, frame, mode="append")
            cursor.execute("COMMIT")
            binding += time.perf_counter() - start
            rows += frame.height
        cursor.close()
    print(rows, f"{binding:.2f}")  # rows, and the seconds spent binding them into SQLite
    return 0


if __name__ == "__main__":
    sys.exit(main())
