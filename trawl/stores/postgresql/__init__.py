"""The PostgreSQL store (``STORE_URI=postgresql://user[:password]@host[:port]/db``), registered
the way a third-party store is; the shared store of distributed runs.

* :mod:`.connection`: the URI checked, its password masked, the server probed at start;
* :mod:`.schema`: the tables, and the merge rule as one ``INSERT ... ON CONFLICT`` statement;
* :mod:`.merge`: a batch ``COPY``-ed into the staging table and merged;
* :mod:`.kinds`: every declared record kind (``KEY``, ``MERGE``, ``NEWER``, staged
  snapshots and their switch) in a table of its own, as the SQLite store keeps them;
* :mod:`.writer`: the store's writer thread (the reactor never waits on the server);
* :mod:`.store`: :class:`PostgresStore`, the contract's Protocols; its settings in :mod:`.config`;
* :mod:`.outage`: a lost connection waited out, up to ``POSTGRES_OUTAGE_MAX``;
* :mod:`.readside`, :mod:`.reading`: exports, ``trawl report``;
* :mod:`.query`, :mod:`.search`: ``trawl search``, the query language as PostgreSQL SQL;
* :mod:`.errors`: failures as one line naming the cause.
"""

from __future__ import annotations

from trawl import hookimpl
from trawl.lazyclasses import LazyClasses, lazy_attributes

__all__ = ["PostgresStore", "trawl_register_stores"]

# Imported on first use: psycopg costs a command that reads another store 0.1-0.2 s of CPU.
_STORE = "trawl.stores.postgresql.store:PostgresStore"
__getattr__ = lazy_attributes(__name__, {"PostgresStore": _STORE})
_STORES = LazyClasses({"postgresql": _STORE, "postgres": _STORE})


@hookimpl
def trawl_register_stores() -> LazyClasses:
    return _STORES
