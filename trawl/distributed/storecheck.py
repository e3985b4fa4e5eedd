"""One store for one queue: a SQLite store is never shared across machines.

Workers on one machine may share a SQLite file (one WAL file, SQLite's locks:
tested with three workers). Workers on several machines cannot: each would
write a file of its own, and a domain's results would be split between them
without a word. So each worker records, next to its heartbeat, its host and
whether its store is SQLite (:data:`STORES`, a hash); a worker that would mix
a SQLite store with a live worker on another host is refused at start in one
line (exit 2), whichever of the two started first. A dead worker's entry
(no heartbeat) is dropped when met.
"""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlsplit

from trawl.common.secrets import redact
from trawl.distributed.queue import PREFIX, WorkQueue, heartbeat_key
from trawl.errors import TrawlUsageError

#: worker id -> "host<TAB>sqlite" or "host<TAB>shared".
STORES = PREFIX + "worker-stores"


def store_kind(store_uri: str) -> str:
    """``sqlite`` for a file on this machine (the default store too), ``shared`` for a server."""
    return "sqlite" if urlsplit(store_uri.strip()).scheme.lower() == "sqlite" else "shared"


def claim_store(queue: WorkQueue, worker: str, store_uri: str, host: str | None = None) -> None:
    """Record ``worker``'s store; ``TrawlUsageError`` if it would mix SQLite with another machine."""
    host = host or socket.gethostname()
    kind = store_kind(store_uri)
    client = queue.client
    queue.beat(worker)  # alive before it is listed: another worker meeting the entry keeps it
    for raw_other, raw_value in client.hgetall(STORES).items():
        other = _text(raw_other)
        if other == worker:
            continue
        if not client.exists(heartbeat_key(other)):
            client.hdel(STORES, other)  # a dead worker's
            continue
        other_host, _, other_kind = _text(raw_value).partition("\t")
        if other_host != host and "sqlite" in (kind, other_kind):
            where = f"worker {other} on {other_host}"
            raise TrawlUsageError(
                f"a SQLite store cannot be shared across machines: {where} uses"
                f" {'a SQLite store' if other_kind == 'sqlite' else 'a shared store'}, this one on {host}"
                f" {'STORE_URI ' + repr(redact(store_uri)) if kind == 'sqlite' else 'a shared store'};"
                " give every worker STORE_URI=postgresql://... (docs/distributed.md)"
            )
    client.hset(STORES, worker, f"{host}\t{kind}")


def release_store(queue: WorkQueue, worker: str) -> None:
    """``worker`` is gone: its entry too."""
    queue.client.hdel(STORES, worker)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
