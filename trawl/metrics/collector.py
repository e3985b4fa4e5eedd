"""The process's metrics, read from every crawler's stats when Prometheus scrapes.

How the values are got, and why: the counters (requests, pages, URLs seen,
unique and new, errors by kind) are the ones trawl's progress line and run
summary already read from Scrapy's stats (:mod:`trawl.common.statkeys`); the pause
seconds and in-flight requests are the source's gate's and the download
handler's (:mod:`trawl.politeness.gate`, :mod:`trawl.politeness.inflight`).
This collector reads them at scrape time (no timer, no signal per request, no
second count kept in the modules that count), so ``/metrics`` says exactly
what the summary will say, and a process that nobody scrapes pays nothing.
Only the store write latency is observed as it happens
(:func:`time_store_write`, around the pipeline's store write): no stat holds
it. The queue depth is whatever the queue last said (:func:`set_queue_depth`)
or answers when asked (:func:`watch_queue_depth`).

One process may run many crawlers, at once (``crawl all``) and one after the
other (a worker): a crawler adds its source's series when its spider opens,
and when its engine stops its last values are folded into the source's
totals, so a counter never goes back when a source's next crawl starts from
zero, and a long-running worker keeps no finished crawler alive.

The scrape runs on the HTTP server's thread: stats are copied (one C-level
dict copy under the GIL) before they are read, and the crawler lists are
guarded by a lock. Labels are source names and error kinds only: never a
URL, a key or a setting's value.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Histogram, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from trawl.common import statkeys
from trawl.politeness.gate import existing_limiter
from trawl.politeness.inflight import in_flight

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

__all__ = [
    "COUNTERS",
    "REGISTRY",
    "crawler_finished",
    "crawler_started",
    "set_queue_depth",
    "time_store_write",
    "watch_queue_depth",
]

#: The process-wide registry the one HTTP server serves (never prometheus_client's global one:
#: a library trawl loads must not add series to trawl's endpoint, nor trawl to a host program's).
REGISTRY = CollectorRegistry()

#: Counter name (``trawl_<name>_total``) -> (the stats key it reads, its help text).
COUNTERS: dict[str, tuple[str, str]] = {
    "requests": ("downloader/request_count", "Requests sent to the source (retries included)"),
    "pages": (statkeys.PAGES, "Upstream pages read"),
    "urls_seen": (statkeys.CAPTURES, "URLs (capture rows) read from the source, before dedup"),
    "urls_unique": (statkeys.URLS_UNIQUE, "URLs passed on, each once per crawl (the summary's 'urls')"),
    "urls_new": (statkeys.URLS_NEW, "URLs the store did not hold before"),
}
_ERRORS_PREFIX = statkeys.ERRORS + "/"
#: ERROR lines beyond the errors trawl counted by kind (a plugin that raised, an exporter).
OTHER_ERRORS = "other"

#: From a millisecond (a SQLite batch) to two minutes (a store that stalls).
WRITE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
STORE_WRITES = Histogram(
    "trawl_store_write_seconds",
    "Seconds from handing a batch to the store to its write being done (the wait behind other "
    "batches included)",
    ["source"],
    buckets=WRITE_BUCKETS,
    registry=REGISTRY,
)
ProcessCollector(registry=REGISTRY)  # CPU, memory, open files: what a long run is watched for


def _values(stats: Mapping[str, Any]) -> dict[tuple[str, str], float]:
    """A crawler's counter values: ``(counter, error kind or "")`` -> value."""
    values: dict[tuple[str, str], float] = {}
    for name, (key, _) in COUNTERS.items():
        values[(name, "")] = float(stats.get(key) or 0)
    counted = 0.0
    for key, value in stats.items():
        if key.startswith(_ERRORS_PREFIX) and isinstance(value, int | float):
            values[("errors", key[len(_ERRORS_PREFIX) :])] = float(value)
            counted += float(value)
    # The summary's count is the larger of trawl's and the ERROR lines logged (trawl.common.outcome).
    logged = float(stats.get(statkeys.LOG_ERRORS) or 0)
    if logged > max(float(stats.get(statkeys.ERRORS) or 0), counted):
        values[("errors", OTHER_ERRORS)] = logged - max(float(stats.get(statkeys.ERRORS) or 0), counted)
    return values


class _Crawls:
    """The crawlers of the process by source, and the totals of those that ended."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live: dict[int, tuple[str, Crawler]] = {}
        self.totals: dict[str, dict[tuple[str, str], float]] = defaultdict(lambda: defaultdict(float))
        self.outcomes: dict[tuple[str, str], int] = defaultdict(int)
        self.queue_depth: dict[str, float] = {}
        self.queue_watchers: list[Callable[[], Mapping[str, float]]] = []

    def add(self, crawler: Crawler, source: str) -> None:
        with self.lock:
            self.live[id(crawler)] = (source, crawler)
            self.totals[source]  # noqa: B018 - the source's series exist from its start, at 0

    def finish(self, crawler: Crawler) -> None:
        stats = dict(crawler.stats.get_stats()) if crawler.stats is not None else {}
        with self.lock:
            entry = self.live.pop(id(crawler), None)
            if entry is None:
                return
            source = entry[0]
            for key, value in _values(stats).items():
                self.totals[source][key] += value
            self.outcomes[(source, str(stats.get(statkeys.OUTCOME) or "unknown"))] += 1

    def snapshot(self) -> tuple[dict[str, dict[tuple[str, str], float]], dict[str, int], dict[str, int]]:
        """(counter values, crawls running, requests in flight), by source."""
        with self.lock:
            live = list(self.live.values())
            values = {source: dict(totals) for source, totals in self.totals.items()}
        running: dict[str, int] = defaultdict(int)
        flying: dict[str, int] = defaultdict(int)
        for source, crawler in live:
            running[source] += 1
            flying[source] += len(in_flight(crawler))
            stats = dict(crawler.stats.get_stats()) if crawler.stats is not None else {}
            mine = values.setdefault(source, {})
            for key, value in _values(stats).items():
                mine[key] = mine.get(key, 0.0) + value
        return values, running, flying

    def depths(self) -> dict[str, float]:
        with self.lock:
            depths = dict(self.queue_depth)
            watchers = list(self.queue_watchers)
        for watcher in watchers:
            try:
                depths.update(watcher())
            except Exception as exc:  # noqa: BLE001 - a queue that cannot answer: its last values stand
                logger.debug("metrics: the queue depth could not be read: %s", exc)
        return depths


_CRAWLS = _Crawls()


class TrawlCollector(Collector):
    """Builds the per-source families at each scrape (see the module docstring)."""

    def collect(self) -> Iterator[Metric]:
        values, running, flying = _CRAWLS.snapshot()
        sources = sorted(values)
        for name, (_, text) in COUNTERS.items():
            family = CounterMetricFamily(f"trawl_{name}", text, labels=["source"])
            for source in sources:
                family.add_metric([source], values[source].get((name, ""), 0.0))
            yield family
        errors = CounterMetricFamily(
            "trawl_errors",
            "Errors by kind: trawl's own (http, unreachable, malformed, ...) and other ERROR lines",
            labels=["source", "kind"],
        )
        for source in sources:
            for (name, kind), value in sorted(values[source].items()):
                if name == "errors":
                    errors.add_metric([source, kind], value)
        yield errors
        pauses = CounterMetricFamily(
            "trawl_pauses", "Pauses of the source's gate (Retry-After, 429, bans)", labels=["source"]
        )
        paused = CounterMetricFamily(
            "trawl_pause_seconds",
            "Seconds the source's gate has held every request (a running pause so far)",
            labels=["source"],
        )
        for source in sources:
            limiter = existing_limiter(source)
            pauses.add_metric([source], float(getattr(limiter, "pauses", 0) or 0))
            waited = getattr(limiter, "waited", None)
            paused.add_metric([source], max(0.0, float(waited())) if callable(waited) else 0.0)
        yield pauses
        yield paused
        yield _gauge("trawl_requests_in_flight", "Requests sent and not answered yet", sources, flying)
        yield _gauge("trawl_crawls_running", "Crawls of the source running in this process", sources, running)
        with _CRAWLS.lock:
            outcomes = dict(_CRAWLS.outcomes)
        done = CounterMetricFamily(
            "trawl_crawls", "Crawls that ended in this process, by outcome", labels=["source", "outcome"]
        )
        for (source, outcome), count in sorted(outcomes.items()):
            done.add_metric([source, outcome], float(count))
        yield done
        depth = GaugeMetricFamily(
            "trawl_queue_depth", "Requests waiting in the shared queue (set by the queue)", labels=["source"]
        )
        for source, value in sorted(_CRAWLS.depths().items()):
            depth.add_metric([source], float(value))
        yield depth


def _gauge(name: str, text: str, sources: list[str], values: Mapping[str, int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, text, labels=["source"])
    for source in sources:
        family.add_metric([source], float(values.get(source, 0)))
    return family


REGISTRY.register(TrawlCollector())


def crawler_started(crawler: Crawler, source: str) -> None:
    """The crawler's series from now on (its spider has opened)."""
    _CRAWLS.add(crawler, source)


def crawler_finished(crawler: Crawler) -> None:
    """Its last values into the source's totals; the crawler itself is let go."""
    _CRAWLS.finish(crawler)


def set_queue_depth(source: str, depth: float) -> None:
    """The queue says how many requests of ``source`` wait in it (``trawl_queue_depth``).

    For a queue that counts as it pushes and pops. Any thread may call it.
    The value stays until set again; 0 when the source's queue is empty.
    """
    with _CRAWLS.lock:
        _CRAWLS.queue_depth[source] = depth


def watch_queue_depth(read: Callable[[], Mapping[str, float]]) -> None:
    """``read()`` is asked for ``{source: depth}`` at every scrape, for a queue that is asked.

    It runs on the HTTP server's thread (a Redis client of its own, not the
    reactor's); one that raises leaves the last values set. Its values win over
    :func:`set_queue_depth`'s for the sources it names.
    """
    with _CRAWLS.lock:
        _CRAWLS.queue_watchers.append(read)


#: Set by the server once it serves: before that (and with metrics off) nothing is observed.
SERVING = threading.Event()


@contextmanager
def time_store_write(source: str) -> Iterator[None]:
    """Observe the seconds of one store write of ``source`` (``trawl_store_write_seconds``)."""
    if not SERVING.is_set():
        yield
        return
    started = time.monotonic()
    try:
        yield
    finally:
        STORE_WRITES.labels(source).observe(time.monotonic() - started)
