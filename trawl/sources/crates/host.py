"""What the crates source's parts need from the spider they run in, as a Protocol.

The API walk (:mod:`.api`, :mod:`.apifetch`), the history backfill
(:mod:`.history`) and the incremental update (:mod:`.incremental`) are driven
by the crates spider, which imports them all; each naming the spider's class
for its type closed a circle of six modules. They name this instead: the
spider's attributes and methods they use, no more.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import logging

    import scrapy
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure


class CratesHost(Protocol):
    """The crates spider as its parts see it (:class:`trawl.sources.crates.spider.CratesSpider`)."""

    name: str
    crawler: Crawler
    base_url: str
    batch_rows: int
    items_pending: int
    parquet_dir: Path | None

    @property
    def logger(self) -> logging.LoggerAdapter[logging.Logger]: ...

    def page_done(self, key: str) -> int | None: ...

    def take_request(self) -> bool: ...

    def retry_bad_body(self, response: Response, message: str, *args: Any) -> scrapy.Request | None: ...

    def record_error(self, kind: str, message: str, *args: Any) -> None: ...

    def record_blocked(self, message: str) -> None: ...

    def on_request_error(self, failure: Failure) -> None: ...

    def describe_url(self, url: str) -> str: ...

    async def _store_caught_up(self, everything: bool = False) -> bool: ...
