"""The unfiltered search page's count and facets, counted once in the background.

The page everyone opens first selects every URL: on 5,000,000 URLs its six
facets take a minute of scans (``ext`` parses each URL), far past a page's
budget, so they would all show "timed out". A thread counts them without a time
limit on a connection of its own when the server starts; until it is done the
unfiltered page lists URLs and says the facets are being counted (trying them in
the page's budget would only add 0.75 s and time out), then shows these, with
the time they were counted (a crawl writing since is not in them; a query or a
restart counts again).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from trawl.serve import finder


@dataclass
class Counted:
    total: int
    facets: list[finder.Facet]
    at: str


class Summary:
    """Counts every URL's facets in a daemon thread; :meth:`get` is ``None`` until done."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._counted: Counted | None = None
        self.failure = ""
        self._thread = threading.Thread(target=self._run, args=(connect,), name="trawl-summary", daemon=True)
        self._thread.start()

    def _run(self, connect: Callable[[], sqlite3.Connection]) -> None:
        try:
            con = connect()
            try:
                everything = finder.where_of("*")
                total = finder.count(con, everything, ms=None) or 0
                facets = finder.facets(con, everything, ms=None)
            finally:
                con.close()
            self._counted = Counted(total, facets, time.strftime("%H:%M:%S UTC", time.gmtime()))
        except Exception as exc:  # noqa: BLE001 - the page falls back to its own budgeted facets
            self.failure = f"{type(exc).__name__}: {exc}"

    def get(self) -> Counted | None:
        return self._counted

    @property
    def counting(self) -> bool:
        return self._thread.is_alive()

    def wait(self, seconds: float) -> Counted | None:
        self._thread.join(seconds)
        return self._counted
