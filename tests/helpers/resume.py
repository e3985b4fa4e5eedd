"""The data set a crawl is killed in and resumed from, and what to read of the store and the server.

:func:`dataset` is ``PAGES`` pages of ``LINES_PER_PAGE`` CDX lines on
``example.com``, 1-5 captures a URL so that many URLs straddle two pages;
:func:`expected_rows` the true (captures, first_seen, last_seen) of each URL.
:func:`stored_rows`, :func:`query` and :func:`committed_rows` read a SQLite store
(the last one while a crawl still writes it); :func:`pages_requested` the CDX
pages a run asked for. ``DEADLINE`` bounds every polling loop.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from pathlib import Path

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.servers.ia_cdx import Capture, FakeCdxServer, make_capture
except ImportError:
    from servers.ia_cdx import Capture, FakeCdxServer, make_capture  # type: ignore[no-redef]

PAGES = 40
LINES_PER_PAGE = 50
DEADLINE = 60.0  # seconds; a ceiling for polling, never a wait


def dataset() -> list[Capture]:
    """PAGES x LINES_PER_PAGE lines; 1-5 captures a URL, so many URLs straddle two pages."""
    caps: list[Capture] = []
    i = 0
    while len(caps) < PAGES * LINES_PER_PAGE:
        url = f"https://example.com/p/{i:04d}"
        for j in range(1 + (i * 7) % 5):
            status, mime = ("-", "warc/revisit") if (i + j) % 9 == 8 else ("200", "text/html")
            caps.append(make_capture(url, f"{2000 + (i + 3 * j) % 24}0101000000", mime, status))
        i += 1
    return caps[: PAGES * LINES_PER_PAGE]


def expected_rows(caps: list[Capture]) -> dict[str, tuple[int, str, str]]:
    """url -> (captures, first_seen, last_seen): the true values."""
    stamps: dict[str, list[str]] = defaultdict(list)
    for c in caps:
        stamps[c.original].append(c.timestamp)
    return {u: (len(ts), min(ts), max(ts)) for u, ts in stamps.items()}


def stored_rows(db: Path) -> list[tuple[str, int, str, str]]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT url, captures, first_seen, last_seen FROM urls").fetchall()
    finally:
        con.close()


def query(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def committed_rows(db: Path) -> int:
    """Rows a reader sees now (read-only: the crawl keeps writing meanwhile)."""
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute("SELECT COUNT(*) FROM urls").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0


def pages_requested(server: FakeCdxServer, since: int = 0) -> list[int]:
    pages = []
    for record in server.requests[since:]:
        params = dict(record.params)
        if "page" in params and "limit" not in params:
            pages.append(int(params["page"]))
    return pages
