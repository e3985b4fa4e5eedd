"""Proxy rotation: spread requests over live proxies, rest the banned ones.

``PROXY_LIST`` (a list, or one string of URLs separated by commas or newlines)
and ``PROXY_LIST_FILE`` (one URL a line, ``#`` comments) give http(s) proxies,
credentials allowed (``http://user:pass@host:port``). Each request takes the
next live proxy in turn; Scrapy's HttpProxyMiddleware, which runs after this
one, does the proxying and the ``Proxy-Authorization`` header.

A proxy is banned by an answer in ``PROXY_BAN_STATUSES``, an empty 200 (from
a source whose empty answers are not data), a block page (trawl.politeness.bans) or a
connection error (for the probe and the live crawl, only what the proxy itself refused:
see ``_proxys_fault``); it rests for an exponential backoff with jitter (``PROXY_BACKOFF_BASE`` doubling up to
``PROXY_BACKOFF_MAX``) and comes back. The request is sent again through
another proxy. With every proxy resting, requests wait for the first to come
back (the run says so once) instead of hammering. Rate limits hold per source
whatever proxy a request takes: the source gate runs after this middleware.

Credentials never appear in a log line or in stats: proxies are named by their
position (``proxy #2``) and their URLs are registered with trawl.common.secrets.
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.exceptions import DownloadConnectionRefusedError, NotConfigured
from twisted.internet.error import ConnectionRefusedError, TCPTimedOutError

from trawl.common import statkeys
from trawl.common.secrets import register_secret
from trawl.common.stopping import Abandoned, interruptible
from trawl.errors import TrawlUsageError
from trawl.politeness.bans import block_reason
from trawl.politeness.gate import sleep
from trawl.sources.arguments import split_list

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

PROXY_KEY = "trawl_proxy"
_TRIES = "trawl_proxy_tries"
#: request.meta key: the request must not be sent again through another proxy (its body began
#: to stream to a reader, which is midway: a second answer would start the body anew under it).
NO_RESEND = "trawl_no_resend"


@dataclass
class Proxy:
    url: str
    label: str
    bans: int = 0
    resting_until: float = 0.0


def read_proxy_list(settings: BaseSettings | dict[str, Any]) -> list[str]:
    """Every proxy URL from ``PROXY_LIST`` and ``PROXY_LIST_FILE``, checked.

    Raises TrawlUsageError with one line for what Scrapy cannot use.
    """
    raw = settings.get("PROXY_LIST") or []
    if isinstance(raw, str) and raw.lstrip().startswith("["):
        try:
            raw = json.loads(raw)  # -s 'PROXY_LIST=["http://..."]'
        except ValueError:
            raise TrawlUsageError("PROXY_LIST is not a valid JSON list") from None
    items = split_list(raw.replace("\n", ",") if isinstance(raw, str) else raw)
    path = settings.get("PROXY_LIST_FILE")
    if path:
        try:
            lines = Path(str(path)).expanduser().read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise TrawlUsageError(f"cannot read PROXY_LIST_FILE {str(path)!r}: {exc.strerror}") from None
        items += [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]
    proxies = []
    for number, url in enumerate(dict.fromkeys(items), start=1):
        register_secret(url)
        parts = urlsplit(url)
        if parts.password:
            register_secret(parts.password)
        scheme = parts.scheme.lower()
        if scheme.startswith("socks"):
            raise TrawlUsageError(
                f"proxy #{number} is a {scheme} proxy: Scrapy's downloader speaks only http(s) "
                "proxies; run an HTTP-to-SOCKS bridge (privoxy, gost, polipo) and list its http:// address"
            )
        if scheme not in ("http", "https") or not parts.hostname:
            raise TrawlUsageError(f"proxy #{number} is not an http(s)://host:port URL")
        proxies.append(url)
    return proxies


class ProxyRotationMiddleware:
    def __init__(self, crawler: Crawler, urls: list[str]) -> None:
        self.crawler = crawler
        self.proxies = [Proxy(url, f"proxy #{i}") for i, url in enumerate(urls, start=1)]
        settings = crawler.settings
        self.ban_statuses = {int(s) for s in settings.getlist("PROXY_BAN_STATUSES")}
        self.backoff_base = settings.getfloat("PROXY_BACKOFF_BASE", 30.0)
        self.backoff_max = settings.getfloat("PROXY_BACKOFF_MAX", 3600.0)
        self.max_tries = settings.getint("PROXY_MAX_TRIES", 10)
        self._turn = 0
        self._all_resting_logged_until = 0.0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProxyRotationMiddleware:
        urls = read_proxy_list(crawler.settings)
        if not urls:
            raise NotConfigured
        return cls(crawler, urls)

    # --- choosing ----------------------------------------------------------------------

    def _next_live(self, now: float) -> Proxy | None:
        for offset in range(len(self.proxies)):
            proxy = self.proxies[(self._turn + offset) % len(self.proxies)]
            if proxy.resting_until <= now:
                self._turn = (self._turn + offset + 1) % len(self.proxies)
                return proxy
        return None

    async def process_request(self, request: Request, spider: Spider | None = None) -> None:
        if "proxy" in request.meta and PROXY_KEY not in request.meta:
            return  # a proxy chosen by the spider itself
        while True:
            now = time.time()
            proxy = self._next_live(now)
            if proxy is not None:
                break
            wake = min(p.resting_until for p in self.proxies)
            if wake > self._all_resting_logged_until:
                self._all_resting_logged_until = wake
                self.crawler.stats.inc_value(statkeys.PROXIES_ALL_RESTING)
                logger.warning(
                    "all %d proxies are resting; waiting until %s",
                    len(self.proxies),
                    time.strftime("%H:%M:%S", time.localtime(wake)),
                )
            if not await interruptible(self.crawler, sleep(wake - now)):
                self.crawler.stats.inc_value(statkeys.ABANDONED)
                raise Abandoned("not sent, the crawl is stopping while every proxy rests")
        request.meta["proxy"] = proxy.url
        request.meta[PROXY_KEY] = proxy.label
        self.crawler.stats.inc_value(statkeys.proxy_requests(proxy.label))

    # --- judging -----------------------------------------------------------------------

    def _proxy_of(self, request: Request) -> Proxy | None:
        label = request.meta.get(PROXY_KEY)
        return next((p for p in self.proxies if p.label == label), None)

    def process_response(self, request: Request, response: Response, spider: Spider | None = None) -> Any:
        proxy = self._proxy_of(request)
        if proxy is None:
            return response
        reason = self._ban_reason(response)
        if reason is None:
            proxy.bans = 0
            return response
        return self._ban_and_retry(request, proxy, reason) or response

    def process_exception(self, request: Request, exception: Exception, spider: Spider | None = None) -> Any:
        proxy = self._proxy_of(request)
        if proxy is None or isinstance(exception, Abandoned):  # the crawl is stopping: not the proxy's fault
            return None
        if not self._proxys_fault(exception):
            proxy.bans = 0
            return None  # the target's: trawl's retry middleware decides, through this proxy or another
        return self._ban_and_retry(request, proxy, type(exception).__name__)

    def _proxys_fault(self, exception: Exception) -> bool:
        """Does this error say the proxy failed (rest it), or the target (a record, a retry)?

        For the URL sources every error rests the proxy: their upstream answers
        through any proxy. A source that asks the target's own servers
        (``answers_are_targets``: the probe, the live crawl) meets slow hosts,
        hosts without https and refused tunnels all the time: a CONNECT the proxy
        answered with 502 or 504, or an answer that took too long, is the target's.
        Only what the proxy itself refused rests it: the connection to the proxy
        (refused or timed out: a TCP connection always goes to the proxy) and a
        CONNECT answered 407. Resting the only proxy for a target's timeout made
        every other host's requests wait.
        """
        if not getattr(self.crawler.spider, "answers_are_targets", False):
            return True
        if type(exception).__name__ == "TunnelError":
            return "'status': 407" in str(exception)
        refused = (DownloadConnectionRefusedError, ConnectionRefusedError, TCPTimedOutError)
        return isinstance(exception, refused)

    def _ban_reason(self, response: Response) -> str | None:
        if getattr(self.crawler.spider, "answers_are_targets", False):
            # The probe asks the target's own pages: a 403 or a block page is what the target says
            # (a record), not a proxy's ban; a proxy that fails shows as a 407 or a connection error.
            return "HTTP 407" if response.status == 407 else None
        if response.status in self.ban_statuses:
            return f"HTTP {response.status}"
        streamed = "streamed" in response.flags  # its body went to a reader (the crates db-dump)
        if response.status == 200 and not response.body.strip() and not (streamed or self._empty_is_data()):
            return "empty answer"
        marker = block_reason(response)
        return f"block page ({marker})" if marker else None

    def _empty_is_data(self) -> bool:
        """Some APIs answer "nothing" with an empty body (a CDX page past the end)."""
        return bool(getattr(self.crawler.spider, "empty_answers_are_data", False))

    def _ban_and_retry(self, request: Request, proxy: Proxy, reason: str) -> Request | None:
        proxy.bans += 1
        rest = random.uniform(0.5, 1.0) * min(self.backoff_max, self.backoff_base * 2 ** (proxy.bans - 1))
        proxy.resting_until = max(proxy.resting_until, time.time() + rest)
        self.crawler.stats.inc_value(statkeys.PROXY_BANS)
        logger.warning("%s banned (%s); resting %.0f s", proxy.label, reason, rest)
        tries = request.meta.get(_TRIES, 0) + 1
        if tries >= self.max_tries or request.meta.get(NO_RESEND):
            return None
        retry = request.replace(dont_filter=True)
        retry.meta[_TRIES] = tries
        for key in ("proxy", "_auth_proxy", PROXY_KEY):
            retry.meta.pop(key, None)
        retry.headers.pop(b"Proxy-Authorization", None)
        return retry
