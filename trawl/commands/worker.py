"""``trawl worker [-s NAME=VALUE]... [--until-empty] [--tasks N]``: run queued work until told to stop.

See :mod:`trawl.distributed.worker` for what happens to held work when a
worker dies, is stopped, or loses Redis; docs/distributed.md, "Queue and workers".
"""

from __future__ import annotations

import argparse
import sys

from scrapy.commands import ScrapyCommand
from scrapy.spiderloader import get_spider_loader

from trawl.distributed.commandline import fail, given_settings, open_queue
from trawl.distributed.connection import SETTING
from trawl.distributed.storecheck import claim_store, release_store
from trawl.distributed.worker import Worker
from trawl.errors import TrawlError
from trawl.validation import validate_settings


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_LEVEL": "INFO"}

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
        parser.add_argument("--tasks", type=int, default=1, metavar="N",
                            help="tasks run at once by this worker (default: 1)")  # fmt: skip

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if args:
            self.exitcode = fail(self.settings, f"trawl worker takes no arguments, got {args[0]!r}")
            return
        if opts.tasks < 1:
            self.exitcode = fail(self.settings, f"--tasks must be at least 1, got {opts.tasks}")
            return
        try:
            loader = get_spider_loader(self.settings)
            error = getattr(loader, "plugin_error", None)
            if error is not None:
                raise TrawlError(str(error))
            validate_settings(self.settings, sources=[n for n in loader.list() if n != "all"])
            queue = open_queue(self.settings)
        except TrawlError as exc:
            self.exitcode = fail(self.settings, exc)
            return
        own = given_settings(opts)
        own.setdefault(SETTING, str(self.settings.get(SETTING)))  # the crawl's shared gate, when there is one
        worker = Worker(
            queue,
            executable=[sys.executable, "-m", "trawl.cli"],
            own_settings=own,
            known_sources=loader.list(),
            slots=opts.tasks,
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
