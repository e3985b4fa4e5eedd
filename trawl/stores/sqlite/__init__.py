"""The embedded SQLite store, registered the way a third-party store is.

* :mod:`.schema`: the tables and the merge rule as SQL;
* :mod:`.store`: :class:`SqliteStore`, the contract's every Protocol;
* :mod:`.query`: a :mod:`trawl.search` syntax tree as SQL, and the functions it calls;
* :mod:`.search`: ``scrapy search``.
"""

from __future__ import annotations

from trawl import hookimpl
from trawl.lazyclasses import LazyClasses, lazy_attributes

__all__ = ["SqliteStore", "sqlite_path", "trawl_register_stores"]

# Imported on first use: registering the plugin costs a command that reads no store nothing.
_STORE = "trawl.stores.sqlite.store:SqliteStore"
__getattr__ = lazy_attributes(
    __name__, {"SqliteStore": _STORE, "sqlite_path": "trawl.stores.sqlite.store:sqlite_path"}
)
_STORES = LazyClasses({"sqlite": _STORE})


@hookimpl
def trawl_register_stores() -> LazyClasses:
    return _STORES
