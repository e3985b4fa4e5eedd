"""One queued task run as ``trawl crawl all`` runs a source, on the worker's own reactor.

A task is ``crawl all`` for one domain and one source (:mod:`.tasks`): its
crawler is built by :func:`trawl.run.crawl_all.start_all`, from the worker's
settings with the task's ``-s`` under the worker's own, after the checks
every crawl makes (:func:`trawl.run.preflight.check_run`: settings, arguments,
the store, proxies, the shared gate, paths). So a task's run is exactly a
``crawl all`` run (the store and its provenance merge, the run record, the
outcome, ``trawl_run_finished``), only without a process of its own: one
Scrapy process per worker runs many tasks at once and one after the other.

What decides a task's fate (:func:`verdict`) is what decided ``crawl all``'s
exit status: complete (or an unnamed source skipped without its key) is done;
partial, failed or blocked is dead-lettered; a task whose arguments or
settings are refused never starts and is dead-lettered with the one line the
command line would print. One exception: a crawl whose store gave up waiting
for its server (``POSTGRES_OUTAGE_MAX``, :mod:`trawl.stores.postgresql.outage`)
is handed back to the queue, whatever its outcome: a store outage is neither
the task's fault nor the upstream's, and the rerun, once the server is back,
stores what this run could not.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trawl.common import attribution, statkeys
from trawl.common.outcome import FAILED
from trawl.distributed.spreadsched import JOINER, OWNER, ROLE, RUN, WORKER
from trawl.distributed.tasks import Task
from trawl.exports.from_store import export_from_store
from trawl.pipeline.manager import plugin_manager_from_settings
from trawl.run.crawl_all import ALL, SourceRun, check_all, start_all, summary_table
from trawl.run.preflight import check_run
from trawl.run.summary import build_summary, overall_outcome, run_finished
from trawl.sources.arguments import parse_bool
from trawl.sources.target import parse_target
from trawl.stores.postgresql.outage import wait_for_store
from trawl.validation import apply_declared_defaults, validate_settings

if TYPE_CHECKING:
    import pluggy
    from scrapy.crawler import CrawlerProcessBase
    from scrapy.settings import Settings

logger = logging.getLogger("trawl.worker")

DONE = "done"
DEAD = "dead"
BACK = "back"


@dataclass
class HeldTask:
    """A task this worker holds, from its take to its acknowledgement."""

    raw: bytes
    task: Task
    settings: Settings
    arguments: dict[str, str]
    started: float = field(default_factory=time.monotonic)
    started_at: float = field(default_factory=time.time)
    job_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    plugins: pluggy.PluginManager | None = None
    runs: list[SourceRun] = field(default_factory=list)
    #: A second signal stopped it: handed back to the queue, whatever its outcome.
    stopped: bool = False
    #: The one line that refused it (bad arguments or settings), if it was.
    refused: str | None = None
    #: A crawl that could not even start (its spider not built): failed.
    crashed: bool = False
    #: Its ``-o`` exports could not be written: incomplete, as ``crawl all`` exits 1 then.
    export_failed: bool = False
    #: ``owner`` or ``joiner`` of a spread run (:mod:`.spreadsched`); empty: not spread.
    spread: str = ""
    #: Why its store gave up waiting for its server (the crawl's, or the checks' before it): handed back.
    store_outage: str | None = None

    @property
    def what(self) -> str:
        return f"{self.task.source} for {self.task.domain}"


def task_settings(base: Settings, task: Task, own: Mapping[str, str]) -> Settings:
    """The worker's settings with the task's ``-s`` over them, the worker's own ``-s`` over both."""
    settings = base.copy()
    for name, value in task.settings.items():
        if name not in own:
            settings.set(name, value, priority="cmdline")
    return settings


def spread_role(settings: Settings, task: Task, spidercls: Any) -> str:
    """``joiner`` for a join task; ``owner`` when the task's source spreads its pages; else ``""``.

    A source spreads when its class says ``spreadable = True``, ``SPREAD_PAGES`` is on,
    the store can take batches under another worker's run (SQLite, PostgreSQL), and the
    run has none of what keeps per-run state in one process: ``JOBDIR`` (the page
    ledger), ``check_only``, ``limit_requests``.
    """
    if task.join:
        return JOINER
    if not getattr(spidercls, "spreadable", False) or not settings.getbool("SPREAD_PAGES"):
        return ""
    store = str(settings.get("STORE_URI") or "").split(":", 1)[0].lower()
    arguments = task.arguments
    if store not in ("sqlite", "postgresql", "postgres") or settings.get("JOBDIR"):
        return ""
    if parse_bool("check_only", arguments.get("check_only", False)) or arguments.get("limit_requests"):
        return ""
    return OWNER


def use_spreading(settings: Settings, task: Task, role: str, worker: str) -> None:
    """The task's crawler on the spread run's scheduler: the run is the owner's task id."""
    run = task.join or task.id
    for name, value in (
        ("SCHEDULER", "trawl.distributed.spreadsched.SpreadScheduler"), (RUN, run), (ROLE, role),
        (WORKER, worker), ("TRAWL_RUN_ID", run),  # one run record, the owner's; joiners write under it
    ):  # fmt: skip
        settings.set(name, value, priority=100)


def task_arguments(task: Task, known_sources: Iterable[str]) -> dict[str, str]:
    """``crawl all``'s ``-a`` for this task's one source (see :meth:`Task.command`)."""
    arguments: dict[str, str] = {}
    if task.explicit:
        arguments["sources"] = task.source
    else:  # an unnamed source is run by excluding the others: skipped without a key, not failed
        others = sorted(name for name in known_sources if name not in (task.source, ALL))
        if others:
            arguments["exclude"] = ",".join(others)
    arguments.update(task.arguments)
    return arguments


def preflight(held: HeldTask, loader: Any) -> None:
    """Every check ``crawl all`` makes before its reactor runs; ``TrawlError`` refuses the task.

    Run on a thread: some checks wait on the network (the store, the shared gate's Redis).
    """
    settings = held.settings
    sources = [name for name in loader.list() if name != ALL]
    validate_settings(settings, sources=sources)
    apply_declared_defaults(settings)  # the components' own defaults, under anything set
    held.plugins = plugin_manager_from_settings(settings)
    check_all(loader, settings, held.arguments)
    wait_for_store(settings)  # a restarting server is waited for (StoreOutage past the bound), not refused
    check_run(settings, held.plugins, exports=bool(settings.getdict("FEEDS")), redis_checked=True)


def launch(held: HeldTask, process: CrawlerProcessBase) -> None:
    """Build and start the task's crawler on the running reactor (on the reactor's thread)."""
    held.runs = start_all(process, held.settings, held.arguments, held.job_id)


def _spider_built(run: SourceRun) -> bool:
    return getattr(run.crawler, "spider", None) is not None


def outcome_of(held: HeldTask) -> tuple[str, bool]:
    """The task's one word and whether it counts as done, as ``crawl all``'s exit status said."""
    if held.refused is not None:
        return FAILED, False
    built = not held.crashed and all(_spider_built(run) for run in held.runs)
    outcomes = [_outcome(run) for run in held.runs]
    ok = built and all(run.ok for run in held.runs if _spider_built(run))
    return overall_outcome(outcomes, ok), ok


def _outcome(run: SourceRun) -> str:
    try:
        return run.outcome
    except RuntimeError:  # Scrapy 2.19: no stats when the spider could not be built
        return FAILED


def store_outage(held: HeldTask) -> str | None:
    """Why a store of the task's crawls gave up waiting for its server, if one did (its stats say it)."""
    if held.store_outage is not None:
        return held.store_outage
    for run in held.runs:
        if not _spider_built(run):
            continue
        try:
            reason = run.crawler.stats.get_value(statkeys.STORE_OUTAGE)
        except (AttributeError, RuntimeError):  # no stats: the crawl never started
            continue
        if reason:
            return str(reason)
    return None


def verdict(held: HeldTask) -> tuple[str, str]:
    """(``done``, ``dead`` or ``back``, the reason): what the queue is told."""
    if held.stopped:
        return BACK, "stopped"
    if held.store_outage is not None:
        return BACK, f"the store was unreachable: {held.store_outage}"
    if held.refused is not None:
        return DEAD, f"the crawl refused its arguments or settings: {held.refused}"
    outcome, ok = outcome_of(held)
    if held.export_failed:
        return DEAD, f"the crawl could not write its exports ({outcome})"
    if ok:
        return DONE, outcome
    said = first_error(held)
    return DEAD, f"the crawl ended incomplete ({outcome})" + (f": {said}" if said else "")


def first_error(held: HeldTask) -> str | None:
    """The first ERROR line of the task's crawls (``otx: cannot reach ...: connection refused``)."""
    for run in held.runs:
        said = attribution.first_error(run.crawler)
        if said:
            return said
    return None


def wrap_up(held: HeldTask) -> None:
    """After the crawl (on a thread): exports, the summary table, ``trawl_run_finished``.

    What ``crawl all`` does once its reactor has stopped, for this task's runs;
    the notifications' wait and the store reads must not hold the reactor.
    """
    if held.refused is not None or not held.runs or held.plugins is None or held.store_outage is not None:
        return  # a task handed back for a store outage: its rerun exports and notifies
    if held.spread == JOINER:  # the run's exports and notifications are its owner's
        return
    settings, spargs = held.settings, held.arguments
    outcome, ok = outcome_of(held)
    check_only = parse_bool("check_only", spargs.get("check_only", False))
    feeds = {} if check_only else dict(settings.getdict("FEEDS"))
    run_ids = [run.run_id for run in held.runs if _spider_built(run) and run.run_id]
    if feeds:
        try:
            target = parse_target(spargs.get("domain"), parse_bool("subs", spargs.get("subs", True)))
            new_only = parse_bool("new_only", spargs.get("new_only", False))
            export_from_store(run_ids, feeds, settings, held.plugins, target, new_only=new_only, completed=ok)
        except Exception as exc:  # noqa: BLE001 - one line, as crawl all says it
            logger.error("worker: %s: cannot write the exports: %s: %s", held.what, type(exc).__name__, exc)
            held.export_failed = ok = False
    built = [run for run in held.runs if _spider_built(run)]
    if built:
        for line in summary_table(built, settings, check_only).splitlines():
            logger.info("%s", line)
    if check_only:
        return
    try:
        summary = build_summary(
            built, job_id=held.job_id, domain=held.task.domain, outcome=outcome,
            exit_status=0 if ok else 1, settings=settings, plugins=held.plugins, started_at=held.started_at,
        )  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - the run is over: its outcome stands
        logger.warning("run summary: cannot be built (%s: %s); trawl_run_finished not called",
                       type(exc).__name__, exc)  # fmt: skip
        return
    run_finished(held.plugins, summary)
