"""The Redis that distributed runs share: ``TRAWL_REDIS_URL``, checked, connected, its password masked.

One place reads the setting (``-s TRAWL_REDIS_URL=...`` or the environment),
so that the queue, the shared gate and the metrics agree on it, and a Redis
that cannot be reached at start is one ``trawl: error:`` line (exit 2), never a
``redis.exceptions.ConnectionError`` traceback. Its password, if the URL has
one, is registered as a secret before anything can log the URL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from trawl.common.secrets import redact, register_secret
from trawl.errors import TrawlUsageError, UnreachableError

if TYPE_CHECKING:
    import redis

SETTING = "TRAWL_REDIS_URL"
#: Seconds to wait for Redis to answer at start: a local or LAN server answers in milliseconds.
CONNECT_TIMEOUT = 5.0


def redis_url(settings: Any) -> str:
    """The shared Redis's URL, or ``""`` when runs are not distributed."""
    url = str(settings.get(SETTING) or "").strip()
    if url:
        password = urlsplit(url).password
        if password:
            register_secret(password)
    return url


def check_redis_url(settings: Any, name: str, sources: Any = None) -> None:
    """``redis://[user:password@]host[:port][/db]``, ``rediss://`` or ``unix://``; empty: not distributed."""
    value = str(settings.get(name) or "").strip()
    if not value:
        return
    parts = urlsplit(value)
    if parts.scheme not in ("redis", "rediss", "unix") or (parts.scheme != "unix" and not parts.hostname):
        raise TrawlUsageError(
            f"{name} {redact(value)!r} must be a Redis URL such as redis://127.0.0.1:6379/0"
        )


def client(settings: Any) -> redis.Redis:
    """A client of the shared Redis, not asked anything yet (connections are made on first use).

    For what runs inside a worker, which reached Redis at its start and waits out an outage
    (:mod:`.outage`): a crawler built during an outage must not fail on a ``PING``.
    """
    import redis

    url = redis_url(settings)
    if not url:
        raise TrawlUsageError(f"{SETTING} is not set: name the shared Redis (e.g. redis://127.0.0.1:6379/0)")
    return redis.Redis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=30)


def connect(settings: Any) -> redis.Redis:
    """A client of the shared Redis that answered ``PING``; ``UnreachableError`` in one line if none does."""
    import redis

    url = redis_url(settings)
    try:
        shared = client(settings)
        shared.ping()
    except (redis.RedisError, ValueError) as exc:
        raise UnreachableError(f"{SETTING} {redact(url)!r}: cannot reach Redis: {redact(str(exc))}") from None
    return shared
