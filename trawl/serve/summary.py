"""Every URL's count, facets and charts, made once in the background and kept.

The page everyone opens first selects every URL: on 5,000,000 URLs its six
facets take minutes of scans (272 s at load 20: ``ext`` parses each URL), far
past a page's budget. A thread counts them without a time limit on a connection
of its own when the server starts; until it is done the unfiltered page lists
URLs and says the facets are being counted (trying them in the page's budget
would only add 0.65 s and time out), then shows these, with the time they were
counted (a crawl writing since is not in them; a query or a restart counts again).

The counts are kept in the side file (:mod:`.fts`) with the store's state they
describe (its URL count, last ``added_at`` and last ``updated_at``: every write
of a crawl moves one of them), so a restart on an unchanged store reads them
back after one scan (8 s on 5,000,000 URLs) instead of counting again.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import quote

from trawl.serve import charts, finder

_CACHE = (
    "CREATE TABLE IF NOT EXISTS summary"
    " (state TEXT NOT NULL, counted_at TEXT NOT NULL, facets TEXT NOT NULL, charts TEXT NOT NULL)"
)


@dataclass
class Counted:
    total: int
    facets: list[finder.Facet]
    at: str
    charts: list[charts.Chart]


class Summary:
    """Counts every URL's facets in a daemon thread; :meth:`get` is ``None`` until done."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], cache: Path | None = None) -> None:
        self._counted: Counted | None = None
        self.failure = ""
        self.cache = cache
        self._thread = threading.Thread(target=self._run, args=(connect,), name="trawl-summary", daemon=True)
        self._thread.start()

    def _run(self, connect: Callable[[], sqlite3.Connection]) -> None:
        try:
            con = connect()
            try:
                total, *_ = state = con.execute(
                    "SELECT count(*), max(added_at), max(updated_at) FROM urls"
                ).fetchone()
                key = json.dumps(state)
                counted = self._kept(key)
                if counted is None:
                    everything = finder.where_of("*")
                    facets = finder.facets(con, everything, ms=None)
                    drawn = charts.charts(con, everything, ms=None)
                    at = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
                    counted = Counted(int(total), facets, at, drawn)
                    self._keep(key, counted)
            finally:
                con.close()
            self._counted = counted
        except Exception as exc:  # noqa: BLE001 - the page falls back to its own budgeted facets
            self.failure = f"{type(exc).__name__}: {exc}"

    def _open_cache(self) -> sqlite3.Connection | None:
        if self.cache is None:
            return None
        con = sqlite3.connect(f"file:{quote(str(self.cache))}", uri=True, timeout=5)
        con.execute(_CACHE)
        return con

    def _kept(self, key: str) -> Counted | None:
        try:
            con = self._open_cache()
        except sqlite3.Error:
            return None
        if con is None:
            return None
        try:
            row = con.execute(
                "SELECT counted_at, facets, charts FROM summary WHERE state = ?", (key,)
            ).fetchone()
        except sqlite3.Error:
            return None
        finally:
            con.close()
        if row is None:
            return None
        facets = [finder.Facet(**facet) for facet in json.loads(row[1])]
        for facet in facets:
            facet.values = [tuple(value) for value in facet.values]  # type: ignore[misc]
        drawn = [charts.Chart(**chart) for chart in json.loads(row[2])]
        return Counted(json.loads(key)[0], facets, row[0], drawn)

    def _keep(self, key: str, counted: Counted) -> None:
        try:
            con = self._open_cache()
            if con is None:
                return
            with con:
                con.execute("DELETE FROM summary")
                con.execute(
                    "INSERT INTO summary VALUES (?, ?, ?, ?)",
                    (
                        key,
                        counted.at,
                        json.dumps([asdict(facet) for facet in counted.facets]),
                        json.dumps([asdict(chart) for chart in counted.charts]),
                    ),
                )
            con.close()
        except sqlite3.Error:
            pass  # not kept: the next start counts again

    def get(self) -> Counted | None:
        return self._counted

    @property
    def counting(self) -> bool:
        return self._thread.is_alive()
