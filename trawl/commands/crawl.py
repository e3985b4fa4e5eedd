"""``scrapy crawl`` with one-line errors and an exit status that tells the truth.

Scrapy's own command validates nothing before the reactor starts and exits 0
after a run that fetched nothing. This one checks every setting
(:mod:`trawl.validation`) and the spider's arguments first (a bad domain, a
malformed rate limit or a plugin setting the plugin manager refuses is one line
on stderr and exit status 2, no traceback, nothing sent) and exits 1 unless
every run completed (blocked, failed or partial runs are non-zero). Logging is
trawl's (:mod:`trawl.common.logs`), installed before Scrapy builds its process, so a
one-line error is not preceded by Scrapy's banner.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import uuid
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError

from trawl.common import statkeys, stopping
from trawl.common.attribution import unattributed_errors
from trawl.common.exiting import end_without_teardown
from trawl.common.files import FILES_SETTINGS, apply_umask
from trawl.common.logs import install_log_handler, write_usage_error
from trawl.common.outcome import COMPLETE, FAILED
from trawl.common.remotecontrol import defer_remote_control
from trawl.common.startup import install_startup_handlers
from trawl.errors import EXIT_USAGE, TrawlError, TrawlUsageError, exit_status
from trawl.exports.from_store import export_from_store
from trawl.exports.written import say_what_was_written
from trawl.pipeline.manager import plugin_manager_from_settings
from trawl.run.crawl_all import ALL, SourceRun, finish_forced, start_all, summary_table, use_trawl_jobdir
from trawl.run.preflight import check_run
from trawl.run.summary import build_summary, overall_outcome, run_finished
from trawl.sources.arguments import check_repeated, parse_bool
from trawl.sources.target import parse_target
from trawl.stores.registry import describe_store_uri
from trawl.validation import LOGGING_SETTINGS, apply_declared_defaults, validate_settings

if TYPE_CHECKING:
    import pluggy

#: The spider argument scrapyd adds to every job (``-a _job=<id>``).
SCRAPYD_JOB_ARGUMENT = "_job"
EXIT_INCOMPLETE = 1

logger = logging.getLogger(__name__)


def sources_epilog(settings: Any) -> str:
    """The help's last lines: the sources a crawl can name, and where their arguments are told."""
    from scrapy.spiderloader import get_spider_loader

    loader = get_spider_loader(settings)
    names = ", ".join(sorted(loader.list())) if getattr(loader, "plugin_error", None) is None else ""
    listed = f"Sources: {names}. " if names else ""
    every = "`trawl list --arguments`: every source's"
    return f"{listed}`trawl list SOURCE` shows a source's -a arguments ({every})."


class Command(ScrapyCrawlCommand):
    scrapyd_job: str | None = None

    def short_desc(self) -> str:
        return "Collect records from one source, or a domain's URLs from all of them"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        format_help = parser.format_help

        def with_sources() -> str:
            # Only when help is asked for: the sources are the plugins' (importing every source).
            parser.epilog = sources_epilog(self.settings)
            return format_help()

        parser.format_help = with_sources  # type: ignore[method-assign]

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """After ``-s``/``-L``/``--logfile`` are read, before Scrapy's process (and its banner) exists."""
        repeated = list(opts.spargs)  # Scrapy's dict below keeps the last of a repeated -a
        super().process_options(args, opts)
        assert self.settings is not None
        try:
            validate_settings(self.settings, names=(*LOGGING_SETTINGS, *FILES_SETTINGS))
            check_repeated(repeated)
        except TrawlError as exc:
            write_usage_error(self.settings, str(exc))
            sys.exit(EXIT_USAGE)
        apply_umask(self.settings)  # before the first file: LOG_FILE, opened just below
        install_log_handler(self.settings)
        install_startup_handlers()  # Ctrl-C before the crawl runs: one line (python -m scrapy too)
        # scrapyd adds its job id as a spider argument; it is no source's.
        self.scrapyd_job = opts.spargs.pop(SCRAPYD_JOB_ARGUMENT, None)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        self._run(args, opts)
        # Done, the status set: the process ends after Python's exit steps, without tearing
        # Scrapy down (0.5 s idle, over 2 s loaded: trawl.common.exiting).
        end_without_teardown(lambda: self.exitcode)

    def _run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give exactly one source to crawl, e.g. trawl crawl wayback")
        assert self.crawler_process is not None
        try:
            # Before any crawler exists: the pipeline and the loader use this same manager.
            plugins = self._plugins()
            sources = [n for n in self.crawler_process.spider_loader.list() if n != ALL]
            # The named source first: the settings checked and defaulted are its own, its store's and
            # the plugins' (not every registered source's: 0.2-0.4 s of imports at every start).
            for name in sources if args[0] == ALL else [n for n in args if n in sources]:
                self.crawler_process.spider_loader.load(name)
            validate_settings(self.settings, sources=sources)
            # The components' own defaults, under anything set: every crawler copies them.
            apply_declared_defaults(self.settings)
            defer_remote_control(self.settings)  # every crawler merges these extensions again
        except TrawlError as exc:
            self._fail(str(exc), exit_status(exc))
            return
        name = args[0]
        if name == ALL:
            self.run_all(opts, plugins)
            return
        loader = self.crawler_process.spider_loader
        try:
            spidercls = loader.load(name)
        except KeyError:
            known = ", ".join(sorted(loader.list()))
            self._fail(f"unknown source {name!r} (known: {known})")
            return
        check = getattr(spidercls, "check_arguments", None)
        try:
            if check is not None:
                check(self.settings, opts.spargs)
            check_run(self.settings, plugins)  # store, proxies, shared gate, paths, metrics
        except TrawlError as exc:
            self._fail(str(exc), exit_status(exc))
            return
        crawler = self._create_crawler(name)
        use_trawl_jobdir(crawler.settings)
        self._log_store(plugins)
        run = SourceRun(name, crawler, explicit=True, started=time.monotonic())
        crawler.signals.connect(run.mark_finished, signal=signals.spider_closed)
        started = time.time()
        self.crawler_process.crawl(crawler, **opts.spargs)
        self._start([run])
        try:
            outcome = crawler.stats.get_value(statkeys.OUTCOME) if crawler.stats else None
        except RuntimeError:  # Scrapy 2.19: no stats when the spider could not be built
            outcome = FAILED
        if self.crawler_process.bootstrap_failed:
            outcome = FAILED
        if outcome is not None and outcome != COMPLETE:
            self.exitcode = EXIT_INCOMPLETE
        if not parse_bool("check_only", opts.spargs.get("check_only", False)):
            outcome = outcome or (FAILED if self.exitcode else COMPLETE)  # a spider that sets no outcome
            self._run_finished([run], run.run_id or "", opts.spargs, outcome, plugins, started)
            feeds = self.settings.getdict("FEEDS")
            say_what_was_written(feeds, self.settings, plugins, [run.run_id] if run.run_id else [])

    def run_all(self, opts: argparse.Namespace, plugins: pluggy.PluginManager) -> None:
        """``scrapy crawl all``: see :mod:`trawl.run.crawl_all`."""
        assert self.crawler_process is not None and self.settings is not None
        feeds = dict(self.settings.getdict("FEEDS"))
        spargs = opts.spargs
        try:
            # ``all`` without a domain runs the sources that need none (crates, probe...): nothing
            # of a domain to export then, and -o says so before anything runs.
            target = None
            if spargs.get("domain"):
                target = parse_target(spargs.get("domain"), parse_bool("subs", spargs.get("subs", True)))
            elif feeds:
                raise TrawlUsageError("-o with 'all' writes a domain's URLs from the store: pass -a domain=")
            check_run(self.settings, plugins, exports=bool(feeds))
            job_id = uuid.uuid4().hex  # every source's run is part of this one job
            runs = start_all(self.crawler_process, self.settings, opts.spargs, job_id)
        except TrawlError as exc:
            self._fail(str(exc), exit_status(exc))
            return
        self._log_store(plugins)
        started = time.time()
        self._start(runs)
        check_only = parse_bool("check_only", opts.spargs.get("check_only", False))
        new_only = parse_bool("new_only", spargs.get("new_only", False))
        run_ids = [run.run_id for run in runs if run.run_id]
        try:
            if target is not None:
                export_from_store(
                    run_ids, {} if check_only else feeds, self.settings, plugins, target, new_only=new_only,
                    completed=all(run.ok for run in runs) and not self.crawler_process.bootstrap_failed,
                )  # fmt: skip
        except (TrawlError, OSError) as exc:
            sys.stderr.write(f"trawl: error: cannot write the exports: {exc}\n")
            self.exitcode = EXIT_INCOMPLETE
        except Exception as exc:  # noqa: BLE001 - a third-party store's own error: still one line
            sys.stderr.write(f"trawl: error: cannot write the exports: {type(exc).__name__}: {exc}\n")
            self.exitcode = EXIT_INCOMPLETE
        print(summary_table(runs, self.settings, check_only))
        stray = unattributed_errors()
        if stray:
            # Not any one source's (no spider named): no state above is marked for it, the status is.
            lines = "1 ERROR line" if len(stray) == 1 else f"{len(stray)} ERROR lines"
            sys.stderr.write(f"trawl: {lines} came from no particular source, first: {stray[0]}\n")
        all_ok = not (self.crawler_process.bootstrap_failed or stray) and all(run.ok for run in runs)
        if not all_ok:
            self.exitcode = EXIT_INCOMPLETE
        if not check_only:
            outcome = overall_outcome([run.outcome for run in runs], all_ok and not self.exitcode)
            self._run_finished(runs, job_id, spargs, outcome, plugins, started)
            say_what_was_written(feeds, self.settings, plugins, run_ids)

    def _start(self, runs: list[SourceRun]) -> None:
        """Run the reactor until every crawl has ended (or a second signal forced it to stop).

        A signal during the crawl makes the run partial (exit 1) however it ended;
        once the reactor has stopped, a signal ends the notification wait
        (:mod:`trawl.common.stopping`).
        """
        assert self.crawler_process is not None
        stopping.install(self.crawler_process)
        self.crawler_process.start()
        stopping.install_after_reactor()
        if stopping.forced():
            finish_forced(runs)
        if stopping.SIGNALS.count:
            self.exitcode = EXIT_INCOMPLETE

    def _run_finished(
        self,
        runs: list[SourceRun],
        job_id: str,
        spargs: dict[str, Any],
        outcome: str,
        plugins: pluggy.PluginManager,
        started: float,
    ) -> None:
        """``trawl_run_finished``, once for the whole invocation (see :mod:`trawl.run.summary`)."""
        assert self.settings is not None
        try:
            domain: str | None = parse_target(spargs.get("domain")).domain
        except TrawlError:
            domain = None  # a project's own spider that takes no domain
        try:
            summary = build_summary(
                runs,
                job_id=job_id,
                domain=domain,
                outcome=outcome,
                exit_status=int(self.exitcode or 0),
                settings=self.settings,
                plugins=plugins,
                started_at=started,
            )
        except Exception as exc:  # noqa: BLE001 - the run is over: its status stands
            logger.warning(
                "run summary: cannot be built (%s: %s); trawl_run_finished not called",
                type(exc).__name__,
                exc,
            )
            return
        run_finished(plugins, summary)

    def _log_store(self, plugins: pluggy.PluginManager) -> None:
        """Where this run's URLs go, resolved: ``store: sqlite:////abs/dir/trawl.db``."""
        assert self.settings is not None
        uri = str(self.settings.get("STORE_URI") or "").strip()
        logger.info("store: %s", describe_store_uri(uri, plugins))
        if self.scrapyd_job:
            logger.info("scrapyd job: %s", self.scrapyd_job)

    def _plugins(self) -> pluggy.PluginManager:
        """The crawl's plugin manager; raises ``TrawlUsageError`` for bad plugin settings."""
        assert self.settings is not None
        return plugin_manager_from_settings(self.settings)

    def _fail(self, message: str, status: int = EXIT_USAGE) -> None:
        """One ``trawl: error:`` line; exit status 2 for bad input, 1 for a store that cannot be reached."""
        assert self.settings is not None
        write_usage_error(self.settings, message)
        self.exitcode = status
