"""``scrapy crawl all``: every selected source at once, in one process.

Each source runs as its own Scrapy crawler on the shared reactor, with its own
engine, downloader slots, retries and stats, so one that fails (unreachable,
blocked, 5xx after retries, malformed answers) neither stops nor slows the
others. All of them write to the same store, which merges provenance: a URL
three sources report is one row listing three.

Exports (``-o``) are written once every source has finished, from the store
(:mod:`trawl.exports.from_store`): one line per URL with its merged provenance,
which per-crawler feed exports could not give.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.crawler import Crawler

from trawl.common import statkeys
from trawl.common.failcause import estimate_unknown
from trawl.common.jobdir import JOB_ID, RESUMABLE
from trawl.common.outcome import COMPLETE, PARTIAL, SKIPPED_NO_KEY, error_count
from trawl.errors import TrawlUsageError
from trawl.politeness.ratelimit import source_rate
from trawl.politeness.rates import format_duration, parse_rate
from trawl.run.finishline import says_urls, stored_by_kind
from trawl.run.progress import ELAPSED, Progress
from trawl.sources.argsets import COMMON_ARGUMENTS, FILTER_ARGUMENTS
from trawl.sources.arguments import split_list

if TYPE_CHECKING:
    from scrapy.crawler import CrawlerProcess
    from scrapy.settings import Settings

ALL = "all"
SELECTION_ARGUMENTS = frozenset({"sources", "exclude"})


@dataclass
class SourceRun:
    name: str
    crawler: Crawler
    explicit: bool
    started: float = 0.0
    finished: float = 0.0
    #: What ``process.crawl()`` returned: done when the crawl has ended (a Deferred or an asyncio Task).
    crawling: Any = None

    def stat(self, key: str, default: Any = 0) -> Any:
        stats = self.crawler.stats
        return stats.get_value(key, default) if stats is not None else default

    def mark_finished(self) -> None:
        self.finished = time.monotonic()

    @property
    def duration(self) -> float:
        """The finish line's duration (:data:`~trawl.run.progress.ELAPSED`): one measure per source.

        The table used to time from the crawler's creation, the finish line from
        the spider's opening: 8.9 s and 7.9 s for one source.
        Without the Progress extension (``PROGRESS_INTERVAL=-1``), the crawler's own span.
        """
        elapsed = self.stat(ELAPSED, None)
        return float(elapsed) if elapsed is not None else max(self.finished - self.started, 0.0)

    @property
    def outcome(self) -> str:
        return self.stat(statkeys.OUTCOME, "failed") or "failed"

    @property
    def run_id(self) -> str | None:
        return self.stat(statkeys.RUN_ID, None) or None

    @property
    def errors(self) -> int:
        """This source's errors: its own, not those other sources logged in the process."""
        stats = self.crawler.stats
        return error_count(stats.get_stats()) if stats is not None else 0

    @property
    def says_urls(self) -> bool:
        """A URL source (pages, URLs, new URLs); else one of another record kind."""
        spider = getattr(self.crawler, "spider", None)
        return spider is None or says_urls(spider)

    @property
    def records(self) -> int:
        """Records this source handed to the store, every kind together."""
        stats = self.crawler.stats
        return sum(stored_by_kind(stats.get_stats()).values()) if stats is not None else 0

    @property
    def ok(self) -> bool:
        """Counts as done for the exit status: complete, or skipped without being asked for."""
        return self.outcome == COMPLETE or (self.outcome == SKIPPED_NO_KEY and not self.explicit)


def select_sources(available: list[str], arguments: Mapping[str, Any]) -> tuple[list[str], bool]:
    """Sources to run, and whether the user named them."""
    known = [name for name in available if name != ALL]
    chosen = split_list(arguments.get("sources"))
    excluded = split_list(arguments.get("exclude"))
    for name in chosen + excluded:
        if name not in known:
            raise TrawlUsageError(f"unknown source {name!r} (known: {', '.join(sorted(known))})")
    selected = [name for name in (chosen or known) if name not in excluded]
    if not selected:
        raise TrawlUsageError("no source left to run (check -a sources= and -a exclude=)")
    return selected, bool(chosen)


def accepted_by(spidercls: Any) -> frozenset[str]:
    """The ``-a`` names a source takes: its class says (a source of another record kind
    takes no ``domain``); a project's own spider that does not say gets the URL source's."""
    accepted = getattr(spidercls, "accepted_arguments", None)
    if accepted is not None:
        return accepted()
    return COMMON_ARGUMENTS | FILTER_ARGUMENTS | frozenset(getattr(spidercls, "extra_arguments", ()))


def arguments_for(spidercls: Any, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments a source accepts, out of everything given to ``all``."""
    accepted = accepted_by(spidercls)
    return {k: v for k, v in arguments.items() if k.lower() in accepted}


def check_unused(spiderclasses: list[Any], arguments: Mapping[str, Any]) -> None:
    accepted = set(COMMON_ARGUMENTS | FILTER_ARGUMENTS | SELECTION_ARGUMENTS)
    for spidercls in spiderclasses:
        accepted |= accepted_by(spidercls)
    unknown = sorted(k for k in arguments if k.lower() not in accepted)
    if unknown:
        raise TrawlUsageError(f"no selected source takes -a {unknown[0]}=")


def check_all(
    loader: Any, settings: Settings, arguments: Mapping[str, Any]
) -> tuple[list[str], list[Any], bool]:
    """The sources ``all`` runs, their classes and whether the user named them; bad arguments raise."""
    names, explicit = select_sources(loader.list(), arguments)
    classes = [loader.load(name) for name in names]
    if not explicit:  # a source that is not about a domain (crates.io's dump) runs when named
        chosen = [(n, c) for n, c in zip(names, classes, strict=True) if getattr(c, "in_crawl_all", True)]
        names, classes = [n for n, _ in chosen], [c for _, c in chosen]
    check_unused(classes, arguments)
    for spidercls in classes:
        spidercls.check_arguments(settings, arguments_for(spidercls, arguments))
    return names, classes, explicit


def start_all(
    process: CrawlerProcess, settings: Settings, arguments: Mapping[str, Any], job_id: str = ""
) -> list[SourceRun]:
    """Validate everything, then schedule one crawler per source (not started yet).

    Every source's run is recorded under ``job_id``: what ``trawl report new
    --since last`` reads as "the last crawl" (one job, several runs).
    ``settings`` other than the process's are a worker task's (its ``-s`` under
    the worker's): its crawlers are built from them, and the process's are
    merged in under them by ``crawl()``, as for the command line's.
    """
    names, classes, explicit = check_all(process.spider_loader, settings, arguments)
    runs = []
    for name, spidercls in zip(names, classes, strict=True):
        if settings is process.settings:
            crawler = process.create_crawler(spidercls)
        else:
            crawler = Crawler(spidercls, settings)
        # Exported from the store at the end; a priority above the runner's (crawl() merges it in).
        crawler.settings.set("FEEDS", {}, priority=100)
        use_trawl_jobdir(crawler.settings)
        if job_id:
            crawler.settings.set(JOB_ID, job_id, priority=100)
        run = SourceRun(name, crawler, explicit)
        run.started = time.monotonic()
        crawler.signals.connect(run.mark_finished, signal=signals.spider_closed)
        run.crawling = process.crawl(crawler, **arguments_for(spidercls, arguments))
        runs.append(run)
    return runs


def summary_table(runs: list[SourceRun], settings: Settings, check_only: bool) -> str:
    """The per-source table printed at the end of ``scrapy crawl all``."""
    if check_only:
        header = ("source", "requests", "estimated duration", "state")
        rows = [(r.name, _estimate_requests(r), _estimate_duration(r, settings), r.outcome) for r in runs]
    else:
        header = ("source", "requests", "pages", "URLs", "new URLs", "errors", "duration", "state")
        kinds = [r for r in runs if not r.says_urls]
        if kinds:  # a source of another record kind (crates, probe...) counts records, not URLs
            header = (*header[:5], "records", *header[5:])
        rows = []
        for r in runs:
            url_keys = (statkeys.PAGES, statkeys.URLS_UNIQUE, statkeys.URLS_NEW)
            urls = tuple(f"{r.stat(key):,}" if r.says_urls else "-" for key in url_keys)
            records = (f"{r.records:,}" if not r.says_urls else "-",) if kinds else ()
            rows.append(
                (
                    r.name,
                    f"{r.stat('downloader/request_count'):,}",
                    *urls,
                    *records,
                    f"{r.errors:,}",
                    f"{r.duration:.1f} s",
                    r.outcome,
                )
            )
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)) for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def finish_forced(runs: list[SourceRun]) -> None:
    """After a second signal stopped the reactor: the runs whose spider never closed end ``partial``.

    Their engines never reached ``spider_closed``: no finish line, no outcome, and
    a double Ctrl-C while a source was paused exited 0 with no summary.
    Their store records stay open as after a ``kill -9``, and ``JOBDIR`` resumes them.
    """
    for run in runs:
        crawler = run.crawler
        try:
            stats = crawler.stats
        except RuntimeError:  # Scrapy 2.19: no stats when the spider could not be built
            continue
        if stats is None or stats.get_value(statkeys.OUTCOME) is not None:
            continue
        if stats.get_value(statkeys.CLOSE_REASON) is None:
            stats.set_value(statkeys.CLOSE_REASON, "shutdown")
        progress = next((e for e in _extensions(crawler) if isinstance(e, Progress)), None)
        if progress is not None and crawler.spider is not None:
            progress.spider_closed(crawler.spider, "shutdown (forced)")  # the finish line and the outcome
        if stats.get_value(statkeys.OUTCOME) in (None, COMPLETE):
            stats.set_value(statkeys.OUTCOME, PARTIAL)
        run.mark_finished()


def _extensions(crawler: Crawler) -> list[Any]:
    manager = getattr(crawler, "extensions", None)
    return list(getattr(manager, "middlewares", ()))


def use_trawl_jobdir(settings: Settings) -> None:
    """``-s JOBDIR=`` resumes through trawl's page ledger, not Scrapy's request queue.

    See :mod:`trawl.common.jobdir`: Scrapy's queue would lose the requests in flight at
    a kill. Set at a priority above the runner's, which ``crawl()`` merges in.
    """
    jobdir = settings.get("JOBDIR")
    if jobdir:
        settings.set(RESUMABLE, jobdir, priority=100)
        settings.set("JOBDIR", None, priority=100)


def _estimate_requests(run: SourceRun) -> str:
    """The requests a full run would make; ``unknown (HTTP 503)`` when the count failed."""
    if run.outcome == SKIPPED_NO_KEY:
        return "-"
    unknown = estimate_unknown(run.crawler.stats.get_stats()) if run.crawler.stats is not None else None
    if unknown is not None:
        return unknown
    return f"{run.stat(statkeys.ESTIMATE_REQUESTS):,}"


def _estimate_duration(run: SourceRun, settings: Settings) -> str:
    if run.outcome == SKIPPED_NO_KEY or _estimate_requests(run).startswith("unknown"):
        return "-"
    requests = run.stat(statkeys.ESTIMATE_REQUESTS)
    limit = source_rate(settings, run.crawler.spidercls)
    if not limit:
        return "-"
    count, period = parse_rate(limit)
    # The first window's budget goes at once; every further request waits its share.
    seconds = max(0, requests - count) * period / count
    return format_duration(seconds)
