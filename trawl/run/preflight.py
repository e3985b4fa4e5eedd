"""What a run checks before its first request: the store, the proxies, the shared gate, the paths, metrics.

One function for every way a crawl starts (``trawl crawl``, ``crawl all``, and
a ``trawl worker`` task, which is ``crawl all`` for one source in the worker's
process), so that a worker refuses exactly what the command line refuses, with
the same one line. Each check raises :class:`~trawl.errors.TrawlUsageError`.
Some of them wait on the network (a ``PING`` of the shared gate's Redis, a
PostgreSQL connection): a worker runs this on a thread, never on its reactor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trawl.common.paths import check_export_paths, check_jobdir
from trawl.distributed.gatecheck import check_shared_gate
from trawl.metrics.server import start_metrics
from trawl.politeness.proxies import read_proxy_list
from trawl.stores.registry import check_store_uri

if TYPE_CHECKING:
    import pluggy


def store_needs(settings: Any, exports: bool = False) -> tuple[str, ...]:
    """The store capabilities a run relies on (resume for ``JOBDIR``, read for ``all -o``)."""
    needs = ("resume",) if settings.get("JOBDIR") else ()
    return (*needs, "read") if exports else needs


def check_paths(settings: Any) -> None:
    """The ``-o``/``-O`` files and ``JOBDIR`` can be written (:mod:`trawl.common.paths`)."""
    check_export_paths(settings.getdict("FEEDS"))
    if settings.get("JOBDIR"):
        check_jobdir(str(settings.get("JOBDIR")))


def check_run(
    settings: Any, plugins: pluggy.PluginManager, exports: bool = False, redis_checked: bool = False
) -> None:
    """Everything a run needs that its settings name answers; a port for metrics is listened on.

    ``redis_checked``: the caller is a worker, which reached Redis at its start and waits out
    an outage itself; a task taken just before an outage must wait too, not fail its check.
    """
    uri = str(settings.get("STORE_URI") or "").strip()
    if uri:  # a bad STORE_URI would otherwise fail inside the reactor, with a traceback
        check_store_uri(uri, plugins, store_needs(settings, exports))
    read_proxy_list(settings)  # a socks5 proxy: one line, not a traceback
    if not redis_checked:
        check_shared_gate(settings)  # TRAWL_REDIS_URL that does not answer: one line
    check_paths(settings)
    start_metrics(settings)  # a port in use: one line, before anything is sent
