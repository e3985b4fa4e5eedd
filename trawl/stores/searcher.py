"""The read side of stores for ``scrapy search``: one query language, any store.

A store that implements :class:`~trawl.stores.contract.SearchableStore` gives
a :class:`~trawl.stores.contract.Searcher` for a ``STORE_URI``; the query is a
:mod:`trawl.search.query` syntax tree, which each store translates for itself.
"""

from __future__ import annotations

from typing import Any

from trawl.stores.contract import Searcher
from trawl.stores.registry import store_class


def open_searcher(uri: str, settings: Any, plugins: Any) -> Searcher:
    """The searcher of the store ``uri`` names; one-line ``TrawlUsageError`` if it has none."""
    klass: Any = store_class(uri, plugins, needs=("search",))
    klass.check_uri(uri)
    return klass.searcher(uri, settings)
