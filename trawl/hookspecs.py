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
(``trawl.pipeline.manager.DEFAULT_PLUGINS``), and the essential ones cannot be
switched off. docs/plugins.md is the reference.

Batch hooks receive whole batches (:mod:`trawl.records.batches`): a polars
``DataFrame`` in ``batch.frame`` and a ``batch.kind`` (``"capture"``,
``"url"``...). Work on whole columns; a plugin that loops over rows in Python
is fine, but it is called once per upstream page, not once per URL.

Per-run state belongs in ``context.state`` (a dict), not in module globals: one
process may run several crawls at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import polars as pl
    from scrapy import Spider

    from trawl.notify.receivers import ReceiverKind
    from trawl.pipeline.context import RunContext
    from trawl.records.batches import Batch
    from trawl.run.summary import RunSummary
    from trawl.stores.contract import WritingStore

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
def trawl_register_stores() -> dict[str, type[WritingStore]]:
    """Return ``{uri_scheme: StoreClass}`` for the stores this plugin adds.

    ``STORE_URI`` picks one by its scheme (``sqlite:///trawl.db`` picks
    ``"sqlite"``). The class is built as ``StoreClass(uri, context)`` and
    implements the Protocols of :mod:`trawl.stores.contract`:
    ``WritingStore`` at least; ``ResumableStore``, ``ReadableStore`` and
    ``SearchableStore`` for resume, ``crawl all -o`` and ``scrapy search``
    (a run that needs one the store lacks is refused in one line). This is
    the only way to add a store.
    """


@hookspec
def trawl_register_notifiers() -> dict[str, type[ReceiverKind]]:
    """Return ``{kind: ReceiverKindClass}`` for the notifier receivers this plugin adds.

    A ``NOTIFY_URLS`` entry ``KIND+https://...`` (or one of the kind's own
    ``schemes``, or a plain ``https://`` URL its ``claims`` recognises) is
    posted what the class's ``payload`` builds. Subclass
    :class:`trawl.notify.receivers.ReceiverKind`; its ``settings_declared``
    are checked and defaulted like any other component's.
    """


@hookspec
def trawl_open(context: RunContext) -> None:
    """A crawl starts: set up per-run state in ``context.state``."""


@hookspec
def trawl_normalize_batch(batch: Batch, context: RunContext) -> None:
    """Rewrite the batch in place (``batch.frame = batch.frame.with_columns(...)``).

    For capture batches (``batch.kind == "capture"``) trawl's normalizer
    makes ``url`` canonical (null where it is not a web URL: the scope filter
    drops and counts it) and adds ``host``. Leave alone the kinds you do not
    handle. Implementations run in registration order reversed (pluggy's
    LIFO); use ``tryfirst``/``trylast`` to place yours.
    """


@hookspec
def trawl_filter_batch(batch: Batch, context: RunContext) -> pl.Series | pl.Expr | None:
    """Return a boolean keep-mask over the batch's rows, or ``None`` to keep every row.

    The mask is a polars ``Series`` (one flag per row of ``batch.frame``) or
    an expression over its columns (``~pl.col("url").str.contains("private")``).
    Every implementation sees the whole normalized batch; a row survives only
    if every mask keeps it. Count what you drop in ``context.stats`` under
    ``trawl/filtered/<reason>`` so the summary shows it.
    """


@hookspec(firstresult=True)
def trawl_dedup_batch(batch: Batch, context: RunContext) -> Batch | None:
    """Collapse a batch's records into one per key; return the new batch, or ``None``.

    The first implementation that returns a batch wins; ``None`` from all of
    them sends the batch to the store as it is. trawl's dedup turns a
    :class:`~trawl.records.batches.CaptureBatch` into a :class:`~trawl.records.batches.UrlBatch`
    (one row per canonical URL with sources, first and last capture, capture
    count, statuses, mime types). Across batches and runs the store merges.
    A batch may hold several upstream pages (``batch.pages``); build the new
    one with ``UrlBatch.for_pages_of(batch, frame)`` so that each stays in the
    store's ledger (a page missing from it is merged twice on resume).
    """


@hookspec
def trawl_batch_stored(batch: Batch, new: int, context: RunContext) -> None:
    """The store has merged the batch (``context.store``; ``None``: no store): count it,
    or trim it in place for the exports (``batch.frame = batch.frame.filter(...)``).

    ``new`` is the number of records the store did not know. The store has set
    the batch's ``new`` and ``repeat`` columns and merged values; what is left
    in ``batch.frame`` after every implementation is what the exports write.
    trawl's ``url_stats`` plugin counts URL batches (``trawl/urls_new``,
    ``trawl/urls_unique``, ``trawl/duplicates``) and applies ``-a new_only=``:
    the pipeline itself knows no record kind. Leave alone the kinds you do not
    handle.
    """


@hookspec
def trawl_close(context: RunContext, reason: str) -> None:
    """A crawl ends: release per-run state."""


@hookspec
def trawl_run_finished(summary: RunSummary) -> None:
    """A run has ended (every source, for ``scrapy crawl all``): report it.

    Called once per ``scrapy crawl`` invocation, after the reactor stopped,
    the exports were written and the exit status was decided, with a
    :class:`~trawl.run.summary.RunSummary` (sources and their counts, the
    outcome, the new URLs). Nothing a plugin does here changes the exit
    status: an exception is one WARNING line. trawl's ``notify`` plugin
    posts the summary to ``NOTIFY_URLS``. Keep it short: the process waits.
    """
