"""Scrapy's downloader, with each source's concurrency enforced by its download slot.

``Downloader._process_queue`` (Scrapy 2.19) hands out a slot's queued requests
while ``slot.free_transfer_slots() > 0``, but a request only joins
``slot.transferring`` once the coroutine that downloads it starts, and under
the asyncio reactor that coroutine is a task (``loop.create_task``) that
starts on a later turn of the loop. One pass of the loop therefore hands out
the whole queue: ``CONCURRENT_REQUESTS_PER_DOMAIN`` (and a ``DOWNLOAD_SLOTS``
concurrency) limits nothing, only ``CONCURRENT_REQUESTS`` does. With the
source gates off (``RATE_LIMITS_ENABLED=False``) nothing else held a source
back: against servers that take 50 ms to answer, OTX sent 14 pages at once with
a limit of 4, and Common Crawl 9 with the 2 its operators ask for. (The gates,
when on, count their own requests in flight and were not affected.)

Here a request counts as transferring from the moment it is handed out, and a
slot's default concurrency is the source's (``SOURCE_CONCURRENCY``, else the
spider's default, else ``CONCURRENT_REQUESTS_PER_DOMAIN``: see
:func:`trawl.politeness.ratelimit.source_concurrency`), so that the gate and
the slot never disagree. Each source runs in a crawler of its own (``crawl
all`` included), with a downloader and slots of its own: two sources on one
host do not share a slot.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from scrapy.core.downloader import Downloader as ScrapyDownloader

from trawl.politeness.ratelimit import source_concurrency

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.core.downloader import Slot
    from scrapy.crawler import Crawler
    from twisted.internet.defer import Deferred


class Downloader(ScrapyDownloader):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.domain_concurrency = max(source_concurrency(crawler.settings, crawler.spidercls), 1)

    def _wait_for_download(
        self, slot: Slot, request: Request, queue_dfd: Deferred[Any]
    ) -> Coroutine[Any, Any, None]:
        # Not a coroutine function: this runs inside _process_queue's loop, before
        # the loop checks free_transfer_slots() again. _download() adds the request
        # once more (a set: no change) and removes it when the download ends.
        slot.transferring.add(request)
        return super()._wait_for_download(slot, request, queue_dfd)
