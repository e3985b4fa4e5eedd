"""``scrapy crawl`` with one-line errors and an exit status that tells the truth.

Scrapy's own command validates nothing before the reactor starts and exits 0
after a run that fetched nothing. This one checks the spider's arguments first
(a bad domain is one line on stderr and exit status 2, no traceback) and exits
1 unless every run completed (blocked, failed or partial runs are non-zero).
"""

from __future__ import annotations

import argparse
import sys

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError

from trawl.errors import TrawlError
from trawl.outcome import COMPLETE
from trawl.pluginmanager import plugin_manager_from_settings
from trawl.store import check_store_uri

EXIT_USAGE = 2
EXIT_INCOMPLETE = 1


class Command(ScrapyCrawlCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give exactly one source to crawl, e.g. scrapy crawl wayback")
        assert self.crawler_process is not None
        name = args[0]
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
            uri = str(self.settings.get("STORE_URI") or "").strip()
            if uri:  # a bad STORE_URI would otherwise fail inside the reactor, with a traceback
                check_store_uri(uri, plugin_manager_from_settings(self.settings))
        except TrawlError as exc:
            self._fail(str(exc))
            return
        crawler = self._create_crawler(name)
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed:
            self.exitcode = EXIT_INCOMPLETE
            return
        outcome = crawler.stats.get_value("trawl/outcome") if crawler.stats else None
        if outcome is not None and outcome != COMPLETE:
            self.exitcode = EXIT_INCOMPLETE

    def _fail(self, message: str) -> None:
        sys.stderr.write(f"trawl: error: {message}\n")
        self.exitcode = EXIT_USAGE
