"""The PostgreSQL store's read side: exports, ``trawl report``, ``trawl search``, ``trawl crates``.

Class methods on a connection of their own (:mod:`.reading`), never the writer's:
they run in processes that write nothing (a report, a search) as well as after a
crawl. Kept apart from :mod:`.store`, whose instances write.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from trawl.records.batches import Batch, UrlBatch
from trawl.stores.postgresql import reading

if TYPE_CHECKING:
    from trawl.stores.postgresql.search import PostgresSearcher

#: Rows of one frame read back (exports, ``-o`` of ``crawl all``).
READ_FRAME_ROWS = 50_000


class PostgresReadSide:
    """What :class:`~trawl.stores.postgresql.store.PostgresStore` reads, as class methods."""

    @classmethod
    def read_stored_kind(
        cls, uri: str, batch_type: type[Batch], columns: Sequence[str], settings: Any = None
    ) -> pl.DataFrame:
        """Stored columns of a declared kind, on a read-only connection of its own
        (:class:`~trawl.stores.contract.KindReadableStore`: ``trawl crates``, the crates alerts)."""
        return reading.stored_kind(uri, settings, batch_type, list(columns))

    @classmethod
    def read_runs(
        cls, uri: str, run_ids: list[str], settings: Any = None, size: int = READ_FRAME_ROWS
    ) -> Iterator[UrlBatch]:
        """The URLs the given runs wrote or updated, in batches, as stored now."""
        return reading.read_runs(uri, settings, run_ids, size)

    @classmethod
    def read_domain(
        cls, uri: str, domain: str, settings: Any = None, size: int = READ_FRAME_ROWS
    ) -> Iterator[UrlBatch]:
        """Every URL of ``domain`` and its subdomains, as stored now, in URL order."""
        return reading.read_domain(uri, settings, domain, size)

    @classmethod
    def list_runs(cls, uri: str, domain: str, settings: Any = None) -> pl.DataFrame:
        """The runs of ``domain``, its parents and its subdomains."""
        return reading.list_runs(uri, settings, domain)

    @classmethod
    def read_first_seen(
        cls, uri: str, run_ids: list[str], domain: str, settings: Any = None, limit: int | None = None,
        size: int = 5000,
    ) -> Iterator[pl.DataFrame]:  # fmt: skip
        """URLs of ``domain`` that one of ``run_ids`` stored first, in URL order."""
        return reading.read_first_seen(uri, settings, run_ids, domain, limit, size)

    @classmethod
    def searcher(cls, uri: str, settings: Any = None) -> PostgresSearcher:
        """The read side ``trawl search`` uses (:class:`trawl.stores.postgresql.search.PostgresSearcher`)."""
        from trawl.stores.postgresql.search import PostgresSearcher

        return PostgresSearcher(uri, settings)
