"""The hooks a trawl plugin can implement. All of them, in one place.

A plugin is a module (or any object) with functions decorated by
``trawl.hookimpl`` (``from trawl import hookimpl``) and named after the
specifications below. A third-party package registers it under the ``trawl``
entry-point group of its own ``pyproject.toml``::

    [project.entry-points.trawl]
    my_filter = "my_package.my_filter"

trawl's own normalizer, filters, dedup, stores and sources implement the same
hooks and nothing else, so anything they do a third-party plugin can do,
replace or extend; they are registered in code
(``trawl.pluginmanager.DEFAULT_PLUGINS``), and the essential ones cannot be
switched off. docs/plugins.md is the reference.

Batch hooks receive whole batches: a plugin that loops over rows in Python is
fine, but it is called once per upstream page, not once per URL.

Per-run state belongs in ``context.state`` (a dict), not in module globals: one
process may run several crawls at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from scrapy import Spider

    from trawl.context import RunContext
    from trawl.items import CaptureBatch, UrlBatch
    from trawl.store import StoreFactory

#: Both markers live here, next to the specifications, so that ``import trawl``
#: (which re-exports them) costs pluggy and nothing else.
hookspec = pluggy.HookspecMarker("trawl")
hookimpl = pluggy.HookimplMarker("trawl")


@hookspec
def trawl_register_sources() -> dict[str, type[Spider]]:
    """Return ``{name: SpiderClass}`` for the sources this plugin adds.

    Each name becomes a spider that ``scrapy crawl NAME`` runs, next to the
    spiders in ``SPIDER_MODULES``.
    """


@hookspec
def trawl_register_stores() -> dict[str, StoreFactory]:
    """Return ``{uri_scheme: factory}`` for the stores this plugin adds.

    ``STORE_URI`` picks one by its scheme (``sqlite:///trawl.db`` picks
    ``"sqlite"``). The factory is called as ``factory(uri, context)`` and returns
    an object with ``open()``, ``write_batch(batch) -> int`` and
    ``close(reason)`` (see :class:`trawl.store.Store`).
    """


@hookspec
def trawl_open(context: RunContext) -> None:
    """A crawl starts: set up per-run state in ``context.state``."""


@hookspec
def trawl_normalize_batch(batch: CaptureBatch, context: RunContext) -> None:
    """Rewrite ``batch.urls`` in place to canonical form.

    A URL that cannot be read as a web URL becomes ``None``; the scope filter
    then drops it and counts it. Implementations run in registration order
    reversed (pluggy's LIFO); use ``tryfirst``/``trylast`` to place yours.
    """


@hookspec
def trawl_filter_batch(batch: CaptureBatch, context: RunContext) -> list[bool] | None:
    """Return a keep-flag per row, or ``None`` to keep every row.

    Every implementation sees the whole normalized batch; a row survives only if
    no implementation flags it ``False``. Count what you drop in
    ``context.stats`` under ``trawl/filtered/<reason>`` so the summary shows it.
    """


@hookspec(firstresult=True)
def trawl_dedup_batch(batch: CaptureBatch, context: RunContext) -> UrlBatch | None:
    """Collapse the batch's captures into one record per canonical URL.

    The first implementation that returns a :class:`~trawl.items.UrlBatch` wins.
    It gathers provenance (sources, first and last capture, capture count,
    statuses, mime types) and lists in ``UrlBatch.repeats`` the URLs already
    passed on earlier in this run, so that exports write each URL once.
    """


@hookspec
def trawl_store_open(context: RunContext) -> None:
    """Open the store(s) this plugin writes to; fail with ``StoreError``."""


@hookspec
def trawl_store_write_batch(batch: UrlBatch, context: RunContext) -> int | None:
    """Write a batch, merging provenance into rows already stored.

    Return how many of the batch's URLs the store did not have before, and set
    ``batch.new`` on those; return ``None`` if this implementation stores
    nothing. One batch is one transaction: a crash loses at most this batch.
    A store that talks to a server may return an awaitable of that number
    instead: the pipeline awaits it without blocking the reactor.
    """


@hookspec
def trawl_store_close(context: RunContext, reason: str) -> None:
    """Flush and close the store(s); ``reason`` is Scrapy's finish reason."""


@hookspec
def trawl_close(context: RunContext, reason: str) -> None:
    """A crawl ends: release per-run state."""
