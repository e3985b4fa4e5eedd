"""The ledger's pages of a dump load's ingested batches, claimed with the switch.

The load's ingest process (:mod:`.ingest`) writes a batch's rows; the store's writer
only has to claim its pages. Claimed a batch at a time, the writer queued for the
file's write lock 724 times at full scale while the ingest process held it, and the
ingest process waited for each claim in turn: 5 s of a 43 s load. Until the switch
the staged rows are no snapshot (a load that fails or stops switches nothing, and a
resumed run writes them again), so the ledger need not name their pages before it:
they are noted here and claimed in the switch's own transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from trawl.errors import StoreError

#: ``(connection, source, pages) -> how many the run did not have``: the store's claim.
Claim = Callable[[sqlite3.Connection, str, dict[str, int]], int]


class IngestedPages:
    """Pages noted per source until the switch claims them."""

    def __init__(self) -> None:
        self._pages: dict[str, dict[str, int]] = {}

    def note(self, source: str, pages: dict[str, int]) -> None:
        self._pages.setdefault(source, {}).update(pages)

    def claim(self, con: sqlite3.Connection, claim: Claim) -> None:
        """Every noted page claimed (inside the switch's transaction); ``StoreError`` if the run
        had stored any before: a batch twice in one load, which must not be switched in."""
        for source, pages in self._pages.items():
            claimed = claim(con, source, pages)
            if claimed != len(pages):
                raise StoreError(
                    f"{len(pages) - claimed} of the {len(pages)} pages of the db-dump were stored"
                    " before in this run: the load is not switched"
                )

    def forget(self) -> None:
        """Claimed (the switch committed), or a load starts: nothing is noted."""
        self._pages = {}
