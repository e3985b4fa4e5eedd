"""trawl's commands (``COMMANDS_MODULE``; ``crawl`` replaces Scrapy's).

Read commands import no Scrapy (:mod:`trawl.readcommand`).
"""

import sys

if "scrapy.commands" in sys.modules:  # Scrapy's command line walks this package: it lists read commands too
    from trawl.readcommand import register_with_scrapy

    register_with_scrapy()
