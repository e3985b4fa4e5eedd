"""``STORE_URI=postgresql://user[:password]@host[:port]/db``: checked, masked, connected.

libpq reads the URI itself (``postgres://`` too, and query parameters such as
``?sslmode=require``); this module only refuses what cannot name a store,
registers the password as a secret before anything can log the URI
(:mod:`trawl.common.secrets`), and connects with a timeout. A server that cannot
be reached when a command starts is one ``trawl: error:`` line and exit 2
(:func:`probe`, called by ``check_uri``), never a psycopg traceback.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from trawl.common.secrets import redact, register_secret
from trawl.errors import StoreError, TrawlUsageError

if TYPE_CHECKING:
    import psycopg

SCHEMES = ("postgresql", "postgres")
#: Seconds to wait for the server when a command starts: a local or LAN server answers in milliseconds.
PROBE_TIMEOUT = 5
#: URIs that answered in this process: ``check_uri`` runs once per command and once per crawler.
_reachable: set[str] = set()
_lock = threading.Lock()


def hide(uri: str) -> str:
    """``uri`` with its password masked (``postgresql://u:***@h/db``), for every message."""
    parts = urlsplit(uri)
    if parts.password:
        uri = uri.replace(f":{parts.password}@", ":***@", 1)
    return redact(uri)


def check(uri: str) -> str:
    """The URI if it can name a store; else ``TrawlUsageError`` in one line. Registers its password."""
    parts = urlsplit(uri)
    if parts.password:
        register_secret(parts.password)
        register_secret(unquote(parts.password))
    if parts.scheme.lower() not in SCHEMES:
        raise TrawlUsageError(f"STORE_URI {hide(uri)!r}: use postgresql://user@host[:port]/database")
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise TrawlUsageError(f"STORE_URI {hide(uri)!r}: {exc}") from None
    if not parts.path.strip("/"):
        raise TrawlUsageError(
            f"STORE_URI {hide(uri)!r} names no database (postgresql://user@host[:port]/database)"
        )
    if "/" in parts.path.strip("/"):
        raise TrawlUsageError(f"STORE_URI {hide(uri)!r}: the path is the database's name, one word")
    return uri


def one_line(exc: BaseException) -> str:
    """libpq's message on one line (it spans two or three, with a hint), secrets masked."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return redact(text or type(exc).__name__)


def connect(uri: str, timeout: float, autocommit: bool = False) -> psycopg.Connection:
    """A connection to the store's database; ``psycopg.OperationalError`` if none can be made."""
    import psycopg

    return psycopg.connect(
        check(uri), connect_timeout=max(1, int(timeout)), autocommit=autocommit, application_name="trawl"
    )


#: What libpq says when the server answered and refused what the URI names (a user or password it
#: does not accept, a database that is not there): fixing the URI fixes it (exit status 2). A server
#: that does not answer, is starting or is full is a failed run (1), as it would be mid-run. libpq
#: gives a failed connection no SQLSTATE (psycopg's ``sqlstate`` is None), hence its words.
REFUSED_INPUT = (
    "password authentication failed",
    "no password supplied",
    "authentication failed for user",
    "does not exist",
)


def refused_input(exc: BaseException) -> bool:
    """The server refused the URI's user, password or database (not: it could not be reached)."""
    text = str(exc)
    return "FATAL:" in text and any(words in text for words in REFUSED_INPUT)


def probe(uri: str) -> None:
    """Connect once (``SELECT 1``); else one line naming the server and why: ``StoreError`` (exit status
    1) if it cannot be reached, ``TrawlUsageError`` (2) if it refused the URI's user, password or database."""
    import psycopg

    check(uri)
    with _lock:
        if uri in _reachable:
            return
    try:
        with connect(uri, PROBE_TIMEOUT, autocommit=True) as con:
            con.execute("SELECT 1")
    except psycopg.Error as exc:
        message = f"STORE_URI {hide(uri)!r}: cannot reach PostgreSQL: {one_line(exc)}"
        # The server answered that the URI is wrong (a password, a database that is not there): bad input.
        if refused_input(exc):
            raise TrawlUsageError(message) from None
        raise StoreError(message) from None
    with _lock:
        _reachable.add(uri)
