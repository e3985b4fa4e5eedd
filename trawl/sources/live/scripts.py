"""JavaScript files mined for URLs: small ones where they arrive, big ones in the mining pool.

Mining is CPU and memory in proportion to the file: the Python
documentation's 3.6 MB ``searchindex.js`` took 1.9 s and 166 MB over the
crawl's own RSS; its first 1 MiB 0.7 s and 56 MB. A file up to
:data:`INLINE_BYTES` is mined on the reactor thread (a few milliseconds); a
bigger one goes to the mining process pool (:class:`trawl.mining.pool.MiningPool`,
both cores), so the crawl process neither parses nor holds the GIL for it:
its peak RSS does not depend on what JavaScript the site serves. Only a
file's first ``LIVE_JS_MAX_BYTES`` are read (the rest is a bundle's tail or
a data file's), and a worker parses a script 256 KiB at a time
(:mod:`trawl.mining.readers.jswindows`), so its memory is bounded whatever the
script: 44 MB of RSS at its peak for the search index's first 1 MiB (94 MB
parsed whole). The pool starts on the
first big script (0.4-0.6 s to a first result on this machine, seconds under
load) while the crawl goes on; a site with none never starts it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.utils.defer import maybe_deferred_to_future

from trawl.mining.work import mine_body
from trawl.sources.live.links import Link, findings_links, script_links

if TYPE_CHECKING:
    from trawl.mining.pool import MiningPool

logger = logging.getLogger(__name__)

#: Scripts up to this size are mined on the reactor thread (a few ms of CPU).
INLINE_BYTES = 64 << 10


class ScriptMiner:
    """Mines scripts' endpoints; the big ones in the mining pool, cut at ``max_bytes``."""

    def __init__(self, max_bytes: int, processes: int = 0) -> None:
        self.max_bytes = max_bytes
        self.processes = processes
        self.pool: MiningPool | None = None
        self.cut = 0  # scripts read only up to max_bytes
        self.pooled = 0  # scripts mined in the pool
        self.failed = 0  # scripts the pool could not mine (a worker died)

    async def links(self, body: bytes, url: str) -> list[Link]:
        if len(body) > self.max_bytes:
            self.cut += 1
            body = body[: self.max_bytes]
        if len(body) <= INLINE_BYTES:
            return script_links(body, url)
        if self.pool is None:
            from trawl.mining.pool import MiningPool

            self.pool = MiningPool(self.processes)
        self.pooled += 1
        try:
            findings = await maybe_deferred_to_future(
                self.pool.run(mine_body, body, url, "application/javascript")
            )
        except Exception as exc:  # noqa: BLE001 - a broken pool (a worker killed): the page's other links stand
            self.failed += 1
            if self.failed == 1:
                logger.warning("live: cannot mine %s: %s: %s", url, type(exc).__name__, str(exc)[:200])
            return []
        return findings_links(findings, url)

    def close(self) -> None:
        """Stop the pool, if it started; say how many scripts it mined."""
        if self.pooled:
            logger.info("live: %d scripts over %d KiB mined in the pool", self.pooled, INLINE_BYTES >> 10)
        if self.pool is not None:
            self.pool.close()
            self.pool = None
