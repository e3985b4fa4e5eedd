"""What a store is, and how ``STORE_URI`` picks one.

Stores are added by plugins (``trawl_register_stores``); this module only
knows the interface and the lookup, so the SQLite store is no more built in
than a third-party one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from trawl.errors import TrawlUsageError

if TYPE_CHECKING:
    import pluggy

    from trawl.context import RunContext
    from trawl.items import UrlBatch


class Store(Protocol):
    """A place where URL records live across runs."""

    def open(self) -> None:
        """Connect and create what is missing; raise ``StoreError`` if impossible."""

    def write_batch(self, batch: UrlBatch) -> int:
        """Merge the batch in one transaction; return the number of new URLs."""

    def close(self, reason: str) -> None:
        """Record the run's end and release resources."""


StoreFactory = Callable[[str, "RunContext"], Store]


def uri_scheme(uri: str) -> str:
    """``sqlite:///x.db`` -> ``sqlite``; ``elasticsearch+https://h`` -> ``elasticsearch``."""
    scheme = urlsplit(uri).scheme.lower()
    if not scheme:
        raise TrawlUsageError(f"STORE_URI {uri!r} has no scheme (expected e.g. sqlite:///trawl.db)")
    return scheme.split("+", 1)[0]


def store_factories(pm: pluggy.PluginManager) -> dict[str, StoreFactory]:
    """All stores the registered plugins offer, by URI scheme."""
    factories: dict[str, StoreFactory] = {}
    for registered in pm.hook.trawl_register_stores():
        factories.update(registered or {})
    return factories


def _factory(uri: str, pm: pluggy.PluginManager) -> StoreFactory:
    scheme = uri_scheme(uri)
    factories = store_factories(pm)
    if scheme not in factories:
        known = ", ".join(sorted(factories)) or "none"
        raise TrawlUsageError(f"no store for STORE_URI scheme {scheme!r} (known: {known})")
    return factories[scheme]


def check_store_uri(uri: str, pm: pluggy.PluginManager) -> None:
    """Raise ``TrawlUsageError`` for a ``STORE_URI`` no store can use, before any crawl starts.

    A factory may offer ``check_uri(uri)`` to validate the rest of the URI.
    """
    check = getattr(_factory(uri, pm), "check_uri", None)
    if check is not None:
        check(uri)


def create_store(uri: str, context: RunContext, pm: pluggy.PluginManager) -> Store:
    """Build (not open) the store that ``uri`` names."""
    return _factory(uri, pm)(uri, context)
