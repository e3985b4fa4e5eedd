"""The live crawl's counts (in the stats) and its summary at the end of the run.

Stats: ``trawl/live/pages`` (fetched), ``trawl/live/verdict/<verdict>``,
``trawl/live/found`` (in-scope URLs named), ``trawl/live/out_of_scope``,
``trawl/live/beyond_depth``, ``trawl/live/trap_dropped``,
``trawl/live/max_pages_dropped``, ``trawl/live/robots_forbidden``,
``trawl/live/too_large`` (pages that inflated past ``LIVE_MAX_BYTES``). The summary,
logged when the crawl closes::

    live: 23 pages fetched (19 page, 2 redirect, 1 soft-404, 1 headers-only), 31 URLs found
    live: trap: shop.example.com/calendar/{n}/{n}? capped at 3 pages, 2 URLs not fetched
    live: 4 URLs disallowed by robots.txt, not fetched
    live: 3 out-of-scope URLs not fetched:   (in URL order, the first 1,000 distinct)
    live:   http://www.iana.org/domains/example
"""

from __future__ import annotations

import logging
from typing import Any

from trawl.common import statkeys

PREFIX = "trawl/live/"
VERDICT = PREFIX + "verdict/"
#: Out-of-scope URLs kept to list (all are counted).
LISTED = 1000


class Report:
    """What the summary lists beyond the stats: out-of-scope URLs, trapped patterns."""

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler  # its stats exist once the crawl starts
        self.out_of_scope: dict[str, None] = {}

    @property
    def stats(self) -> Any:
        return self.crawler.stats

    def count(self, name: str, n: int = 1) -> None:
        if n:
            self.stats.inc_value(PREFIX + name, n)

    def verdict(self, verdict: str) -> None:
        self.stats.inc_value(PREFIX + "pages")
        self.stats.inc_value(statkeys.PAGES)  # the finish line's "N pages": the pages fetched
        self.stats.inc_value(VERDICT + verdict)

    def outside(self, url: str) -> None:
        if url in self.out_of_scope:
            return
        self.count("out_of_scope")
        if len(self.out_of_scope) < LISTED:
            self.out_of_scope[url] = None

    def lines(self, name: str, cap: Any) -> list[str]:
        values = self.stats.get_stats()
        verdicts = {k[len(VERDICT) :]: int(v) for k, v in values.items() if k.startswith(VERDICT)}
        shown = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items(), key=lambda kv: -kv[1]))
        pages = int(values.get(PREFIX + "pages", 0))
        found = int(values.get(PREFIX + "found", 0))
        lines = [f"{name}: {pages} pages fetched ({shown or 'none'}), {found} URLs found"]
        for pattern, dropped in sorted(cap.dropped.items()):
            lines.append(f"{name}: trap: {pattern} capped at {cap.cap} pages, {dropped} URLs not fetched")
        for key, what in (
            ("beyond_depth", "beyond the depth limit"),
            ("max_pages_dropped", "past max_pages"),
            ("robots_forbidden", "disallowed by robots.txt"),
        ):
            if values.get(PREFIX + key):
                lines.append(f"{name}: {int(values[PREFIX + key])} URLs {what}, not fetched")
        if values.get(PREFIX + "scripts_cut"):
            lines.append(
                f"{name}: {int(values[PREFIX + 'scripts_cut'])} scripts mined only up to LIVE_JS_MAX_BYTES"
            )
        total = int(values.get(PREFIX + "out_of_scope", 0))
        if total:
            lines.append(f"{name}: {total} out-of-scope URLs not fetched:")
            lines.extend(f"{name}:   {url}" for url in sorted(self.out_of_scope))
            if total > len(self.out_of_scope):
                lines.append(f"{name}:   ... and {total - len(self.out_of_scope)} more")
        return lines

    def log(self, logger: logging.Logger | logging.LoggerAdapter, name: str, cap: Any) -> None:
        for line in self.lines(name, cap):
            logger.info("%s", line)
