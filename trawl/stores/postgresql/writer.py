"""The PostgreSQL store's writer thread: the one thread its connection is used on.

Every statement of a crawl's store runs here (``open``, each batch, the
ledger, ``close``), through the shared :class:`trawl.stores.writer.WriterThread`
(the bounded queue, results awaited on the reactor). psycopg releases the GIL
while it waits on the server and while libpq sends the ``COPY`` data, and the
CSV and JSON are made and read by polars (in Rust, GIL released), so the
reactor keeps the CPU meanwhile.

Why a thread, and not psycopg's ``AsyncConnection`` on the reactor's asyncio
loop: the work between round trips (the CSV of a batch, reading the merged
rows back) is CPU on polars, which on the loop would run on the reactor's
thread; a thread keeps the reactor's latency what it is with SQLite, with the
same code (and ``scrapy search``, exports and the benchmark use the same
synchronous connection).

Unlike SQLite's (one thread per file and process: the file has one write
lock), each store (one per source of ``crawl all``) has its own thread and
connection: PostgreSQL merges batches of different sources in parallel, and
row locks in URL order keep them correct (:mod:`.schema`).
"""

from __future__ import annotations

from trawl.stores.writer import WriterThread as _WriterThread


class WriterThread(_WriterThread):
    """The shared writer thread, named for PostgreSQL (its connection is the store's own)."""

    def __init__(self, name: str = "trawl-postgresql-writer") -> None:
        super().__init__(name)
