"""What bench/chaos_crates.py reads from a store: which dump is live, and what a dead load left.

One class per store the crates loader switches snapshots in (SQLite, PostgreSQL),
each with the same four questions: the fingerprint of every live ``*_records``
table (rows, and the XOR of a hash of every row but its run columns, so row order
does not count), the newest ``crates_dump`` snapshot, the staging tables, and the
load lock's record of a load that did not let it go.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

#: Columns that say which run wrote a row, not what the dump holds.
RUN_COLUMNS = {"first_run", "last_run"}
#: The live tables of every kind but the snapshots' own list (which keeps every dump loaded).
LIVE = "_records"
SNAPSHOTS_TABLE = "crates_dump_records"


def checksum(rows: Iterable[tuple]) -> tuple[int, str]:
    total, count = 0, 0
    for row in rows:
        total ^= int.from_bytes(hashlib.blake2b(repr(row).encode(), digest_size=8).digest(), "big")
        count += 1
    return count, f"{total:016x}"


class Target(Protocol):
    uri: str

    def fingerprint(self) -> dict[str, tuple[int, str]]: ...
    def newest_snapshot(self) -> str | None: ...
    def leftovers(self) -> list[str]: ...


class SqliteTarget:
    """``x.db`` in a folder (a tmpfs in the bench), with its lock and scratch files beside it."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.uri = f"sqlite:///{db}"

    def _query(self, sql: str) -> list[tuple]:
        if not self.db.exists():
            return []
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=60)
        try:
            return con.execute(sql).fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            con.close()

    def fingerprint(self) -> dict[str, tuple[int, str]]:
        names = [
            r[0]
            for r in self._query(
                f"SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%\\{LIVE}' ESCAPE '\\'"
                f" AND name != '{SNAPSHOTS_TABLE}' ORDER BY name"
            )
        ]
        prints = {}
        for name in names:
            columns = [r[1] for r in self._query(f"PRAGMA table_info({name})") if r[1] not in RUN_COLUMNS]
            prints[name] = checksum(self._query(f"SELECT {', '.join(columns)} FROM {name}"))
        return prints

    def newest_snapshot(self) -> str | None:
        rows = self._query(f"SELECT max(snapshot) FROM {SNAPSHOTS_TABLE}")
        return rows[0][0] if rows else None

    def leftovers(self) -> list[str]:
        left = [r[0] for r in self._query("SELECT name FROM sqlite_master WHERE name LIKE '%_records_next'")]
        left += [p.name for p in self.db.parent.glob(f"{self.db.name}-load-*")]
        left += [p.name for p in self.db.parent.glob(f"{self.db.name}-stage-*")]  # batches' own files
        lock = self.db.parent / f"{self.db.name}-load.lock"
        if lock.exists() and lock.read_bytes().strip():
            left.append(f"{lock.name}: {lock.read_text()[:80]}")
        return left


class PostgresTarget:
    """A database of its own on the bench's PostgreSQL server."""

    def __init__(self, uri: str) -> None:
        self.uri = uri

    def _query(self, sql: str) -> list[tuple[Any, ...]]:
        import psycopg

        try:
            with psycopg.connect(self.uri) as con:
                return con.execute(sql).fetchall()  # type: ignore[arg-type]
        except psycopg.errors.UndefinedTable:
            return []

    def fingerprint(self) -> dict[str, tuple[int, str]]:
        names = [
            r[0]
            for r in self._query(
                f"SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE '%\\{LIVE}'"
                f" AND tablename != '{SNAPSHOTS_TABLE}' ORDER BY tablename"
            )
        ]
        prints = {}
        for name in names:
            columns = [
                r[0]
                for r in self._query(
                    "SELECT column_name FROM information_schema.columns"
                    f" WHERE table_schema = 'public' AND table_name = '{name}' ORDER BY ordinal_position"
                )
                if r[0] not in RUN_COLUMNS
            ]
            prints[name] = checksum(self._query(f"SELECT {', '.join(columns)} FROM {name}"))
        return prints

    def newest_snapshot(self) -> str | None:
        rows = self._query(f"SELECT max(snapshot) FROM {SNAPSHOTS_TABLE}")
        return rows[0][0] if rows else None

    def leftovers(self) -> list[str]:
        left = [
            r[0] for r in self._query("SELECT tablename FROM pg_tables WHERE tablename LIKE '%_records_next'")
        ]
        left += [f"trawl_loads: {r}" for r in self._query("SELECT * FROM trawl_loads")]
        return left
