"""The embedded SQLite store, registered the way a third-party store is."""

from __future__ import annotations

from trawl import hookimpl
from trawl.stores.sqlite.store import SqliteStore, sqlite_path

__all__ = ["SqliteStore", "sqlite_path", "trawl_register_stores"]


@hookimpl
def trawl_register_stores() -> dict[str, type[SqliteStore]]:
    return {"sqlite": SqliteStore}
