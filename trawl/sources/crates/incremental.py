"""``-a mode=incremental``: the daily top-up after a db-dump load; what the API modes read from the store.

The listing sorted by ``recent-updates`` (newest first) is read until the first
crate whose ``updated_at`` the store already has (or a newer one): every crate
after it is older, so known; only the crates before it are fetched in full
(:class:`~trawl.sources.crates.api.ApiCrawl`). A crate's own row is stored
after its versions, downloads and dependencies, so a stored ``updated_at``
always means the rest is stored: a run cut short is caught up by the next.

The store is read once, at the start, through the optional
:class:`~trawl.stores.contract.KindReadingStore` (``read_kind``): each crate's
id (the API names crates by name only; :mod:`.apirecords`) and ``updated_at``.
``mode=api`` reads the ids the same way when the store can, and uses stand-in
ids when it cannot; ``mode=incremental`` cannot work without the read, and
says so in one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trawl.sources.crates.api import Known, known_crates
from trawl.sources.crates.apifetch import Stop
from trawl.sources.crates.records import CrateBatch
from trawl.stores.contract import KindReadingStore

if TYPE_CHECKING:
    from trawl.sources.crates.host import CratesHost


def read_known(spider: CratesHost, mode: str) -> Known:
    """The store's crates (ids, ``updated_at``); :class:`Stop` (after one ERROR line) when
    ``incremental`` has nothing to start from."""
    context = getattr(spider, "run_context", None)
    store = getattr(context, "store", None)
    if store is None:
        if mode == "incremental":  # configure_kind refused a run without STORE_URI; the store failed
            spider.record_error("store", "-a mode=incremental reads the store, and there is none open")
            raise Stop
        return Known()
    if not isinstance(store, KindReadingStore):
        if mode == "incremental":
            spider.record_error(
                "store",
                "-a mode=incremental reads each crate's updated_at back from the store, and %s cannot"
                " (it has no read_kind); use a SQLite store (STORE_URI=sqlite:///...)",
                type(store).__name__,
            )
            raise Stop
        spider.logger.warning(
            "%s: the store %s cannot read crates back: crates get stand-in ids, not the db-dump's",
            spider.name,
            type(store).__name__,
        )
        return Known()
    known = known_crates(store.read_kind(CrateBatch, ["id", "name", "updated_at"]))
    if mode == "incremental" and not known.updated:
        spider.record_error(
            "store",
            "-a mode=incremental tops up a store that holds crates, and this one holds none:"
            " load the db-dump first (-a mode=dump)",
        )
        raise Stop
    return known
