"""What the run's own store holds already, read for a source: the one place a source reaches the store.

A source reads the store it writes to in three ways: the stored URLs it works on
(the probe, the live crawl and the responses source select them with a query),
the index of stored response files (downloaded once per digest), and the files
mined before. Finding the store class means building the plugin manager and
looking the ``STORE_URI`` scheme up in the registry: that is the pipeline's
business, so it is done here once, and no source imports the registry or the
plugin manager (``tests/test_layers.py`` fails if one does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trawl.pipeline.manager import plugin_manager_from_settings
from trawl.stores.registry import open_searcher, store_class

if TYPE_CHECKING:
    import polars as pl

    from trawl.records.batches import Batch
    from trawl.stores.contract import Searcher


def store_uri(settings: Any) -> str:
    """The run's ``STORE_URI``, stripped ("" when the run writes exports only)."""
    return str(settings.get("STORE_URI") or "").strip()


def check_store_can(settings: Any, needs: tuple[str, ...]) -> None:
    """One-line ``TrawlUsageError`` unless the run's store offers ``needs`` (e.g. ``("responses",)``)."""
    store_class(store_uri(settings), plugin_manager_from_settings(settings), needs=needs)


def stored_searcher(settings: Any, uri: str | None = None, *, build_indexes: bool = False) -> Searcher:
    """The searcher of the run's store (or of ``uri``), by default told not to build search indexes.

    A source that reads while its run writes the same store must not: ``CREATE INDEX``
    would hold the write lock for as long as indexing a million rows takes. One that
    reads everything before it writes (the responses source) may.
    """
    plugins = plugin_manager_from_settings(settings)
    searcher: Any = open_searcher(uri or store_uri(settings), settings, plugins)
    if not build_indexes and hasattr(searcher, "create_indexes"):
        searcher.create_indexes = False
    return searcher


def stored_kind(settings: Any, kind: type[Batch], columns: list[str]) -> pl.DataFrame:
    """``columns`` of every stored record of ``kind`` in the run's store (e.g. the files mined before)."""
    uri = store_uri(settings)
    klass: Any = store_class(uri, plugin_manager_from_settings(settings), needs=("read_kinds",))
    return klass.read_stored_kind(uri, kind, columns, settings)


def stored_response_index(settings: Any) -> Any:
    """The run's store's index of stored response files (close it after use)."""
    uri = store_uri(settings)
    klass: Any = store_class(uri, plugin_manager_from_settings(settings), needs=("responses",))
    return klass.response_index(uri, settings)
