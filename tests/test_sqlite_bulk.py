"""The SQLite store's bulk path for staged kinds (``trawl/stores/sqlite/bulk.py``): the same rows.

A db-dump load's batches go through ADBC into a scratch file and are merged from
there by the store's own connection; a ``:memory:`` store binds them with
``executemany``. Both must leave the same table: NULLs, booleans, text with line
breaks and non-ASCII, 64-bit numbers, and a key met again in a later batch (the
crate kind's three tables) merged by the declared rules.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl
import pytest

from trawl.errors import StoreError
from trawl.records.kinds import staged
from trawl.sources.crates.records import CrateBatch, VersionBatch
from trawl.stores.sqlite.bulk import BulkStage, available, scratch_path
from trawl.stores.sqlite.errors import describe_driver_error
from trawl.stores.sqlite.kinds import KindTable

VERSIONS = pl.DataFrame(
    {
        "id": [1, 2, 3, 2**62],
        "crate_id": [10, 10, 11, 12],
        "num": ["1.0.0", "1.1.0-ünïcode", None, "0.0.1"],
        "created_at": ["2020-01-01T00:00:00Z", None, "2021-01-01T00:00:00.5Z", None],
        "updated_at": [None, None, None, None],
        "downloads": [0, None, 2**40, -1],
        "yanked": [True, False, None, True],
        "license": ["MIT\nApache-2.0", "", None, 'x,"y"'],
        "crate_size": [None, 1, 2, 3],
        "rust_version": [None, None, None, None],
        "mode": ["dump"] * 4,
    },
    schema=VersionBatch.SCHEMA,
)
CRATES = (
    pl.DataFrame({"id": [1, 2], "name": ["a", "b"], "mode": ["dump", "dump"]})
    .with_columns(
        [
            pl.lit(None, dtype=t).alias(c)
            for c, t in CrateBatch.SCHEMA.items()
            if c not in ("id", "name", "mode")
        ]
    )
    .select(list(CrateBatch.SCHEMA))
)
#: ``crate_downloads`` after ``crates``: the same keys, one more column filled, the rest NULL.
DOWNLOADS = CRATES.with_columns(pl.lit(None, dtype=pl.String).alias("name"), pl.Series("downloads", [5, 6]))


def load(path: str, batches: list[tuple[type, pl.DataFrame]], bulk: bool) -> dict[str, list[tuple]]:
    con = sqlite3.connect(path, isolation_level=None)
    stage = BulkStage(path) if bulk else None
    tables: dict[type, KindTable] = {}
    try:
        for batch_type, frame in batches:
            table = tables.get(batch_type) or tables.setdefault(batch_type, KindTable(staged(batch_type)))
            table.create(con, 7)
            source = stage.put(con, table.staged_rows(frame, 7)) if stage else None
            con.execute("BEGIN IMMEDIATE")
            table.write(con, frame, 7, source)
            con.execute("COMMIT")
            if stage:
                stage.detach(con)
        return {
            t.table: con.execute(f"SELECT * FROM {t.table} ORDER BY id").fetchall() for t in tables.values()
        }
    finally:
        if stage:
            stage.close()
        con.close()


def test_the_bulk_path_stores_what_binding_row_by_row_stores(tmp_path: Path) -> None:
    assert available(str(tmp_path / "a.db"))
    batches = [(VersionBatch, VERSIONS.head(2)), (VersionBatch, VERSIONS.tail(2)), (CrateBatch, CRATES),
               (CrateBatch, DOWNLOADS)]  # fmt: skip
    one_by_one = load(":memory:", batches, bulk=False)
    in_bulk = load(str(tmp_path / "a.db"), batches, bulk=True)
    assert in_bulk == one_by_one
    assert in_bulk["crate_records_next"][0][:2] == (1, "a") and 5 in in_bulk["crate_records_next"][0]
    assert len(in_bulk["version_records_next"]) == 4
    assert list(tmp_path.glob("a.db-load*")) == []  # the scratch file goes with the stage


def test_a_scratch_file_that_cannot_be_written_is_one_store_error(tmp_path: Path) -> None:
    Path(scratch_path(str(tmp_path / "a.db"))).mkdir()  # a folder where the scratch file goes
    con = sqlite3.connect(tmp_path / "a.db", isolation_level=None)
    stage = BulkStage(str(tmp_path / "a.db"))
    with pytest.raises(StoreError) as failure:
        stage.put(con, VERSIONS)
    assert str(failure.value).startswith("cannot load a batch in bulk through ")
    assert "\n" not in str(failure.value)
    con.close()


def test_a_full_disk_during_a_bulk_load_is_said_as_sqlite_s_own_full_disk(small_disk: Path) -> None:
    """ADBC passes on only SQLite's message (``INTERNAL: failed to execute: database or disk is
    full``): the store's line names the cause as for its own connection's errors."""
    store = small_disk / "store.db"
    sqlite3.connect(store).close()
    bulk = BulkStage(str(store))
    con = sqlite3.connect(store)
    frame = pl.DataFrame({"url": [f"https://example.com/{n:08d}/" + "x" * 200 for n in range(20_000)]})
    try:
        with pytest.raises(StoreError, match=r": the disk is full \(SQLite: database or disk is full\)$"):
            bulk.put(con, frame)
    finally:
        bulk.close()
        con.close()


def test_a_scratch_file_damaged_by_a_full_disk_is_said_as_the_full_disk(
    small_disk: Path, tmp_path: Path
) -> None:
    """Without a journal, a write the disk refused leaves a half-written page, and SQLite's next
    word is "malformed": on a nearly full folder that is the full disk; elsewhere, the damage."""
    damaged = Exception("INTERNAL: failed to execute: database disk image is malformed")
    full = describe_driver_error(damaged, str(small_disk / "store.db-load-1@host"))
    assert full == "the disk is full (SQLite: database or disk is full)"
    roomy = describe_driver_error(damaged, str(tmp_path / "store.db-load-1@host"))
    assert (
        roomy
        == "the store file is damaged (truncated or overwritten) (SQLite: database disk image is malformed)"
    )
