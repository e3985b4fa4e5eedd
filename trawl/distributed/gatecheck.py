"""Before a crawl starts: the Redis the shared gate needs answers, or one line and exit 1.

Checked before the reactor runs (a blocking ``PING``, once): inside the crawl a
Redis that never answered would only hold every request at the gate, which
fails closed, and the crawl would sit silent instead of saying what is wrong.
"""

from __future__ import annotations

from typing import Any

from trawl.distributed.connection import connect, redis_url


def check_shared_gate(settings: Any) -> None:
    """One-line ``UnreachableError`` if ``TRAWL_REDIS_URL`` is set, the gates are on, and Redis is silent."""
    if redis_url(settings) and settings.getbool("RATE_LIMITS_ENABLED", True):
        connect(settings).close()
