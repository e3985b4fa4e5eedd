"""robots.txt read up to 500 KiB, as RFC 9309 (2.5) lets a crawler and Google does.

A 10 MB robots.txt of 500,000 ``Disallow`` lines cost a live crawl 235 MB of
RSS and seconds of parsing (Protego keeps every rule, and tries them all on
every URL). The live crawl's robots.txt download stops past
:data:`ROBOTS_MAX_BYTES` (:class:`trawl.sources.live.transfer.PageCap`, which
says so in one WARNING), and :class:`BoundedRobotParser` (``ROBOTSTXT_PARSER``
of the live crawl and the probe) parses the file up to the last whole line
before that limit: the rules past it are ignored, the ones before it hold. A
line cut in the middle would have been a shorter, broader rule
(``Disallow: /private/0012345`` cut to ``Disallow: /``).
"""

from __future__ import annotations

from typing import Any

from scrapy.robotstxt import ProtegoRobotParser

#: Bytes of a robots.txt read and parsed (RFC 9309 2.5: at least 500 KiB).
ROBOTS_MAX_BYTES = 500 << 10


def robots_head(body: bytes) -> bytes:
    """The whole lines of ``body`` within :data:`ROBOTS_MAX_BYTES` (all of it when shorter)."""
    if len(body) <= ROBOTS_MAX_BYTES:
        return body
    head = body[:ROBOTS_MAX_BYTES]
    return head[: head.rfind(b"\n") + 1]


class BoundedRobotParser(ProtegoRobotParser):
    """Scrapy's default robots.txt parser, given at most :data:`ROBOTS_MAX_BYTES` of the file."""

    def __init__(self, robotstxt_body: bytes, spider: Any) -> None:
        super().__init__(robots_head(robotstxt_body), spider)
