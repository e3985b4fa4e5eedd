"""The ``response`` records of a SQLite store read back: known digests, and batches for a miner.

The table is the one :mod:`trawl.stores.sqlite.kinds` made from the kind's
declaration (``response_records``); a store that never met the kind has none,
which reads as an empty index, not an error. Reads use a connection of their
own (SQLite lets readers and the one writer work side by side).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from trawl.errors import StoreError
from trawl.records.batches import Batch

TABLE = "response_records"


class SqliteResponseIndex:
    """The index of stored responses in one SQLite file (read-only)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.con: sqlite3.Connection | None = None
        if path != ":memory:" and not Path(path).exists():
            return  # no store yet: nothing is stored
        try:
            self.con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60)
            self.con.execute("SELECT 1").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the SQLite store {path!r}: {exc}") from None

    def __enter__(self) -> SqliteResponseIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None

    def _has_table(self) -> bool:
        if self.con is None:
            return False
        found = self.con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,))
        return found.fetchone() is not None

    def digests(self) -> dict[str, str]:
        if not self._has_table():
            return {}
        assert self.con is not None
        rows = self.con.execute(
            f"SELECT digest, min(path) FROM {TABLE}"
            " WHERE digest IS NOT NULL AND path IS NOT NULL GROUP BY digest"
        )
        return dict(rows.fetchall())

    def missing(self) -> set[tuple[str, str]]:
        """(url, timestamp) of the captures indexed without a file (the archive had no memento)."""
        if not self._has_table():
            return set()
        assert self.con is not None
        rows = self.con.execute(f"SELECT url, timestamp FROM {TABLE} WHERE path IS NULL")
        return set(rows.fetchall())

    def batches(
        self, domain: str | None = None, include_subdomains: bool = True, size: int = 5000
    ) -> Iterator[Batch]:
        """Response batches: the stored columns, ``first_run``, ``last_run``; by url and timestamp."""
        from trawl.sources.responses.records import RESPONSE_SCHEMA, ResponseBatch

        if not self._has_table():
            return
        assert self.con is not None
        where, params = "path IS NOT NULL", []
        if domain:
            domain = domain.lower()
            if include_subdomains:
                where += " AND (host = ? OR host LIKE ? ESCAPE '\\')"
                params = [domain, "%." + _like(domain)]
            else:
                where, params = where + " AND host = ?", [domain]
        columns = list(RESPONSE_SCHEMA)
        names = ", ".join(f'"{c}"' for c in columns)
        cursor = self.con.execute(
            f"SELECT {names}, first_run, last_run FROM {TABLE} WHERE {where} ORDER BY url, timestamp", params
        )
        schema = {**RESPONSE_SCHEMA, "first_run": pl.Int64, "last_run": pl.Int64}
        while rows := cursor.fetchmany(size):
            yield ResponseBatch("responses", pl.DataFrame(rows, schema=schema, orient="row"))


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
