"""A lost connection to the store's server, waited out: a backoff, one line when it starts, one when it ends.

A PostgreSQL restart (a minor upgrade, a failover, ``pg_ctl restart``) is not
the crawl's fault, nor the upstream's: before, the batch being written failed
the crawl (``partial``), and a worker dead-lettered its task.
Now the store's writer thread treats a lost connection (connection
refused, the server shutting down or starting up, the session ended by
``pg_ctl stop``, the socket closed under it) as an outage: it reconnects with a
delay doubling from :data:`FIRST_DELAY` to :data:`MAX_DELAY`, for at most
``POSTGRES_OUTAGE_MAX`` seconds, while the crawl's pages wait in the
pipeline's bounded queue (:mod:`trawl.stores.writer`: downloads pause once it
is full). The batch it was writing is written again whole, in a new
transaction, exactly once (:mod:`.store`, the ``trawl_batches`` ledger).

What is said: one WARNING when a process's stores first lose the server and
one when the first of them has it back, whichever of the process's stores (one
per crawl: a worker runs several) noticed, as the worker does for Redis
(:mod:`trawl.distributed.outage`). Past the bound, :class:`StoreOutage`: the
crawl stops as on any store failure, and its stats say why
(:data:`trawl.common.statkeys.STORE_OUTAGE`), so that ``trawl worker`` hands the task back to the
queue instead of dead-lettering it.

Anything else (a full disk, a refused password, a constraint) is no outage:
the batch fails as before.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

import psycopg

from trawl.errors import StoreError, TrawlError
from trawl.stores.postgresql.errors import describe

if TYPE_CHECKING:
    from collections.abc import Callable

logger = logging.getLogger(__name__)

#: The first wait after a lost connection, and the longest: a server back is noticed within
#: :data:`MAX_DELAY` (a restart takes seconds; trying more often would only fill the server's log).
FIRST_DELAY = 0.25
MAX_DELAY = 2.0
#: SQLSTATEs of a server going away or not there yet (class ``08``, connection exceptions, too):
#: ``admin_shutdown`` (``pg_ctl stop -m fast``), ``crash_shutdown``, ``cannot_connect_now``.
SHUTDOWN = frozenset({"57P01", "57P02", "57P03"})


class StoreOutage(StoreError):
    """The store's server stayed unreachable longer than ``POSTGRES_OUTAGE_MAX``."""


def lost(exc: BaseException, con: psycopg.Connection | None = None) -> bool:
    """Whether ``exc`` says the server went away (or is not there yet), not that the batch was refused."""
    if not isinstance(exc, psycopg.Error):
        return False
    code = getattr(exc, "sqlstate", None) or ""
    if code[:2] == "08" or code in SHUTDOWN:
        return True
    if con is not None and con.broken:
        return True
    # libpq's own failures carry no SQLSTATE: connection refused, the server closed the connection.
    return isinstance(exc, psycopg.OperationalError) and not code


class _Said:
    """What this process said of each server's outage, shared by its stores' writer threads and the
    worker's checks: one line when the first of them loses the server, one when the first has it back
    (a store giving up in between says nothing: the outage goes on)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: Servers (masked URIs) whose last news was an outage -> when it was first noticed.
        self._away: dict[str, float] = {}

    def started(self, server: str, exc: BaseException, limit: float) -> None:
        with self._lock:
            if server in self._away:
                return
            self._away[server] = time.monotonic()
        logger.warning(
            "PostgreSQL store %s unreachable (%s): waiting for it, the crawls' batches held, reconnecting"
            " with a backoff up to %.0f s, for at most %.0f s (POSTGRES_OUTAGE_MAX)",
            server, describe(exc), MAX_DELAY, limit,
        )  # fmt: skip

    def ended(self, server: str) -> None:
        with self._lock:
            since = self._away.pop(server, None)
        if since is not None:
            logger.warning("PostgreSQL store %s is back after %.1f s", server, time.monotonic() - since)


said = _Said()


class Outage:
    """One store's wait for its server, from the first failure to the server back or the bound."""

    def __init__(self, server: str, limit: float, sleep: Callable[[float], Any] | None = None) -> None:
        self.server = server
        self.limit = limit
        self.since = time.monotonic()
        self.delay = FIRST_DELAY
        self._sleep = sleep or threading.Event().wait  # backing off from a down server: nothing to poll

    def wait(self, exc: BaseException) -> None:
        """Sleep before the next try; :class:`StoreOutage` once the bound is reached."""
        said.started(self.server, exc, self.limit)
        elapsed = time.monotonic() - self.since
        if elapsed >= self.limit:
            raise StoreOutage(
                f"the PostgreSQL store {self.server} was unreachable for {elapsed:.0f} s"
                f" (POSTGRES_OUTAGE_MAX={self.limit:g}): {describe(exc)}"
            )
        self._sleep(min(self.delay, self.limit - elapsed))
        self.delay = min(self.delay * 2, MAX_DELAY)


#: Called with a crawl's settings, on its store's writer thread, when the store gives up and before the
#: first batch it drops leaves the pipeline: ``trawl worker`` marks the spread run whose pages a joiner
#: drops (its owner then runs the task again, :mod:`trawl.distributed.worker`).
_dropping_hooks: list[Callable[[Any], None]] = []


def on_dropping(hook: Callable[[Any], None]) -> None:
    """Call ``hook(settings)`` when a store of this process starts dropping batches for an outage."""
    if hook not in _dropping_hooks:
        _dropping_hooks.append(hook)


def dropping(settings: Any) -> None:
    for hook in list(_dropping_hooks):
        try:
            hook(settings)
        except Exception as exc:  # noqa: BLE001 - the store's failure is the news; this one a line
            logger.error("after a store outage: %s: %s", type(exc).__name__, exc)


def outlasting(
    server: str, limit: float, action: Callable[[], Any], broken: Callable[[], psycopg.Connection | None],
    reset: Callable[[], None],
) -> Any:  # fmt: skip
    """``action()``, tried again after each lost connection (``reset()`` between: the next try
    connects anew) until it returns or ``limit`` seconds have passed (:class:`StoreOutage`).
    ``broken()``: the connection the failure happened on, if any. ``limit`` 0: no wait at all."""
    outage: Outage | None = None
    again = True
    while True:
        try:
            result = action()
        except psycopg.Error as exc:
            if limit <= 0 or not lost(exc, broken()):
                raise
            reset()
            if again:  # a session ended while idle (the server restarted since): a new one, at once
                again = False
                continue
            outage = outage or Outage(server, limit)
            outage.wait(exc)
            continue
        said.ended(server)  # says so if this process had lost the server
        return result


def wait_for_store(settings: Any) -> None:
    """Return once the PostgreSQL server of ``STORE_URI`` accepts a connection; :class:`StoreOutage`
    if it does not within ``POSTGRES_OUTAGE_MAX``. At once for any other store, and for a refusal
    that is no outage (the store's check says what it is, in one line).

    For ``trawl worker``'s checks before a task's crawl, off the reactor: a task taken while the
    server restarts waits for it, as the crawls writing to it do, instead of being refused, and its
    store then opens at once (it opens on the reactor, before the crawl starts). One connection, made
    and closed: a task is a whole crawl."""
    from urllib.parse import urlsplit

    from trawl.settings_checks import read
    from trawl.stores.postgresql import connection
    from trawl.stores.postgresql.config import SETTINGS

    uri = str(settings.get("STORE_URI") or "").strip()
    if urlsplit(uri).scheme.lower() not in connection.SCHEMES:
        return
    timeout = int(read(settings, SETTINGS, "POSTGRES_CONNECT_TIMEOUT"))
    limit = float(read(settings, SETTINGS, "POSTGRES_OUTAGE_MAX"))

    def probe() -> None:
        with connection.connect(uri, timeout, autocommit=True) as con:
            con.execute("SELECT 1")

    try:
        outlasting(connection.hide(uri), limit, probe, lambda: None, lambda: None)
    except StoreOutage:
        raise
    except (psycopg.Error, ValueError, TrawlError):
        return  # no outage (a refused password, a bad URI): the store's check at start says it
