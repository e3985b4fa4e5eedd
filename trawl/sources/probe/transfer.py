"""How much of an answer a probe takes, and how many answers of one host at once.

**Bytes.** The fields need the status, the headers, and the start of a text
body (a title is in the first KB; the hashes are of what was read). A probe
request reads at most ``PROBE_MAX_BYTES`` of a body (64 KiB by default), and
nothing past the headers of a body its fields do not use (images, archives,
fonts, media: :func:`wants_body`). The download stops there and the response
goes on with what came (Scrapy's ``StopDownload(fail=False)`` raised from the
``headers_received`` / ``bytes_received`` signals), flagged ``truncated``.
Scrapy's ``DOWNLOAD_MAXSIZE`` / ``DOWNLOAD_WARNSIZE`` are set to 0 on each probe
request (``meta``) on purpose: they fail an answer whose ``Content-Length`` is over
them before one byte is read, and a probe of a 2 GB ISO must still say "200,
application/octet-stream, 2 GB", not "failed". Probe requests ask for
``Accept-Encoding: identity``, so the bytes counted are the body's own; a
server that compresses all the same gets its body inflated to
``PROBE_MAX_BYTES`` at most and cut there, flagged ``truncated`` too
(``meta[INFLATE_CUT]``, :mod:`trawl.politeness.bounds`): a gzip bomb costs
64 KiB, not the 64 MiB of ``DOWNLOAD_MAXSIZE``, and keeps its status.

**Hosts.** :class:`ProbeDownloader` gives each host's download slot (Scrapy's
per-hostname slots) ``PROBE_HOST_CONCURRENCY`` requests at once (2 by default),
while the source's concurrency (``SOURCE_CONCURRENCY["probe"]``, 32 by default)
bounds the whole probe: many hosts go on in parallel, none gets more than two
at a time. Connections are kept alive and reused per host by Scrapy's HTTP/1.1
pool (an answer cut short closes its connection: the rest of it is never read);
an https origin that offers HTTP/2 gets one connection, its requests streams of
it (a cut answer resets its stream only: :mod:`trawl.politeness.http2`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.exceptions import StopDownload

from trawl.politeness.downloader import Downloader
from trawl.sources.probe.answers import ANY_BODY, PROBE_URL, wants_body

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

#: request.meta key: (the request's id, bytes read). A redirect's next hop copies the meta; the id tells.
_READ = "trawl_probe_read"


class BodyCap:
    """Stops each probe download at ``PROBE_MAX_BYTES``, or after the headers of a body no field needs."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes

    def headers_received(self, headers: Any, body_length: int, request: Request, spider: Any) -> None:
        if PROBE_URL not in request.meta and ANY_BODY not in request.meta:
            return
        content_type = headers.get(b"Content-Type", b"").decode("latin-1")
        if ANY_BODY not in request.meta and not wants_body(content_type):
            raise StopDownload(fail=False)

    def bytes_received(self, data: bytes, request: Request, spider: Any) -> None:
        if PROBE_URL not in request.meta and ANY_BODY not in request.meta:
            return
        owner, read = request.meta.get(_READ, (None, 0))
        read = (read if owner == id(request) else 0) + len(data)
        request.meta[_READ] = (id(request), read)
        if read >= self.max_bytes:
            raise StopDownload(fail=False)


class ProbeDownloader(Downloader):
    """trawl's downloader, each host's slot held to ``PROBE_HOST_CONCURRENCY``."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.domain_concurrency = max(crawler.settings.getint("PROBE_HOST_CONCURRENCY"), 1)
