"""A dump load starts from empty staging tables, in whichever store it loads into.

The store keeps a snapshot's rows apart until its switch (``<kind>_records_next``,
:mod:`trawl.records.kinds`), and the switch renames every staged table over its
live one. A load that did not end (a failed table, Ctrl-C, ``kill -9``) leaves
its staged rows behind; before, the next load emptied a staged table only when
it wrote to it, so a newer dump without ``versions.csv`` switched in the
versions the failed load had staged. :func:`empty_staging` drops every staged
table of the dump's kinds before the first batch (SQLite: on the store's writer
thread, and the bulk load's scratch files of processes that are gone,
:func:`trawl.stores.sqlite.bulk.remove_leftovers`; PostgreSQL: on a connection of
its own, under the schema lock). Another store (Elasticsearch) keeps its own rules.
The load holds the store's load lock meanwhile (:mod:`.loadlock`): no other load's
tables are dropped.
"""

from __future__ import annotations

import os
import re
from typing import Any

from trawl.sources.crates.records import DumpSnapshotBatch
from trawl.sources.crates.tables import TABLES

#: The page key of a staged batch (:attr:`.dump.DumpBatch.page`): ``<snapshot>/<table>#<n>``.
STAGED_PAGE = re.compile(rf"[^/]+/(?:{'|'.join(TABLES)})#\d+")


def is_staged_page(page: str) -> bool:
    return STAGED_PAGE.fullmatch(page) is not None


def empty_staging(store: Any, source: str) -> list[str]:
    """Drop the staged tables of the dump's kinds in ``store``; the names of those that were there
    (and of the scratch files removed). The pages of the staged batches this run stored before
    (a resumed run: ``JOBDIR``) are forgotten with them: their rows are written again.

    Blocking: called off the reactor (``deferToThread``). Raises the store's error.
    """
    kinds = tuple(DumpSnapshotBatch.SWITCHES)
    run = int(getattr(store, "run", 0) or 0)
    from trawl.stores.sqlite.store import SqliteStore

    if isinstance(store, SqliteStore):
        from trawl.stores.sqlite import bulk, prestage
        from trawl.stores.sqlite import kinds as sqlite_kinds

        def drop() -> list[str]:
            store.ledger.forget_noted()
            return sqlite_kinds.drop_staged(store.connection, kinds, run, source, is_staged_page)

        dropped = store.on_writer(drop)
        gone = bulk.remove_leftovers(store.path) if store.path != ":memory:" else []
        gone += prestage.remove_leftovers(store.path) if store.path != ":memory:" else []
        return dropped + [os.path.basename(path) for path in gone]
    postgres = _postgres_store_class()
    if postgres is not None and isinstance(store, postgres):
        from trawl.stores.postgresql import connection
        from trawl.stores.postgresql import kinds as pg_kinds
        from trawl.stores.postgresql.schema import SCHEMA_LOCK

        with connection.connect(store.uri, store.timeout, autocommit=True) as con:
            return pg_kinds.drop_staged(con, kinds, SCHEMA_LOCK, run, source, is_staged_page)
    return []


def _postgres_store_class() -> type | None:
    try:
        from trawl.stores.postgresql.store import PostgresStore
    except ImportError:  # psycopg not installed: no PostgreSQL store can be open
        return None
    return PostgresStore
