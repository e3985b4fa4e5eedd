"""What a run did, once it has ended: the ``trawl_run_finished`` hook's one argument.

``scrapy crawl`` builds a :class:`RunSummary` after the reactor has stopped
(every source finished, the exports written, the exit status decided) and
calls ``trawl_run_finished(summary)`` once: once for ``scrapy crawl all``,
with every source in it, not once per spider. A ``check_only`` run, or one
refused before it started (exit status 2), calls nothing.

Each implementation is called on its own (:func:`run_finished`): one that
raises is one WARNING line and the others still run; the exit status is the
crawl's. The new URLs come from the store (``ReportingStore.read_first_seen``,
the first ``NOTIFY_MAX_URLS`` in URL order); their count is the store's count
of new URLs for the run (``trawl/urls_new``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from trawl.common import statkeys
from trawl.common.outcome import BLOCKED, COMPLETE, FAILED, PARTIAL, SKIPPED_NO_KEY
from trawl.common.secrets import redact
from trawl.stores.contract import ReportingStore

if TYPE_CHECKING:
    import pluggy

    from trawl.run.crawl_all import SourceRun

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SourceCounts:
    """One source's run: what the end-of-run table of ``crawl all`` prints."""

    source: str
    run_id: str | None
    outcome: str
    requests: int
    pages: int
    urls: int
    new_urls: int
    errors: int
    duration: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "run_id": self.run_id,
            "outcome": self.outcome,
            "requests": self.requests,
            "pages": self.pages,
            "urls": self.urls,
            "new_urls": self.new_urls,
            "errors": self.errors,
            "duration": round(self.duration, 3),
        }


@dataclass(frozen=True)
class RunSummary:
    """A finished run (``crawl NAME``) or job (``crawl all``), for ``trawl_run_finished``.

    ``outcome`` is :mod:`trawl.common.outcome`'s word for a single source; for
    ``crawl all``, ``complete`` when every source counts as done (as for the
    exit status), ``partial`` when some source read pages, ``blocked`` when
    every source that did not complete was blocked, ``failed`` otherwise.
    ``new_urls`` holds the first ``NOTIFY_MAX_URLS`` of ``new_count``.
    ``settings`` are the crawl's, for plugins that read their own.
    """

    domain: str | None
    job_id: str
    outcome: str
    exit_status: int
    sources: tuple[SourceCounts, ...]
    new_count: int
    new_urls: tuple[str, ...]
    store: str
    started_at: float
    finished_at: float
    settings: Any = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    @property
    def more_new_urls(self) -> int:
        """New URLs not listed in :attr:`new_urls`."""
        return max(self.new_count - len(self.new_urls), 0)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (what the generic webhook posts)."""
        return {
            "event": "trawl.run_finished",
            "domain": self.domain,
            "job_id": self.job_id,
            "outcome": self.outcome,
            "exit_status": self.exit_status,
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "sources": [s.as_dict() for s in self.sources],
            "new_count": self.new_count,
            "new_urls": list(self.new_urls),
            "more_new_urls": self.more_new_urls,
            "store": self.store,
        }


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def overall_outcome(outcomes: list[str], all_ok: bool) -> str:
    """One word for a job of several sources (see :class:`RunSummary`)."""
    if all_ok:
        return COMPLETE
    if any(o in (COMPLETE, PARTIAL) for o in outcomes):
        return PARTIAL
    others = [o for o in outcomes if o not in (COMPLETE, SKIPPED_NO_KEY)]
    if others and all(o == BLOCKED for o in others):
        return BLOCKED
    return FAILED


def build_summary(
    runs: list[SourceRun],
    *,
    job_id: str,
    domain: str | None,
    outcome: str,
    exit_status: int,
    settings: Any,
    plugins: pluggy.PluginManager,
    started_at: float,
) -> RunSummary:
    """The summary of these runs, with the first new URLs read back from the store."""
    from trawl.stores.registry import describe_store_uri, store_class

    counts = tuple(
        SourceCounts(
            source=r.name,
            run_id=r.run_id,
            outcome=r.outcome,
            requests=int(r.stat("downloader/request_count") or 0),
            pages=int(r.stat(statkeys.PAGES) or 0),
            urls=int(r.stat(statkeys.URLS_UNIQUE) or 0),
            new_urls=int(r.stat(statkeys.URLS_NEW) or 0),
            errors=r.errors,
            duration=r.duration,
        )
        for r in runs
    )
    new_count = sum(c.new_urls for c in counts)
    limit = settings.getint("NOTIFY_MAX_URLS")
    uri = str(settings.get("STORE_URI") or "").strip()
    new_urls: list[str] = []
    store = "none"
    if uri:
        try:
            store = describe_store_uri(uri, plugins)
            reader: Any = store_class(uri, plugins)
            run_ids = [c.run_id for c in counts if c.run_id]
            if new_count and limit and domain and run_ids and isinstance(reader, ReportingStore):
                for frame in reader.read_first_seen(uri, run_ids, domain, settings, limit=limit):
                    new_urls.extend(frame.get_column("url").to_list())
        except Exception as exc:  # noqa: BLE001 - a summary without its URL list still goes out
            logger.warning("run summary: cannot read the new URLs back from the store: %s", _one_line(exc))
    return RunSummary(
        domain=domain,
        job_id=job_id,
        outcome=outcome,
        exit_status=exit_status,
        sources=counts,
        new_count=new_count,
        new_urls=tuple(new_urls[:limit]),
        store=store,
        started_at=started_at,
        finished_at=time.time(),
        settings=settings,
    )


def run_finished(plugins: pluggy.PluginManager, summary: RunSummary) -> None:
    """Call every ``trawl_run_finished``, each on its own: one that raises is one WARNING line."""
    for impl in reversed(plugins.hook.trawl_run_finished.get_hookimpls()):  # pluggy's order: LIFO
        try:
            impl.function(**{name: summary for name in impl.argnames})
        except Exception as exc:  # noqa: BLE001 - a notifier cannot break the crawl
            logger.warning("plugin %s: trawl_run_finished failed: %s", impl.plugin_name, _one_line(exc))


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    return redact(text[:300])
