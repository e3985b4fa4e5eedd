"""The trap guard: soft-404 hosts and page patterns that never stop producing new URLs.

**Soft-404 hosts** (gospider #73: a server that answers 200 for every path
makes every link on its error page a new page, forever). Before an HTML page of
an origin is parsed, the origin's answer to a path that cannot exist is
fetched once (the probe's rule, :mod:`trawl.sources.probe.soft404`: a random
path, its final status and echo-free simhashes), outside the crawl's queue
(``engine.download``, as Scrapy's robots.txt middleware fetches robots.txt).
A page with the same status whose echo-free simhashes come within
``LIVE_SOFT404_DISTANCE`` bits of it is that host's error page: counted as
``soft-404`` and not parsed, so its links are never followed. Both are hashed
with the URLs they were asked as taken out of their text (the probe's
"echoes"): an error page that quotes its path was missed otherwise, the test
site's soft host in 6 runs of 20 of tests/test_live_crawl.py (0 in 20 since),
and 750 of the 1,200 echoing pages of tests/test_probe.py (none since).

**Patterns** (calendars, ``?sid=`` session loops, ``/page/2/page/3``): each new
URL's pattern is the probe's (:mod:`trawl.sources.probe.patterns`: the host, the
path with digit runs, hex runs and UUIDs made placeholders, the sorted query
parameter names). A pattern gets at most ``LIVE_PATTERN_CAP`` pages fetched;
the URLs past that are stored (they were found) but not fetched, counted per
pattern and reported at the end of the run. The cap is per crawler: in a
spread run each worker counts its own (see docs/live.md).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from scrapy import Request
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from trawl.sources.probe.answers import asked_urls
from trawl.sources.probe.patterns import patterns
from trawl.sources.probe.soft404 import Origin, closest, echo_free_simhashes, random_path


class PatternCap:
    """Admits at most ``cap`` URLs of each pattern; counts the others."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.admitted: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()

    def admit(self, urls: list[str]) -> list[bool]:
        """For each URL (new ones only, in order): may it be fetched?"""
        if not urls:
            return []
        verdicts = []
        for pattern in patterns(urls):
            if self.admitted[pattern] < self.cap:
                self.admitted[pattern] += 1
                verdicts.append(True)
            else:
                self.dropped[pattern] += 1
                verdicts.append(False)
        return verdicts


def page_simhashes(response: Any) -> tuple[int, ...]:
    """A text answer's echo-free simhashes (the URLs it was asked as taken out of its text)."""
    text = response.body.decode(response.encoding, errors="replace")
    return echo_free_simhashes(text, asked_urls(response))


class SoftHosts:
    """Each origin's answer to a random path, fetched once per crawler, awaited by its pages."""

    def __init__(self, crawler: Any, distance: int, meta: dict[str, Any]) -> None:
        self.crawler = crawler
        self.distance = distance
        self.meta = meta
        self.origins: dict[str, Origin | Deferred[None]] = {}

    async def origin(self, key: str) -> Origin:
        known = self.origins.get(key)
        if isinstance(known, Origin):
            return known
        if isinstance(known, Deferred):  # asked by another page: its result is in the dict once it fires
            await maybe_deferred_to_future(known)
            return self.origins[key]  # type: ignore[return-value]
        waiting: Deferred[None] = Deferred()
        self.origins[key] = waiting
        origin = Origin(favicon_done=True)
        request = Request(key + random_path(), callback=NO_CALLBACK, meta=dict(self.meta), priority=100)
        try:
            response = await self.crawler.engine.download_async(request)
        except Exception:  # noqa: BLE001 - no answer to the random path: nothing to compare with
            response = None
        if response is not None:
            origin.baseline_status = response.status
            if response.status < 400 and hasattr(response, "text"):
                origin.baseline_simhashes = page_simhashes(response)
        origin.baseline_done = True
        self.origins[key] = origin
        waiting.callback(None)
        return origin

    def is_soft404(self, origin: Origin, response: Any) -> bool:
        """Is this text answer its host's error page? (hashed only when the host answers everything)"""
        if not (origin.answers_everything and response.status == origin.baseline_status):
            return False
        bits = closest(page_simhashes(response), origin.baseline_simhashes)
        return bits is not None and bits <= self.distance
