"""SQLite's failures said as an operator would look for them.

SQLite's own words hide the cause an operator acts on: a full disk is
``database or disk is full``, a file of garbage is ``file is not a
database``, and a failure inside a transaction used to surface as the
``cannot rollback - no transaction is active`` of the ROLLBACK that followed
it (66 warnings, no word of the disk). So every ``sqlite3.Error``
that leaves the store goes through :func:`store_error`: the cause first, by
SQLite's primary result code (``sqlite_errorcode``, Python 3.11+), SQLite's
own message after it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3

from trawl.errors import StoreError

#: Primary result codes (https://www.sqlite.org/rescode.html) -> what to tell the operator.
_CAUSES = {
    13: "the disk is full",  # SQLITE_FULL
    8: "the store is read-only (file or folder permissions, or a read-only mount)",  # SQLITE_READONLY
    5: "the store is locked by another process beyond the busy timeout",  # SQLITE_BUSY
    6: "a table is locked by another connection",  # SQLITE_LOCKED
    26: "the file is not a SQLite database",  # SQLITE_NOTADB
    11: "the store file is damaged (truncated or overwritten)",  # SQLITE_CORRUPT
    10: "the disk could not be read or written",  # SQLITE_IOERR
    14: "the store file cannot be opened",  # SQLITE_CANTOPEN
    23: "access to the store file was denied",  # SQLITE_AUTH
}


def describe(exc: sqlite3.Error) -> str:
    """``the disk is full (SQLite: database or disk is full)``; SQLite's words if the code is unknown."""
    code = getattr(exc, "sqlite_errorcode", None)
    cause = _CAUSES.get(code & 0xFF) if isinstance(code, int) else None
    message = str(exc) or type(exc).__name__
    return f"{cause} (SQLite: {message})" if cause else message


#: SQLite's own words for a result code (``sqlite3_errstr``): a driver that passes on only the
#: message (ADBC's: ``INTERNAL: failed to execute: database or disk is full``) is read by them.
_WORDS = {
    "database or disk is full": 13,
    "attempt to write a readonly database": 8,
    "database is locked": 5,
    "file is not a database": 26,
    "database disk image is malformed": 11,
    "disk I/O error": 10,
    "unable to open database file": 14,
}


#: What SQLite may say after a write the disk refused: the scratch file has no journal
#: (:mod:`.bulk`), so a half-written page reads as damaged next. Said as the full disk when the
#: folder is nearly full (a crawl onto a 300 KB tmpfs gave "database disk image is malformed").
_AFTER_A_FAILED_WRITE = frozenset({11, 10})
#: Free bytes under which a failed write's folder counts as full (a few SQLite pages).
_NEARLY_FULL = 1 << 20


def describe_driver_error(exc: Exception, path: str) -> str:
    """:func:`describe` for another SQLite driver's error on ``path`` (ADBC's bulk loads): the cause by
    SQLite's words in its message, ``the disk is full (SQLite: database or disk is full)``; else
    its first line.

    ADBC's ingest rolls back after a failed insert, and on a full disk SQLite has ended the
    transaction itself: the message is then that of the rollback (``cannot rollback - no
    transaction is active``). A failure with less than :data:`_NEARLY_FULL` free beside ``path``
    is said as the full disk it is.
    """
    message = (str(exc).splitlines() or [type(exc).__name__])[0]
    code, words = next(((c, w) for w, c in _WORDS.items() if w in message), (None, ""))
    said = f"{_CAUSES[code]} (SQLite: {words})" if code is not None else None
    if said is not None and code not in _AFTER_A_FAILED_WRITE:
        return said
    try:
        free = shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free
    except OSError:
        free = _NEARLY_FULL
    if free < _NEARLY_FULL:
        return f"{_CAUSES[13]} (SQLite: database or disk is full)"
    return said or message


def store_error(what: str, exc: sqlite3.Error) -> StoreError:
    """A ``StoreError`` naming ``what`` failed and why: ``cannot write to 'x.db': the disk is full (...)``."""
    return StoreError(f"{what}: {describe(exc)}")
