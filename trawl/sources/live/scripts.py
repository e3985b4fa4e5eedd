"""JavaScript files mined off the reactor thread, one at a time, at most ``LIVE_JS_MAX_BYTES`` each.

Mining is CPU and memory in proportion to the file: the Python
documentation's 3.6 MB ``searchindex.js`` took 1.9 s and 166 MB over the
crawl's own RSS; its first 1 MiB 0.7 s and 56 MB. A file up to
:data:`INLINE_BYTES` is mined where it arrived (a few milliseconds); a bigger
one goes to a single worker thread, so downloads and the store go on while it
is read, and only its first ``LIVE_JS_MAX_BYTES`` are read (the rest is a
bundle's tail or a data file's, and a bound per page is what keeps a crawl's
memory flat whatever the site serves). One thread: two big files mined at
once would double the peak for no gain on a crawl that is waiting on the
network anyway. Not the mining process pool: its workers cost 2-4.5 s to
start and their own RSS, for the one or two big files of a typical site.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import threads
from twisted.python.threadpool import ThreadPool

from trawl.sources.live.links import Link, script_links

#: Scripts up to this size are mined on the reactor thread (a few ms of CPU).
INLINE_BYTES = 64 << 10


def _malloc_trim() -> Any:
    """glibc's ``malloc_trim`` (None elsewhere)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


_TRIM = _malloc_trim()


def mine_and_trim(body: bytes, url: str) -> list[Link]:
    """:func:`script_links`, then the worker thread's freed memory handed back to the system.

    glibc gives the thread its own arena and keeps what mining freed in it: a
    crawl of the Python documentation peaked 60 MB higher for it (360 MB
    against 300 with ``MALLOC_ARENA_MAX=1``); one ``malloc_trim`` a big script
    (a few ms) gives it back.
    """
    try:
        return script_links(body, url)
    finally:
        if _TRIM is not None:
            _TRIM(0)


class ScriptMiner:
    """Mines scripts' endpoints; the big ones on one worker thread, cut at ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.pool: ThreadPool | None = None
        self.cut = 0  # scripts read only up to max_bytes

    async def links(self, body: bytes, url: str) -> list[Link]:
        if len(body) > self.max_bytes:
            self.cut += 1
            body = body[: self.max_bytes]
        if len(body) <= INLINE_BYTES:
            return script_links(body, url)
        from twisted.internet import reactor

        if self.pool is None:
            self.pool = ThreadPool(minthreads=0, maxthreads=1, name="trawl-live-scripts")
            self.pool.start()
        deferred: Any = threads.deferToThreadPool(reactor, self.pool, mine_and_trim, body, url)
        return await maybe_deferred_to_future(deferred)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.stop()
            self.pool = None
