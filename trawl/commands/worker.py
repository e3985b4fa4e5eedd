"""``trawl worker [-s NAME=VALUE]... [--until-empty] [--tasks N]``: run queued work until told to stop.

See :mod:`trawl.distributed.worker` for what happens to held work when a
worker dies, is stopped, or loses Redis; docs/distributed.md, "Queue and workers".
"""

from __future__ import annotations

import argparse
import sys

from scrapy.commands import ScrapyCommand

from trawl.common.files import FILES_SETTINGS, apply_umask
from trawl.common.logs import install_log_handler, write_usage_error
from trawl.common.remotecontrol import defer_remote_control
from trawl.common.startupheap import freeze_startup_objects
from trawl.distributed.commandline import fail, given_settings, open_queue
from trawl.distributed.connection import SETTING
from trawl.distributed.storecheck import claim_store, release_store
from trawl.errors import EXIT_USAGE, TrawlError
from trawl.validation import LOGGING_SETTINGS, apply_declared_defaults, validate_settings


class Command(ScrapyCommand):
    requires_project = True
    #: The worker's one Scrapy process: every task's crawler runs on its reactor.
    requires_crawler_process = True
    default_settings = {"LOG_LEVEL": "INFO"}

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """trawl's log handler before Scrapy builds the process (no banner), as ``trawl crawl`` does."""
        super().process_options(args, opts)
        assert self.settings is not None
        try:
            validate_settings(self.settings, names=(*LOGGING_SETTINGS, *FILES_SETTINGS))
        except TrawlError as exc:
            write_usage_error(self.settings, str(exc))
            sys.exit(EXIT_USAGE)
        apply_umask(self.settings)
        install_log_handler(self.settings)

    def syntax(self) -> str:
        return "[-s NAME=VALUE]... [--until-empty] [--tasks N]"

    def short_desc(self) -> str:
        return "Run the work trawl enqueue queued, until SIGTERM (or until the queue is empty)"

    def long_desc(self) -> str:
        return (
            "Take tasks from the queue in TRAWL_REDIS_URL and run each as trawl crawl all for its domain"
            " and source, with this worker's -s settings over the task's (STORE_URI, API keys)."
            " SIGTERM or Ctrl-C: take no more, finish what is held, exit 0. --until-empty: exit 0 once"
            " nothing is queued and no worker holds work."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--until-empty", action="store_true",
                            help="exit once the queue is empty and no worker holds work")  # fmt: skip
        parser.add_argument("--tasks", type=int, default=None, metavar="N",
                            help="tasks run at once by this worker (default: as many as the sources"
                                 " crawl all runs at once)")  # fmt: skip

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if args:
            self.exitcode = fail(self.settings, f"trawl worker takes no arguments, got {args[0]!r}")
            return
        if opts.tasks is not None and opts.tasks < 1:
            self.exitcode = fail(self.settings, f"--tasks must be at least 1, got {opts.tasks}")
            return
        assert self.crawler_process is not None
        # Here, not at the top: Scrapy's command line (scrapyd, python -m scrapy) imports every
        # command module to list them, and these bring psycopg and redis (0.25 s of CPU a crawl).
        from trawl.distributed.worker import Worker, separate_client, watch_depths
        from trawl.metrics.server import start_metrics

        try:
            loader = self.crawler_process.spider_loader
            error = getattr(loader, "plugin_error", None)
            if error is not None:
                raise TrawlError(str(error))
            validate_settings(self.settings, sources=[n for n in loader.list() if n != "all"])
            apply_declared_defaults(self.settings)  # every task's settings start from these
            defer_remote_control(self.settings)
            queue = open_queue(self.settings)
            serving = start_metrics(self.settings)  # one endpoint for the worker: a port in use is one line
        except TrawlError as exc:
            self.exitcode = fail(self.settings, exc)
            return
        if serving:
            watch_depths(separate_client(queue.client), [n for n in loader.list() if n != "all"])
        own = given_settings(opts)
        own.setdefault(SETTING, str(self.settings.get(SETTING)))  # the crawl's shared gate, when there is one
        # As many crawls at once as crawl all runs sources at once (one domain's sources).
        slots = opts.tasks or sum(1 for n in loader.list() if getattr(loader.load(n), "in_crawl_all", True)
                                  and n != "all")  # fmt: skip
        freeze_startup_objects()  # once, before the first task: no task's crawler is frozen for good
        worker = Worker(
            queue,
            self.crawler_process,
            own_settings=own,
            known_sources=loader.list(),
            slots=max(slots, 1),
            until_empty=opts.until_empty,
        )
        store_uri = own.get("STORE_URI") or str(self.settings.get("STORE_URI") or "")
        try:
            claim_store(queue, worker.id, store_uri)
        except TrawlError as exc:
            queue.release_all(worker.id)
            self.exitcode = fail(self.settings, exc)
            return
        try:
            self.exitcode = worker.run()
        finally:
            release_store(queue, worker.id)
