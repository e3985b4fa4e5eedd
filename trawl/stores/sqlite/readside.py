"""The SQLite store's class-level read side: what exports, ``trawl report``, ``trawl crates``, the
responses index and ``trawl search`` read from a store file, each on a connection of its own.

A mixin of :class:`~trawl.stores.sqlite.store.SqliteStore` (one declared store contract), kept apart
from the write path; like the store's class it imports polars and the readers only when called.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from trawl.errors import TrawlUsageError

if TYPE_CHECKING:
    import polars as pl

    from trawl.records.batches import Batch, UrlBatch

#: Rows of one frame read back (exports, ``-o`` of ``crawl all``): big frames, few statements.
READ_FRAME_ROWS = 50_000
#: URLs alone read back at a time: one text of ~5 MB.
READ_URLS_ROWS = 50_000


def sqlite_path(uri: str) -> str:
    """``sqlite:///trawl.db`` -> ``trawl.db``; ``sqlite:////abs.db``, ``sqlite:///~/x.db`` too."""
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise TrawlUsageError(
            f"STORE_URI {uri!r}: a SQLite URI has no host (use sqlite:///relative.db"
            " or sqlite:////absolute/path.db)"
        )
    path = unquote(parts.path)
    if path.startswith("/"):
        path = path[1:]
    if not path:
        raise TrawlUsageError(f"STORE_URI {uri!r} names no database file")
    if path == ":memory:":
        return path
    return str(Path(os.path.expanduser(path)))


class SqliteReadSide:
    """Reading a store file by its URI, without opening the store for a run."""

    @classmethod
    def read_runs(
        cls, uri: str, run_ids: list[str], settings: Any = None, size: int = READ_FRAME_ROWS
    ) -> Iterator[UrlBatch]:
        """The URLs the given runs wrote or updated, in batches, as stored now."""
        from trawl.stores.sqlite import reading

        return reading.read_runs(sqlite_path(uri), run_ids, size)

    @classmethod
    def read_run_urls(
        cls, uri: str, run_ids: list[str], settings: Any = None, size: int = READ_URLS_ROWS
    ) -> Iterator[pl.Series]:
        """The URLs alone that the given runs wrote or updated, in chunks (the ``-o`` closing line)."""
        from trawl.stores.sqlite import reading

        return reading.read_run_urls(sqlite_path(uri), run_ids, size)

    @classmethod
    def read_domain(
        cls, uri: str, domain: str, settings: Any = None, size: int = READ_FRAME_ROWS
    ) -> Iterator[UrlBatch]:
        """Every URL of ``domain`` and its subdomains, as stored now, in URL order."""
        from trawl.stores.sqlite import reading

        return reading.read_domain(sqlite_path(uri), domain, size)

    @classmethod
    def list_runs(cls, uri: str, domain: str, settings: Any = None) -> pl.DataFrame:
        """The runs of ``domain``, its parents and its subdomains (``job``: the run id before jobs)."""
        from trawl.stores.sqlite import reading

        return reading.list_runs(sqlite_path(uri), domain)

    @classmethod
    def read_first_seen(
        cls, uri: str, run_ids: list[str], domain: str, settings: Any = None, limit: int | None = None,
        size: int = 5000,
    ) -> Iterator[pl.DataFrame]:  # fmt: skip
        """URLs of ``domain`` that one of ``run_ids`` stored first, in URL order (one join, in SQL)."""
        from trawl.stores.sqlite import reading

        return reading.read_first_seen(sqlite_path(uri), run_ids, domain, limit, size)

    @classmethod
    def response_index(cls, uri: str, settings: Any = None):  # type: ignore[no-untyped-def]
        """The ``response`` records read back (:class:`trawl.stores.sqlite.responses.SqliteResponseIndex`)."""
        from trawl.stores.sqlite.responses import SqliteResponseIndex

        return SqliteResponseIndex(sqlite_path(uri))

    @classmethod
    def read_stored_kind(
        cls, uri: str, batch_type: type[Batch], columns: Sequence[str], settings: Any = None
    ) -> pl.DataFrame:
        """Stored columns of a declared kind, on a read-only connection of its own
        (:class:`~trawl.stores.contract.KindReadableStore`: ``trawl crates``, the crates alerts)."""
        from trawl.stores.sqlite import reading

        return reading.stored_kind(sqlite_path(uri), batch_type, list(columns))

    @classmethod
    def searcher(cls, uri: str, settings: Any = None):  # type: ignore[no-untyped-def]
        """The read side ``scrapy search`` uses (:class:`trawl.stores.sqlite.search.SqliteSearcher`).

        Never called by crawls: the indexes a search needs are created there, not
        in this store's write path.
        """
        from trawl.stores.sqlite.search import SqliteSearcher

        return SqliteSearcher(sqlite_path(uri))
