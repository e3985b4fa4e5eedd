"""PostgreSQL's failures said as an operator would look for them.

psycopg raises an error class per SQLSTATE, with the server's message (often
several lines, with a ``DETAIL`` and a ``HINT``). The store says the cause
first, by SQLSTATE or its class, the server's first line after it, on one line
(the pipeline's one error line, :mod:`trawl.pipeline.itempipeline`), the way
:mod:`trawl.stores.sqlite.errors` does for SQLite.
"""

from __future__ import annotations

import psycopg

from trawl.errors import StoreError
from trawl.stores.postgresql.connection import one_line

#: SQLSTATE -> what to tell the operator (https://www.postgresql.org/docs/15/errcodes-appendix.html).
_CODES = {
    "53100": "the database server's disk is full",
    "53200": "the database server is out of memory",
    "53300": "the database server has too many connections (max_connections)",
    "57P01": "the database server was shut down",
    "57P02": "the database server crashed",
    "57P03": "the database server is starting up or shutting down",
    "57014": "a statement was cancelled (statement_timeout, or by an administrator)",
    "25006": "the database is read-only (a standby, or default_transaction_read_only)",
    "42501": "the store's user lacks a privilege on the store's tables",
    "40P01": "a deadlock with another writer",
    "40001": "a serialization failure with another writer",
    "21000": "a URL twice in one batch",
    "23502": "a record without URL or host",
    "3D000": "the database does not exist",
}
#: SQLSTATE class (first two characters) -> cause, when the code itself is not listed.
_CLASSES = {
    "08": "the connection to the database server was lost",
    "28": "the database server refused the user or password",
    "53": "the database server ran out of resources",
    "58": "the database server had an I/O error",
    "XX": "the database server had an internal error",
}
#: Worth trying the batch again: another writer's lock order, not the batch.
RETRYABLE = frozenset({"40P01", "40001"})


def describe(exc: BaseException) -> str:
    """``the database server's disk is full (PostgreSQL: could not extend file ...)``."""
    message = one_line(exc)
    code = getattr(exc, "sqlstate", None) or ""
    cause = _CODES.get(code) or _CLASSES.get(code[:2])
    if cause is None and isinstance(exc, psycopg.OperationalError):
        cause = _CLASSES["08"]  # libpq's own failures carry no SQLSTATE: the server went away
    return f"{cause} (PostgreSQL: {message})" if cause else f"PostgreSQL: {message}"


def store_error(what: str, exc: BaseException) -> StoreError:
    """``StoreError``: ``cannot write to ...: the connection to the database server was lost (...)``."""
    return StoreError(f"{what}: {describe(exc)}")
