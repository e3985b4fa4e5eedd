"""How ``STORE_URI`` picks a store class, and the one-line refusals.

Stores are added by plugins (``trawl_register_stores`` returns
``{uri_scheme: StoreClass}``): this module knows only the contract and the
lookup, so the SQLite store is no more built in than a third-party one. A
crawl builds the store with :func:`create_store`; ``scrapy search`` opens its
read side with :func:`open_searcher` (the query is a :mod:`trawl.search`
syntax tree, which each store translates for itself).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from trawl.common.secrets import redact
from trawl.errors import TrawlUsageError
from trawl.stores.contract import (
    ExistenceCheckingStore,
    Searcher,
    WritingStore,
    describe_missing,
    missing_capabilities,
)

if TYPE_CHECKING:
    import pluggy

    from trawl.pipeline.context import RunContext


def uri_scheme(uri: str) -> str:
    """``sqlite:///x.db`` -> ``sqlite``; ``elasticsearch+https://h`` -> ``elasticsearch``."""
    scheme = urlsplit(uri).scheme.lower()
    if not scheme:
        raise TrawlUsageError(f"STORE_URI {uri!r} has no scheme (expected e.g. sqlite:///trawl.db)")
    return scheme.split("+", 1)[0]


def store_classes(pm: pluggy.PluginManager) -> Mapping[str, type[WritingStore]]:
    """All stores the registered plugins offer, by URI scheme; a later plugin's scheme wins.

    A class is looked up in its plugin's mapping only when asked for: the built-ins
    register theirs by import path (:class:`~trawl.lazyclasses.LazyClasses`), so
    reading a SQLite store does not import psycopg.
    """
    return ChainMap(*reversed([registered for registered in pm.hook.trawl_register_stores() if registered]))


def store_class(
    uri: str, pm: pluggy.PluginManager, needs: tuple[str, ...] = ("write",)
) -> type[WritingStore]:
    """The class ``uri`` names, checked for the capabilities ``needs``; else one-line ``TrawlUsageError``."""
    scheme = uri_scheme(uri)
    classes = store_classes(pm)
    if scheme not in classes:
        known = ", ".join(sorted(classes)) or "none"
        raise TrawlUsageError(f"no store for STORE_URI scheme {scheme!r} (known: {known})")
    klass = classes[scheme]
    missing = missing_capabilities(klass, ["write", *needs])
    if missing:
        raise TrawlUsageError(describe_missing(scheme, klass, missing))
    return klass


def readable_store(uri: str, pm: pluggy.PluginManager, needs: tuple[str, ...]) -> type[WritingStore]:
    """The class of an existing store to read, checked for ``needs``: a store that is not there
    (a path with a typo) is one :class:`~trawl.errors.StoreError` line, not an empty answer."""
    klass = store_class(uri, pm, needs)
    klass.check_uri(uri)
    if isinstance(klass, ExistenceCheckingStore):
        klass.check_exists(uri)
    return klass


def check_store_uri(uri: str, pm: pluggy.PluginManager, needs: tuple[str, ...] = ()) -> None:
    """Raise ``TrawlUsageError`` for a ``STORE_URI`` no store can use, before any crawl starts."""
    store_class(uri, pm, needs).check_uri(uri)


def create_store(uri: str, context: RunContext, pm: pluggy.PluginManager) -> WritingStore:
    """Build (not open) the store that ``uri`` names."""
    return store_class(uri, pm)(uri, context)


def open_searcher(uri: str, settings: Any, pm: pluggy.PluginManager) -> Searcher:
    """The searcher of the store ``uri`` names; one-line ``TrawlUsageError`` if it has none."""
    klass: Any = store_class(uri, pm, needs=("search",))
    klass.check_uri(uri)
    return klass.searcher(uri, settings)


def describe_store_uri(uri: str, pm: pluggy.PluginManager) -> str:
    """The store as the start of a run logs it: resolved (a SQLite file's absolute path), no credentials."""
    if not uri:
        return "none (STORE_URI is empty: exports only)"
    describe = getattr(store_class(uri, pm), "describe_uri", None)
    shown = describe(uri) if describe is not None else uri
    parts = urlsplit(shown)
    if parts.password:
        shown = shown.replace(f":{parts.password}@", ":***@", 1)
    return redact(shown)
