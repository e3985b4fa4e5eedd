"""``trawl``: Scrapy's command line with trawl's settings, started from any directory.

Scrapy finds a project's settings, and with them its commands
(``COMMANDS_MODULE``: ``search``, ``plugins``, trawl's ``crawl``), through a
``scrapy.cfg`` in the current directory or above it, or through
``SCRAPY_SETTINGS_MODULE``. Run anywhere else, ``scrapy search '*'`` said
"Unknown command: search" (issue 9). ``trawl`` sets
``SCRAPY_SETTINGS_MODULE=trawl.settings`` (unless it is set already: a
project built on trawl names its own module) and runs Scrapy's command line,
so every command and argument is Scrapy's: ``trawl crawl wayback -a
domain=example.com`` is ``scrapy crawl wayback -a domain=example.com`` run in
the project. Relative paths (``-s STORE_URI=sqlite:///x.db``, ``-o urls.txt``)
are relative to the directory it is started in; the default store is the same
from every directory (:mod:`trawl.stores.location`).
"""

from __future__ import annotations

import os
import sys

from scrapy.cmdline import execute

SETTINGS_MODULE = "trawl.settings"


def main(argv: list[str] | None = None) -> None:
    """The ``trawl`` console script (``[project.scripts]``); exits with the command's status."""
    os.environ.setdefault("SCRAPY_SETTINGS_MODULE", SETTINGS_MODULE)
    execute(["trawl", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
