"""``trawl crawl live -a domain=example.com``: a breadth-first crawl of the live site.

A URL source (:class:`~trawl.sources.base.SourceSpider`): every page's answer
is one item (:mod:`.records`) through the same pipeline as the archives' URLs.

- **Seeds** (depth 0): ``http://DOMAIN/`` (a site on https redirects it there;
  ``https://`` is asked when ``http://`` gets no answer at all),
  the sitemaps robots.txt names (``-a sitemap=guess``: each host's
  ``/sitemap.xml`` too when the crawl first goes to it, as katana's
  ``-kf sitemapxml`` and gospider's ``--sitemap``, both off by default);
  ``-a seed=store``: the stored URLs of the domain too (``-a seed=alive``:
  only those the last probe found live). A sitemap's and robots.txt's URLs
  are seeds as well: they keep the depth of the file.
- **Scope**: :mod:`.scope`. Out-of-scope URLs are counted and listed, never fetched.
- **Order and limits**: breadth first (a request's priority is minus its depth;
  a spread run's queue is FIFO), ``-a depth=`` (3: pages up to three links from
  a seed), ``-a max_pages=`` (0: no limit), every URL fetched once by its
  canonical form (:mod:`trawl.records.canonical`), redirects followed one hop
  at a time by this spider (so that each hop is scoped and deduplicated),
  the trap guard (:mod:`.guard`).
- **Politeness**: trawl's (the source's gate, AutoThrottle, retries with
  backoff), ``LIVE_HOST_CONCURRENCY`` per host, ``DOWNLOAD_TIMEOUT`` per page
  (``SOURCE_DOWNLOAD_TIMEOUT``; 20 s by default), ``PROXY_LIST`` and the proxy
  environment variables. ``ROBOTSTXT_OBEY`` is on for this source (a
  documented choice: a crawler follows links, and robots.txt is written for
  crawlers); ``-s ROBOTSTXT_OBEY=False`` turns it off, and then robots.txt is
  fetched as a seed, its paths included.
- **Spreadable**: requests carry their state in serializable meta, callbacks
  by name; per-crawler state (the seen set, the pattern counts, the page
  count, each origin's random-path answer) is a cache, the run's Redis dedup
  is the authority on "visited once" (docs/live.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, ClassVar
from urllib.parse import urljoin, urlsplit

import scrapy
from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from trawl.common.stopping import Abandoned
from trawl.errors import TrawlError, TrawlUsageError
from trawl.pipeline.runstore import stored_searcher
from trawl.politeness.bounds import INFLATE_LIMIT, ResponseTooLarge, bounded_failure
from trawl.politeness.http2 import SETTINGS as HTTP2_SETTINGS
from trawl.politeness.ratelimit import source_concurrency
from trawl.records.canonical import canonicalize
from trawl.settings_checks import Setting, whole
from trawl.sources.arguments import parse_int
from trawl.sources.base import SourceSpider
from trawl.sources.live import redirects
from trawl.sources.live.guard import PatternCap, SoftHosts
from trawl.sources.live.links import (
    Link,
    html_links,
    page_kind,
    release_parsed,
    robots_links,
    sitemap_links,
)
from trawl.sources.live.records import LinkBatch, captures, now_iso
from trawl.sources.live.report import Report
from trawl.sources.live.scope import Scope, parse_scope
from trawl.sources.live.scripts import ScriptMiner
from trawl.sources.live.transfer import LIVE, PageCap
from trawl.sources.probe.soft404 import SOFT404_DISTANCE
from trawl.sources.selection import Selection, read_selection, stored_urls
from trawl.sources.target import parse_target

DEPTH, FOUND_ON, HOW, HOSTS, SEED = (
    "trawl_live_depth", "trawl_live_found_on", "trawl_live_how", "trawl_live_hosts", "trawl_live_seed",
)  # fmt: skip
#: Found URLs whose children keep their depth: a sitemap's entries and robots.txt's are seeds.
SEED_LISTS = frozenset({"sitemap", "sitemap-index", "robots", "redirect"})
SEEDS = ("root", "store", "alive")


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class LiveSpider(SourceSpider):
    """Breadth-first crawl of a domain's live site; stores what it links to as source ``live``."""

    name = "live"
    in_crawl_all = False  # it talks to the target itself: only when named
    spreadable = True
    answers_are_targets: ClassVar[bool] = True  # a target's 403 is not a proxy's ban
    extra_arguments = {
        "domain": "the domain whose site is crawled (required)",
        "seed": "root (default), store: the stored URLs are seeds too, alive: those the probe found live",
        "scope": "domain (default), rdn: the registered domain, host: the host only, regex:PATTERN",
        "depth": "pages up to this many links from a seed (default 3)",
        "max_pages": "at most this many pages fetched (default 0: no limit)",
        "allow_private": "true: the domain may be an IP address, localhost or host:port (a lab)",
        "sitemap": "robots (default): the sitemaps robots.txt names; guess: each host's /sitemap.xml too",
    }
    private_targets = True  # -a allow_private=true: 127.0.0.1:8000 and its pages (a lab)
    default_concurrency = 8
    default_download_timeout = 20
    #: trawl.politeness.http2: its https requests go over HTTP/2 where the origin offers it.
    http2: ClassVar[bool] = True
    settings_declared = {
        **HTTP2_SETTINGS,
        "LIVE_MAX_BYTES": Setting(8 << 20, whole(1024, 1 << 30), "bytes of a page the live crawl reads"),
        "LIVE_HOST_CONCURRENCY": Setting(2, whole(1, 64), "live crawl requests in flight to one host"),
        "LIVE_JS_MAX_BYTES": Setting(
            1 << 20, whole(1024, 1 << 30), "bytes of a JavaScript file the live crawl mines for URLs"
        ),
        "LIVE_PATTERN_CAP": Setting(
            50,
            whole(1),
            "pages of one URL pattern the live crawl fetches (the trap guard); the rest are stored",
        ),
        "LIVE_SOFT404_DISTANCE": Setting(
            SOFT404_DISTANCE, whole(0, 64), "simhash bits within which a page is its host's soft-404 page"
        ),
    }

    scope: Scope
    depth: int = 3
    max_pages: int = 0
    seed: str = "root"
    guess_sitemap: bool = False
    selection: Selection | None = None

    @classmethod
    def update_settings(cls, settings: Any) -> None:
        super().update_settings(settings)
        settings.set("ROBOTSTXT_OBEY", True, priority="spider")
        settings.set("DOWNLOADER", "trawl.sources.live.transfer.LiveDownloader", priority="spider")
        settings.set("CONCURRENT_REQUESTS", source_concurrency(settings, cls), priority="spider")
        settings.set(
            "CONCURRENT_REQUESTS_PER_DOMAIN", int(settings.get("LIVE_HOST_CONCURRENCY") or 2), "spider"
        )
        redirects.install(settings)  # the random path's and robots.txt's redirects: into scope only
        settings.set("ROBOTSTXT_PARSER", "trawl.sources.live.robots.BoundedRobotParser", priority="spider")

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> LiveSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, LiveSpider)
        settings = crawler.settings
        spider.page_cap = PageCap(settings.getint("LIVE_MAX_BYTES"), crawler)  # held: weak refs
        crawler.signals.connect(spider.page_cap.headers_received, signal=signals.headers_received)
        crawler.signals.connect(spider.page_cap.bytes_received, signal=signals.bytes_received)
        spider.obey_robots = settings.getbool("ROBOTSTXT_OBEY")
        if spider.obey_robots:
            crawler.signals.connect(spider.robots_parsed, signal=signals.robots_parsed)
        spider.cap = PatternCap(settings.getint("LIVE_PATTERN_CAP"))
        spider.soft = SoftHosts(
            crawler, settings.getint("LIVE_SOFT404_DISTANCE"), spider._meta(0, None, "probe")
        )
        spider.report = Report(crawler)
        spider.scripts = ScriptMiner(settings.getint("LIVE_JS_MAX_BYTES"))
        spider.seen = set()
        spider.entered = set()
        spider.beyond = set()
        spider.scheduled = 0
        return spider

    page_cap: PageCap
    cap: PatternCap
    soft: SoftHosts
    report: Report
    scripts: ScriptMiner
    obey_robots: bool = True
    #: Canonical URLs this crawler queued; origins it went to; URLs past the depth limit.
    seen: set[str]
    entered: set[str]
    beyond: set[str]
    scheduled: int = 0

    def configure_kind(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        super().configure_kind(settings, arguments)
        self.scope = parse_scope(arguments.get("scope"), self.target)
        if self.scope.kind == "rdn":  # what is stored follows the scope: the registered domain's URLs
            self.target = parse_target(self.scope.registered, include_subdomains=True)
        self.depth = parse_int("depth", arguments.get("depth", 3))
        self.max_pages = parse_int("max_pages", arguments.get("max_pages", 0))
        seed = str(arguments.get("seed") or "root").strip().lower()
        if seed not in SEEDS:
            raise TrawlUsageError(f"-a seed= must be root, store or alive, got {seed[:60]!r}")
        self.seed = seed
        sitemap = str(arguments.get("sitemap") or "robots").strip().lower()
        if sitemap not in ("robots", "guess"):
            raise TrawlUsageError(f"-a sitemap= must be robots or guess, got {sitemap[:60]!r}")
        self.guess_sitemap = sitemap == "guess"
        self.selection = None
        if seed != "root":
            if not str(settings.get("STORE_URI") or "").strip():
                raise TrawlUsageError(
                    f"-a seed={seed} starts from the stored URLs: it needs a store (STORE_URI)"
                )
            query = {"query": "live:true"} if seed == "alive" else {}
            self.selection = read_selection(self.target, query)

    def run_inputs(self) -> dict[str, Any]:
        return {**super().run_inputs(), "scope": self.scope.describe(), "depth": self.depth}

    def redirect_in_scope(self, url: str, request: scrapy.Request) -> bool:
        """May Scrapy follow a redirect to ``url`` (:mod:`.redirects`)? Else it is listed. The
        host asked is in scope (it was asked): a seed's redirect may have brought it in."""
        target = canonicalize(url) or url
        hosts = (*request.meta.get(HOSTS, ()), (urlsplit(request.url).hostname or "").lower())
        if self.scope.allows(target, hosts):
            return True
        self.report.outside(target)
        return False

    # --- seeds ---------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[Any]:
        self.log_target()
        self.logger.info("%s: crawling %s, depth %d", self.name, self.scope.describe(), self.depth)
        root = canonicalize(f"http://{self.target.netloc}/")
        assert root is not None
        for request in self._schedule([(root, "seed")], None, -1, (), seed=True):
            yield request
        if self.selection is not None:
            for request in self._stored():
                yield request

    def _stored(self) -> Iterator[scrapy.Request]:
        settings = self.crawler.settings
        assert self.selection is not None
        try:
            searcher = stored_searcher(settings)
        except TrawlError as exc:
            self.record_error("store", "cannot read the stored URLs: %s", exc)
            return
        with searcher:
            for chunk in stored_urls(searcher, self.selection):
                yield from self._schedule([(url, "store") for url in chunk], None, -1, ())

    def robots_parsed(self, robotparser: Any, request: scrapy.Request) -> None:
        """Scrapy's robots.txt middleware read a host's robots.txt: its sitemaps are seeds."""
        sitemaps = list(getattr(getattr(robotparser, "rp", None), "sitemaps", ()) or ())
        hosts = tuple(request.meta.get(HOSTS, ()))
        found: list[Link] = []
        for url in sitemaps:
            named = canonicalize(urljoin(request.url, url))
            if named and self.scope.allows(named, hosts):
                found.append((named, "sitemap-index"))
            elif named:
                self.report.outside(named)
        for child in self._schedule(found, None, -1, hosts):
            self.crawler.engine.crawl(child)

    # --- answers -------------------------------------------------------------------------

    async def parse_page(self, response: Response) -> AsyncIterator[Any]:
        meta = response.meta
        depth, hosts, url = int(meta.get(DEPTH, 0)), tuple(meta.get(HOSTS, ())), response.url
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1").strip()
        status = response.status
        found: list[Link] = []
        seed = bool(meta.get(SEED))
        if 300 <= status < 400:
            verdict = "redirect"
            location = (response.headers.get(b"Location") or b"").decode("latin-1").strip()
            target = canonicalize(urljoin(url, location)) if location else None
            if target:
                if seed and not self.scope.allows(target, hosts) and self.scope.seed_may_go(target):
                    hosts = (*hosts, (urlsplit(target).hostname or "").lower())
                found = [(target, "redirect")]
                twin = "https://" + url[len("http://") :]
                if url.startswith("http://") and target.startswith("https://") and target != twin:
                    # The site moved to https: its https twin redirects the same way (a root
                    # that 301s to https://www. was asked again over https otherwise); a
                    # redirect to the twin itself is the page, fetched.
                    self.seen.add(twin)
        elif status >= 400:
            verdict = "error"
        else:
            verdict, found = await self._read(response, content_type)
            release_parsed(response)  # the tree is 10 times the page: not kept while items wait
        self.report.verdict(verdict)
        page = self._row(url, meta.get(FOUND_ON), depth, str(meta.get(HOW) or "seed"), verdict)
        page.update(status=status, content_type=content_type.split(";", 1)[0].strip() or None)
        rows, requests = self._found(found, url, depth, hosts, seed and verdict == "redirect")
        yield captures(self.name, [page, *rows])
        yield LinkBatch.from_rows(self.name, [page, *rows])
        for request in requests:
            yield request

    async def _read(self, response: Response, content_type: str) -> tuple[str, list[Link]]:
        """The verdict of a 2xx answer, and the URLs it names."""
        url, kind = response.url, page_kind(content_type, response.url)
        if kind == "other" or "download_stopped" in response.flags and kind != "html":
            return "headers-only", []
        if kind == "html":
            if not isinstance(response, TextResponse):
                return "page", []
            origin = await self.soft.origin(origin_of(url))
            if self.soft.is_soft404(origin, response):
                return "soft-404", []
            return "page", html_links(response)
        if kind == "js":
            return "page", await self.scripts.links(response.body, url)
        if kind == "xml":
            return "page", sitemap_links(response.body, url)
        if urlsplit(url).path == "/robots.txt":
            return "page", robots_links(response.body, url)
        return "page", []

    def page_failed(self, failure: Failure) -> Iterator[Any]:
        if failure.check(Abandoned):
            return
        request = failure.request  # type: ignore[attr-defined]
        meta = request.meta
        forbidden = failure.check(IgnoreRequest) and "robots.txt" in str(failure.value)
        verdict = "robots" if forbidden else "error"
        if forbidden:
            self.report.count("robots_forbidden")
        elif failure.check(ResponseTooLarge):
            # Said once, here (nothing else says it): a page that inflated past LIVE_MAX_BYTES.
            self.report.verdict("error")
            self.report.count("too_large")
            told = bounded_failure(request, failure.value)
            self.logger.warning("%s: %s", self.name, told[1] if told else failure.getErrorMessage())
        else:
            self.report.verdict("error")
            self.logger.info("%s: %s: %s", self.name, request.url, (failure.getErrorMessage() or "")[:200])
        row = self._row(request.url, meta.get(FOUND_ON), int(meta.get(DEPTH, 0)), str(meta.get(HOW)), verdict)
        yield LinkBatch.from_rows(self.name, [row])
        if meta.get(SEED) and not forbidden and request.url.startswith("http://") and meta.get(HOW) == "seed":
            fallback = "https://" + request.url[len("http://") :]  # nothing on port 80: the site on https
            yield from self._schedule([(fallback, "seed")], None, -1, (), seed=True)

    # --- what is fetched next ------------------------------------------------------------

    def _found(
        self, found: list[Link], page: str, depth: int, hosts: tuple[str, ...], seed: bool
    ) -> tuple[list[dict[str, Any]], list[scrapy.Request]]:
        """The in-scope URLs ``page`` names, as rows, and the requests for those to fetch."""
        rows: list[dict[str, Any]] = []
        follow: list[Link] = []
        named: set[str] = set()
        for raw, how in found:
            url = canonicalize(raw)
            if url is None or url in named:
                continue
            named.add(url)
            seed_hop = seed and how == "redirect" and self.scope.seed_may_go(url)
            if not (self.scope.allows(url, hosts) or seed_hop):
                self.report.outside(url)
                continue
            rows.append(self._row(url, page, self._child_depth(depth, how), how, None))
            if how != "form-post":
                follow.append((url, how))
        self.report.count("found", len(rows))
        return rows, list(self._schedule(follow, page, depth, hosts, seed=seed))

    @staticmethod
    def _child_depth(depth: int, how: str) -> int:
        return max(depth, 0) if how in SEED_LISTS else depth + 1

    def _schedule(
        self, found: list[Link], page: str | None, depth: int, hosts: tuple[str, ...], seed: bool = False
    ) -> Iterator[scrapy.Request]:
        """Requests for the URLs not fetched yet, within depth, the trap guard and max_pages."""
        fresh: list[tuple[str, str, int]] = []
        for url, how in found:
            child = self._child_depth(depth, how)
            if url in self.seen:
                continue
            if self.obey_robots and url == origin_of(url) + "/robots.txt":
                self.seen.add(url)  # Scrapy's robots.txt middleware asks it, once per origin
                continue
            if child > self.depth:
                if url not in self.beyond:
                    self.beyond.add(url)
                    self.report.count("beyond_depth")
                continue
            fresh.append((url, how, child))
        admitted = self.cap.admit([url for url, _, _ in fresh])
        for (url, how, child), ok in zip(fresh, admitted, strict=True):
            self.seen.add(url)
            if not ok:
                self.report.count("trap_dropped")
                continue
            if self.max_pages and self.scheduled >= self.max_pages:
                self.report.count("max_pages_dropped")
                continue
            self.scheduled += 1
            key = origin_of(url)
            yield self._request(url, child, page, how, hosts, seed)
            if key not in self.entered:
                self.entered.add(key)
                extra = [(key + "/sitemap.xml", "sitemap-index")] if self.guess_sitemap else []
                if not self.obey_robots:
                    extra.append((key + "/robots.txt", "robots"))
                yield from self._schedule([(canonicalize(u) or u, h) for u, h in extra], page, -1, hosts)

    def _meta(self, depth: int, page: str | None, how: str, hosts: tuple[str, ...] = ()) -> dict[str, Any]:
        return {
            LIVE: True, DEPTH: depth, FOUND_ON: page, HOW: how, HOSTS: list(hosts),
            "download_maxsize": 0, "download_warnsize": 0, INFLATE_LIMIT: "LIVE_MAX_BYTES",
        }  # fmt: skip

    def _request(
        self, url: str, depth: int, page: str | None, how: str, hosts: tuple[str, ...], seed: bool
    ) -> scrapy.Request:
        meta = self._meta(depth, page, how, hosts)
        meta.update({"dont_redirect": True, "handle_httpstatus_all": True})
        if seed:
            meta[SEED] = True
        return scrapy.Request(
            url, callback=self.parse_page, errback=self.page_failed, priority=-depth, meta=meta,
            headers={"Accept-Encoding": "identity"},
        )  # fmt: skip

    def _row(
        self, url: str, found_on: str | None, depth: int, how: str, verdict: str | None
    ) -> dict[str, Any]:
        host = (urlsplit(url).hostname or "").lower()
        return {"url": url, "host": host, "found_on": found_on, "depth": depth, "how": how,
                "found_at": now_iso(), "status": None, "content_type": None, "verdict": verdict}  # fmt: skip

    def closed(self, reason: str) -> None:
        super().closed(reason)
        self.scripts.close()
        if self.scripts.cut:
            self.report.count("scripts_cut", self.scripts.cut)
        self.report.log(self.logger, self.name, self.cap)


__all__ = ["LiveSpider"]
