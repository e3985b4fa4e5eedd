"""The embedded SQLite store, registered the way a third-party store is.

* :mod:`.schema`: the tables and the merge rule as SQL;
* :mod:`.store`: :class:`SqliteStore`, the contract's every Protocol;
* :mod:`.query`: a :mod:`trawl.search` syntax tree as SQL, and the functions it calls;
* :mod:`.search`: ``scrapy search``.
"""

from __future__ import annotations

from trawl import hookimpl
from trawl.stores.sqlite.store import SqliteStore, sqlite_path

__all__ = ["SqliteStore", "sqlite_path", "trawl_register_stores"]


@hookimpl
def trawl_register_stores() -> dict[str, type[SqliteStore]]:
    return {"sqlite": SqliteStore}
