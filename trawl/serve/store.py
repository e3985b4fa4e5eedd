"""The store file ``trawl serve`` opens: checked before datasette starts, indexed for the pages.

datasette opens a file it may change with ``mode=ro``: every page reads, none
writes, and SQLite's WAL lets those readers see each commit of a crawl that
writes meanwhile. The pages' indexes are made here once, at start, with a
short-lived writable connection (as ``trawl search`` makes its own): a crawl
holding the write lock, or a read-only file, leaves them unmade and the pages
slower, never failing. On 5,000,000 URLs the ``host`` index makes the hosts
view and a ``host:`` query an index scan instead of a 1 GB table scan.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

from trawl.errors import StoreError, TrawlUsageError
from trawl.stores.registry import uri_scheme
from trawl.stores.sqlite.search import SEARCH_INDEXES
from trawl.stores.sqlite.store import sqlite_path

#: The pages' indexes: ``trawl search``'s own for ``host`` and ``first_seen`` (the facets, the
#: charts), and ``first_run`` for "new since the last run" (else a scan of every URL).
SERVE_INDEXES = {
    "host": SEARCH_INDEXES["host"],
    "first_seen": SEARCH_INDEXES["first_seen"],
    "first_run": "CREATE INDEX IF NOT EXISTS urls_serve_first_run ON urls(first_run)",
}
#: How long index creation waits for a writing crawl before giving up (the pages work without).
INDEX_BUSY_MS = 2000


def read_only(file: Path | str) -> str:
    """The SQLite URI that opens ``file`` read-only (quoted: a ``?`` or ``#`` in a path is not a query)."""
    return f"file:{quote(str(file))}?mode=ro"


def store_file(uri: str) -> Path:
    """The SQLite file of ``uri``; a store of another kind, or no file, is one line."""
    if uri_scheme(uri) != "sqlite":
        raise TrawlUsageError(
            f"trawl serve reads a SQLite store (sqlite:///path.db), not {uri.split(':', 1)[0]!r}:"
            " trawl search reads the others"
        )
    path = sqlite_path(uri)
    if path == ":memory:":
        raise TrawlUsageError("trawl serve needs a store file, not :memory:")
    file = Path(path).expanduser()
    if not file.is_file():
        raise StoreError(f"no SQLite store at {str(file)!r} (run a crawl first, or give --store)")
    try:
        with sqlite3.connect(read_only(file), uri=True) as con:
            con.execute("SELECT 1 FROM urls LIMIT 1").fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the SQLite store {str(file)!r}: {exc}") from None
    return file.resolve()


def tables(file: Path) -> set[str]:
    """The tables the store holds (the views of the other record kinds exist only where these do)."""
    with sqlite3.connect(read_only(file), uri=True) as con:
        return {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def ensure_indexes(file: Path) -> list[str]:
    """Make :data:`SERVE_INDEXES` that are missing; the names of those that could not be made."""
    missing: list[str] = []
    try:
        con = sqlite3.connect(file, timeout=INDEX_BUSY_MS / 1000)
    except sqlite3.Error:
        return sorted(SERVE_INDEXES)
    try:
        for column, statement in SERVE_INDEXES.items():
            try:
                con.execute(statement)
            except sqlite3.OperationalError:
                missing.append(column)  # a read-only file or a busy writer
    finally:
        con.close()
    return missing
