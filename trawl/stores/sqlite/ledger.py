"""The page ledger of a SQLite store (``pages``): which pages of a source each run stored.

A page is claimed in the transaction (or savepoint) that writes its rows, so a
resumed run skips exactly what was committed, and a page met twice in a run is not
merged twice (its rows are marked ``repeat``). The pages of a dump load's ingested
batches are the exception: the load's ingest process (:mod:`.ingest`) writes their
rows, and claimed a batch at a time the store's writer queued for the file's write
lock 724 times at full scale while the ingest process waited for each claim (5 s of a
43 s load). Until the switch the staged rows are no snapshot (a load that fails or
stops switches nothing, and a resumed run writes them again), so those pages are
noted here and claimed in the switch's own transaction.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import orjson

from trawl.errors import StoreError
from trawl.stores.contract import PartlyStored
from trawl.stores.sqlite.schema import CLAIM_PAGES

if TYPE_CHECKING:
    from trawl.records.batches import Batch

_DONE = "SELECT page, rows FROM pages WHERE run = ? AND source = ?"


class PageLedger:
    """Claims of one store's run; the ingested batches' pages noted until the switch."""

    def __init__(self) -> None:
        self._noted: dict[str, dict[str, int]] = {}

    @staticmethod
    def claim(con: sqlite3.Connection, run: int, source: str, pages: dict[str, int], now: float) -> int:
        """Record the pages (one statement); how many this run did not have already."""
        return con.execute(CLAIM_PAGES, (run, source, now, orjson.dumps(pages).decode())).rowcount

    def claim_or_undo(self, con: sqlite3.Connection, run: int, batch: Batch, now: float, *undo: str) -> int:
        """Claim the batch's pages (in the open transaction or savepoint); 0 when claimed. When this
        run stored them all before: ``undo`` run (its rollback), every row marked ``repeat``, the
        number of pages returned; ``PartlyStored`` when some."""
        pages = batch.pages
        claimed = self.claim(con, run, batch.source, pages, now) if pages else 0
        if claimed == len(pages):
            return 0
        # This run stored the page before (a resumed run, a refetch):
        # merging it again would count its captures twice.
        import polars as pl

        for statement in undo:
            con.execute(statement)
        if claimed:
            raise PartlyStored(f"{len(pages) - claimed} of {len(pages)} pages stored before")
        batch.frame = batch.frame.with_columns(pl.lit(False).alias("new"), pl.lit(True).alias("repeat"))
        return len(pages)

    @staticmethod
    def done(con: sqlite3.Connection, run: int, source: str) -> dict[str, int]:
        """Pages the run stored already (page key -> upstream rows): what a resumed run skips."""
        return dict(con.execute(_DONE, (run, source)))

    def note(self, source: str, pages: dict[str, int]) -> None:
        """An ingested batch's pages, to claim with the switch."""
        self._noted.setdefault(source, {}).update(pages)

    def claim_noted(self, con: sqlite3.Connection, run: int, now: float) -> None:
        """Every noted page claimed (inside the switch's transaction); ``StoreError`` if the run
        had stored any before: a batch twice in one load, which must not be switched in."""
        for source, pages in self._noted.items():
            claimed = self.claim(con, run, source, pages, now)
            if claimed != len(pages):
                raise StoreError(
                    f"{len(pages) - claimed} of the {len(pages)} pages of the db-dump were stored"
                    " before in this run: the load is not switched"
                )

    def forget_noted(self) -> None:
        """Claimed (the switch committed), or a load starts: nothing is noted."""
        self._noted = {}
