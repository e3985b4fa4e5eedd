"""``trawl enqueue DOMAIN... [--file scope.txt] [-a NAME=VALUE]... [-s NAME=VALUE]...``: work for the workers.

Each domain's selected sources become one task each on the shared queue of
``TRAWL_REDIS_URL`` (:mod:`trawl.distributed.tasks`), with the ``-a`` arguments
``crawl all`` takes and the ``-s`` settings given here. Everything is checked as
``crawl all`` checks it before anything is queued: a bad domain, source or
argument is one line and exit status 2, and nothing is pushed. The same work
already queued or running is not queued twice.
"""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand
from scrapy.spiderloader import get_spider_loader
from scrapy.utils.conf import arglist_to_dict

from trawl.distributed.commandline import fail, given_settings, open_queue
from trawl.distributed.connection import SETTING
from trawl.distributed.tasks import Task, read_domains
from trawl.errors import TrawlError
from trawl.run.crawl_all import arguments_for, check_all
from trawl.sources.arguments import check_repeated
from trawl.validation import apply_declared_defaults, validate_settings


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "DOMAIN... [--file scope.txt] [-a NAME=VALUE]... [-s NAME=VALUE]..."

    def short_desc(self) -> str:
        return "Queue domains for the workers (trawl worker) on the shared Redis"

    def long_desc(self) -> str:
        return (
            "Push one task per domain and source onto the queue in TRAWL_REDIS_URL; the -a arguments"
            " are those of trawl crawl all (-a sources=wayback,otx), the -s settings travel with the"
            " task (a worker's own -s win over them). trawl worker runs the tasks, trawl queue shows them."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-a", dest="spargs", action="append", default=[], metavar="NAME=VALUE",
                            help="an argument of crawl all (may be repeated)")  # fmt: skip
        parser.add_argument("--file", action="append", default=[], metavar="FILE",
                            help="more domains, one a line (# starts a comment)")  # fmt: skip

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        try:
            tasks = self._tasks(args, opts)
            queue = open_queue(self.settings)
        except (TrawlError, ValueError) as exc:
            self.exitcode = fail(self.settings, exc)
            return
        queued = 0
        for task in tasks:
            if queue.push(task):
                queued += 1
            else:
                print(f"{task.domain} {task.source}: already queued or running, not queued again")
        print(f"queued {queued} task(s) for {len({t.domain for t in tasks})} domain(s)")

    def _tasks(self, domains: list[str], opts: argparse.Namespace) -> list[Task]:
        assert self.settings is not None
        check_repeated(list(opts.spargs))
        try:
            arguments = arglist_to_dict(opts.spargs)
        except ValueError:
            raise ValueError("invalid -a value, use -a NAME=VALUE") from None
        if "domain" in arguments:
            raise ValueError("name the domains as arguments (trawl enqueue example.com), not with -a domain=")
        loader = get_spider_loader(self.settings)
        error = getattr(loader, "plugin_error", None)
        if error is not None:
            raise ValueError(str(error))
        validate_settings(self.settings, sources=[n for n in loader.list() if n != "all"])
        apply_declared_defaults(self.settings)
        carried = {k: v for k, v in given_settings(opts).items() if k != SETTING}
        tasks = []
        for domain in read_domains(domains, opts.file):
            given = {**arguments, "domain": domain}
            names, classes, explicit = check_all(loader, self.settings, given)
            for name, spidercls in zip(names, classes, strict=True):
                own = {k: str(v) for k, v in arguments_for(spidercls, given).items()}
                tasks.append(Task(domain, name, own, carried, explicit))
        return tasks
