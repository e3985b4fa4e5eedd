"""Stopping a crawl: the real close reason, every wait cut short, and the signals that ask for it.

Scrapy sets ``finish_reason`` in the stats only after the item pipelines have
closed, so the pipeline, which records the end of the run in the store and in
``JOBDIR``, read no reason and took every run as ``finished``: after a Ctrl-C,
a SIGTERM or a store error the rerun started new runs and fetched everything
again. The engine knows the reason from the first call of
``close_spider_async(reason=...)`` (Scrapy 2.19, ``scrapy/core/engine.py``:
``shutdown`` from a signal, ``store_error`` from the pipeline, ``finished`` when
idle); :func:`watch` records it there, before anything closes, and sends
:data:`stopping` so that every wait of the crawler ends:

* the source's gate (a ``Retry-After: 900`` pause, a retry's backoff) and the
  proxy rotation (every proxy resting) give their waiting requests up as
  :class:`Abandoned`: no error, not stored, so a resumed run fetches them;
* a source's own waits (:meth:`trawl.sources.base.SourceSpider.wait`) end at once.

Before, one SIGTERM while a source sat out a ``Retry-After: 900`` left the
process running for the rest of the 900 s; a dead proxy kept it 85 s.

The process's signals (:func:`install`): the first SIGINT or SIGTERM is
Scrapy's graceful stop (the engine closes with ``shutdown``, the run is
recorded as such, the summary is written, the exit status is 1); a second one
is Scrapy's forced stop, after which the command still writes the summary and
exits 1, not 0. After the reactor has stopped (the notification wait) a signal
ends that wait; before it has started, :mod:`trawl.common.startup` makes a signal one line.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import IgnoreRequest

from trawl.common import statkeys

if TYPE_CHECKING:
    from scrapy.crawler import Crawler, CrawlerProcessBase
    from twisted.internet.defer import Deferred

#: Scrapy signal, sent once per crawler with ``reason`` when its engine starts closing the
#: spider: before the downloader, the pipelines and ``spider_closed``.
stopping = object()

#: Exit status of a run stopped by a signal (partial, like every incomplete run).
EXIT_STOPPED = 1
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Abandoned(IgnoreRequest):
    """A request given up because its crawler is stopping: not an error; a resumed run fetches it."""


class _Signals:
    """What the process's signal handlers saw (set from a signal handler: plain attributes only)."""

    def __init__(self) -> None:
        self.count = 0
        #: Set by any SIGINT/SIGTERM: waits outside the reactor (the notifications) end on it.
        self.interrupted = threading.Event()


SIGNALS = _Signals()


# --- the close reason and the crawler's waits -----------------------------------------------


def watch(crawler: Crawler) -> None:
    """Record the engine's close reason as it starts closing, and send :data:`stopping` then.

    The engine calls its own ``close_spider_async`` through ``self`` (idle,
    ``stop_async``, start errors), so an attribute on the instance sees every
    call; the first call's reason is the one the engine keeps.
    """
    engine = crawler.engine
    if engine is None or getattr(engine, "_trawl_watched", False):
        return
    original = engine.close_spider_async

    async def close_spider_async(*, reason: str = "cancelled") -> None:
        if crawler.stats.get_value(statkeys.CLOSE_REASON) is None:
            crawler.stats.set_value(statkeys.CLOSE_REASON, reason)
            crawler.signals.send_catch_log(signal=stopping, reason=reason)
        await original(reason=reason)

    engine.close_spider_async = close_spider_async  # type: ignore[method-assign]
    engine._trawl_watched = True  # type: ignore[attr-defined]


def close_reason(crawler: Crawler) -> str | None:
    """Why the engine is closing this crawler's spider (``finished``, ``shutdown``...), or ``None`` yet."""
    return crawler.stats.get_value(statkeys.CLOSE_REASON)


def is_stopping(crawler: Crawler | None) -> bool:
    return crawler is not None and crawler.stats is not None and close_reason(crawler) is not None


async def interruptible(crawler: Crawler | None, wait: Deferred[Any]) -> bool:
    """Await ``wait`` (a timer); cancel it when ``crawler`` starts stopping. True if it ran out in full."""
    from scrapy.utils.defer import maybe_deferred_to_future
    from twisted.internet.defer import CancelledError

    if crawler is None:
        await maybe_deferred_to_future(wait)
        return True
    if is_stopping(crawler):
        wait.cancel()
        wait.addErrback(lambda failure: failure.trap(CancelledError))
        return False

    def cancel(reason: str) -> None:
        wait.cancel()

    crawler.signals.connect(cancel, signal=stopping, weak=False)
    try:
        await maybe_deferred_to_future(wait)
        return True
    except CancelledError:
        return False
    finally:
        crawler.signals.disconnect(cancel, signal=stopping)


# --- the process's signals ---------------------------------------------------------------------


def install(process: CrawlerProcessBase) -> None:
    """Count the signals Scrapy's handlers receive while the reactor runs (before ``start()``).

    Scrapy installs ``process._signal_shutdown`` once the reactor has started and
    swaps in ``process._signal_kill`` on the first signal, both looked up on the
    instance: wrapped here, they still do what Scrapy does.
    """

    def counted(handler: Callable[[int, Any], None]) -> Callable[[int, Any], None]:
        def handle(signum: int, frame: Any) -> None:
            SIGNALS.count += 1
            SIGNALS.interrupted.set()
            handler(signum, frame)

        return handle

    process._signal_shutdown = counted(process._signal_shutdown)  # type: ignore[method-assign]
    process._signal_kill = counted(process._signal_kill)  # type: ignore[method-assign]


def _after_handler(signum: int, _frame: Any) -> None:
    SIGNALS.count += 1
    if SIGNALS.interrupted.is_set():  # a second signal: stop at once, and say it failed
        sys.stderr.write(f"trawl: stopped by {signal.Signals(signum).name}\n")
        sys.stderr.flush()
        os._exit(EXIT_STOPPED)
    SIGNALS.interrupted.set()


def install_after_reactor() -> None:
    """Once the reactor has stopped: the first signal ends the waits left (notifications), a second exits.

    Scrapy's handlers stay installed after its reactor stops and do nothing
    there: SIGTERM and a double SIGINT were ignored while a hanging receiver
    was waited for. After a graceful stop (one signal) the notifications are
    still sent and waited for; after a forced one they are not.
    """
    if not forced():
        SIGNALS.interrupted.clear()
    for signum in _SIGNALS:
        signal.signal(signum, _after_handler)


def forced() -> bool:
    """A second signal stopped the reactor before the engines had closed."""
    return SIGNALS.count >= 2
