"""``trawl list``: the sources a crawl can name; says why plugin sources are missing, in one line.

The spider loader cannot report a bad ``TRAWL_PLUGINS`` or
``TRAWL_PLUGINS_DISABLED`` itself (Scrapy builds it before a crawl command
runs, where raising ends in a traceback), so it keeps the error and this
command prints it, exit status 2, instead of a list without trawl's sources.
"""

from __future__ import annotations

import argparse
import sys

from scrapy.commands.list import Command as ScrapyListCommand
from scrapy.spiderloader import get_spider_loader

from trawl.errors import EXIT_USAGE


class Command(ScrapyListCommand):
    def short_desc(self) -> str:
        return "List the sources a crawl can name (and all)"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        loader = get_spider_loader(self.settings)
        error = getattr(loader, "plugin_error", None)
        if error is not None:
            sys.stderr.write(f"trawl: error: {error}\n")
            self.exitcode = EXIT_USAGE
            return
        print("\n".join(sorted(loader.list())))
