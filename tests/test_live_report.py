"""The live crawl's finish lines say what was not fetched, robots.txt's refusals included."""

from __future__ import annotations

from types import SimpleNamespace

from scrapy.settings import Settings
from scrapy.statscollectors import MemoryStatsCollector

from trawl.sources.live.report import Report


def test_urls_robots_txt_disallows_are_said_at_the_end() -> None:
    crawler = SimpleNamespace()
    crawler.stats = MemoryStatsCollector(SimpleNamespace(settings=Settings({"STATS_DUMP": False})))
    report = Report(crawler)
    for _ in range(3):
        report.count("robots_forbidden")
    lines = report.lines("live", SimpleNamespace(dropped={}, cap=3))
    assert lines == [
        "live: 0 pages fetched (none), 0 URLs found",
        "live: 3 URLs disallowed by robots.txt, not fetched",
    ]
