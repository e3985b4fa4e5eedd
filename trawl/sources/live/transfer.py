"""How much of an answer the live crawl reads, and how many answers of one host at once.

**Bytes.** A page is read whole up to ``LIVE_MAX_BYTES`` (8 MiB by default:
links past it are not seen, and the page is flagged ``truncated`` in the
stats). A body the crawl does not parse (anything but HTML, JavaScript, XML
and plain text: :func:`trawl.sources.live.links.page_kind`) is not downloaded
past its headers: the download stops there (Scrapy's
``StopDownload(fail=False)`` from the ``headers_received`` signal, as the probe
does, :mod:`trawl.sources.probe.transfer`) and the URL is stored with its
status and type. Scrapy's ``DOWNLOAD_MAXSIZE`` is 0 on these requests: it would
fail a 2 GB ISO's answer on its ``Content-Length`` instead of storing it. A
compressed answer (sent although the crawl asks for ``Accept-Encoding:
identity``) inflates at most to ``LIVE_MAX_BYTES`` too (``meta[INFLATE_LIMIT]``,
:mod:`trawl.politeness.bounds`): past it the page fails, said in one WARNING
(``answer over the size limit of 8 MiB (LIVE_MAX_BYTES): ...``), stored with the
verdict ``error``, counted as ``trawl/live/too_large``. Before, a 1 MB page
inflating to 1 GiB was read whole (4.36 GB of RSS) and stored as a page.

**robots.txt** (Scrapy's request, ``meta["dont_obey_robotstxt"]``) is read up
to :data:`~trawl.sources.live.robots.ROBOTS_MAX_BYTES` (500 KiB) and no
further, said once in a WARNING (``robots.txt ... over 500 KiB``), counted as
``trawl/live/robots_cut``; the rest is neither downloaded nor parsed
(:mod:`.robots`).

**Hosts.** Each host's download slot takes ``LIVE_HOST_CONCURRENCY`` requests at
once (2 by default); the source's concurrency (``SOURCE_CONCURRENCY["live"]``,
8 by default) bounds the whole crawl.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.exceptions import StopDownload

from trawl.politeness.bounds import size_text
from trawl.politeness.downloader import Downloader
from trawl.sources.live.links import page_kind
from trawl.sources.live.robots import ROBOTS_MAX_BYTES

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

#: request.meta key marking the live crawl's requests (the cap leaves any other alone).
LIVE = "trawl_live"
_READ = "trawl_live_read"


class PageCap:
    """Stops a download after the headers of a body not parsed, or at ``LIVE_MAX_BYTES``."""

    def __init__(self, max_bytes: int, crawler: Any) -> None:
        self.max_bytes = max_bytes
        self.crawler = crawler  # its stats exist once the crawl starts

    def headers_received(self, headers: Any, body_length: int, request: Request, spider: Any) -> None:
        if LIVE not in request.meta:
            return
        content_type = headers.get(b"Content-Type", b"").decode("latin-1")
        if page_kind(content_type, request.url) == "other":
            self.crawler.stats.inc_value("trawl/live/headers_only")
            raise StopDownload(fail=False)

    def bytes_received(self, data: bytes, request: Request, spider: Any) -> None:
        robots = LIVE not in request.meta and request.meta.get("dont_obey_robotstxt")
        if LIVE not in request.meta and not robots:
            return
        owner, read = request.meta.get(_READ, (None, 0))
        read = (read if owner == id(request) else 0) + len(data)
        request.meta[_READ] = (id(request), read)
        if robots:
            if read > ROBOTS_MAX_BYTES:
                self.crawler.stats.inc_value("trawl/live/robots_cut")
                spider.logger.warning(
                    "%s: %s: robots.txt over %s: read no further, the rules past it ignored",
                    spider.name, request.url, size_text(ROBOTS_MAX_BYTES),
                )  # fmt: skip
                raise StopDownload(fail=False)
            return
        if read >= self.max_bytes:
            self.crawler.stats.inc_value("trawl/live/truncated")
            raise StopDownload(fail=False)


class LiveDownloader(Downloader):
    """trawl's downloader, each host's slot held to ``LIVE_HOST_CONCURRENCY``."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.domain_concurrency = max(crawler.settings.getint("LIVE_HOST_CONCURRENCY"), 1)
