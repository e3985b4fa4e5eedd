"""Writes batches to the store that ``STORE_URI`` names.

The stores themselves come from plugins (``trawl_register_stores``); this
plugin only opens the chosen one, hands it batches and closes it.
"""

from __future__ import annotations

from collections.abc import Awaitable

from trawl.context import RunContext
from trawl.items import UrlBatch
from trawl.pluginmanager import hookimpl
from trawl.store import Store, create_store

_KEY = "store"


@hookimpl
def trawl_store_open(context: RunContext) -> None:
    uri = context.settings.get("STORE_URI") or ""
    if not uri.strip():
        return  # storing switched off: exports only
    store = create_store(uri.strip(), context, context.plugins)
    store.open()
    context.state[_KEY] = store
    done_pages = getattr(store, "done_pages", None)
    if done_pages is not None:
        # Pages this run stored before it was stopped: a resumed crawl skips them.
        context.state["done_pages"] = done_pages(context.source)


@hookimpl
def trawl_store_write_batch(batch: UrlBatch, context: RunContext) -> int | Awaitable[int] | None:
    store: Store | None = context.state.get(_KEY)
    if store is None:
        return None
    # A store with an async write path is awaited by the pipeline, so a slow
    # cluster does not hold up the reactor.
    write_async = getattr(store, "write_batch_async", None)
    if write_async is not None:
        return write_async(batch)
    return store.write_batch(batch)


@hookimpl
def trawl_store_close(context: RunContext, reason: str) -> None:
    store: Store | None = context.state.pop(_KEY, None)
    if store is not None:
        store.close(reason)
