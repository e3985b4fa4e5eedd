"""``trawl crawl probe -a domain=example.com``: which stored URLs answer now, and how.

A :class:`~trawl.sources.base.Source` of the ``probe`` record kind
(:mod:`.records`). Its URLs come from the store, never from a list in memory:
:mod:`trawl.sources.selection` reads them a chunk at a time, :mod:`.patterns`
keeps the first of each path pattern (``-a all=true``: then the others), and
``start()`` yields their requests one by one as the engine asks for more, so
the scheduler holds only what is in flight (``CONCURRENT_REQUESTS``, set to the
source's concurrency). Before an origin's first URL, two requests: a random
path (:mod:`.soft404`) and ``/favicon.ico``.

This talks to the target's own servers. Politeness is trawl's: the source's
gate and AutoThrottle (its target concurrency is the probe's), each host held
to ``PROBE_HOST_CONCURRENCY`` (:mod:`.transfer`), retries with backoff from
trawl's retry middleware, ``PROXY_LIST`` and the proxy environment variables.
``ROBOTSTXT_OBEY`` is off, as for every trawl source (the probe asks URLs the
archives saw, as httpx does); ``-s ROBOTSTXT_OBEY=True`` makes Scrapy fetch each
host's robots.txt and skip what it disallows. A URL that does not answer is a
``dead`` record, not an error of the run.

``-a list=FILE`` (``-`` for standard input) asks a list's URLs instead, every
line in its order (:mod:`.urllist`), as ``httpx -l`` does.

**Scope** (:mod:`.scope`). Redirects (``Location``, ``<meta http-equiv=refresh>``)
are followed only into the target (the domain, its subdomains with
``subs=true``; without a domain, the list's hosts):
:mod:`trawl.sources.live.redirects`. One out of it is the URL's answer, its
record says ``redirect out of scope, not followed: URL`` in ``error``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, ClassVar
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from trawl.common.stopping import Abandoned
from trawl.errors import TrawlError, TrawlUsageError
from trawl.pipeline.runstore import stored_searcher
from trawl.politeness.bounds import INFLATE_CUT, INFLATE_LIMIT
from trawl.politeness.http2 import SETTINGS as HTTP2_SETTINGS
from trawl.politeness.ratelimit import source_concurrency
from trawl.settings_checks import Setting, whole
from trawl.sources.arguments import parse_bool, parse_int
from trawl.sources.base import Source
from trawl.sources.live import redirects
from trawl.sources.live.scope import local_targets
from trawl.sources.probe.answers import ANY_BODY, PROBE_URL, answer_row, failure_row
from trawl.sources.probe.fingerprint import favicon_hash
from trawl.sources.probe.patterns import PatternPicker, interleaved, origin_of
from trawl.sources.probe.records import ProbeBatch
from trawl.sources.probe.report import count_record, log_table
from trawl.sources.probe.scope import ProbeScope
from trawl.sources.probe.soft404 import SOFT404_DISTANCE, Origin, random_path, verdict
from trawl.sources.probe.transfer import BodyCap
from trawl.sources.probe.urllist import Entry, UrlList, read_list
from trawl.sources.selection import Selection, read_selection, stored_urls
from trawl.sources.target import Target, parse_target

#: request.meta key: the origin (``scheme://host:port``) a request speaks for.
ORIGIN = "trawl_probe_origin"
#: request.meta key: the ``http://`` URL asked when a bare host's ``https://`` gets no answer.
FALLBACK = "trawl_probe_fallback"
#: Statuses handed to the callback as answers; 301-303, 307 and 308 are followed by Scrapy's
#: RedirectMiddleware (``handle_httpstatus_all`` would turn redirects off).
ANSWER_STATUSES = tuple(s for s in range(100, 600) if s not in (301, 302, 303, 307, 308))
#: Redirects followed per URL.
MAX_REDIRECTS = 10
#: Records handed to the pipeline together: at most this many, or as many as came in this many seconds.
#: One batch a record cost ~2 ms of polars and pipeline each (a third of the work of an answer).
BATCH_ROWS = 200
BATCH_SECONDS = 1.0


class ProbeSpider(Source):
    """Asks each selected stored URL once; stores what answered as ``probe`` records."""

    name = "probe"
    in_crawl_all = False  # it talks to the target itself: only when named
    extra_arguments = {
        "domain": "the domain whose stored URLs are asked (with -a list=: the lines kept)",
        "subs": "its subdomains too (default true)",
        "query": "a search query the stored URLs must match (ext:php, 'NOT live:*')",
        "limit": "at most this many URLs asked (default 0: all)",
        "all": "true: after one URL per path pattern, every other stored URL",
        "list": "a file of URLs or hosts, one a line (- for standard input), asked instead of the store",
        "allow_private": "true: the domain or a line may be an IP address, localhost or host:port (a lab)",
    }
    #: Requests in flight across all hosts (each host: PROBE_HOST_CONCURRENCY).
    default_concurrency = 32
    #: A live page answers in seconds; one that has not in 20 s is reported dead (timed out).
    default_download_timeout = 20
    #: trawl.politeness.proxies: a 403 or a block page is the target's answer, not a proxy's ban.
    answers_are_targets: ClassVar[bool] = True
    #: trawl.politeness.http2: its https requests go over HTTP/2 where the origin offers it.
    http2: ClassVar[bool] = True
    settings_declared = {
        **HTTP2_SETTINGS,
        "PROBE_MAX_BYTES": Setting(
            65536,
            whole(1024, 64 << 20),
            "bytes of a body a probe reads (title, hashes); the rest is not downloaded",
        ),
        "PROBE_HOST_CONCURRENCY": Setting(2, whole(1, 64), "probe requests in flight to one host at once"),
        "PROBE_SOFT404_DISTANCE": Setting(
            SOFT404_DISTANCE,
            whole(0, 64),
            "simhash bits in which an answer may differ from a host's answer to a random path and still be"
            " marked soft-404",
        ),
    }

    #: The stored URLs asked, or ``None`` with a list (:attr:`url_list`).
    selection: Selection | None = None
    url_list: UrlList | None = None
    target: Target | None = None
    scope: ProbeScope
    limit: int = 0
    probe_all: bool = False

    @classmethod
    def update_settings(cls, settings: Any) -> None:
        """The probe's downloader (per-host slots), and the engine's concurrency set to the source's
        (so that start() is drawn only as fast as requests can go out)."""
        super().update_settings(settings)
        total = source_concurrency(settings, cls)
        host = int(settings.get("PROBE_HOST_CONCURRENCY") or 2)
        settings.set("DOWNLOADER", "trawl.sources.probe.transfer.ProbeDownloader", priority="spider")
        settings.set("CONCURRENT_REQUESTS", total, priority="spider")
        settings.set("CONCURRENT_REQUESTS_PER_DOMAIN", host, priority="spider")  # the connection pool's size
        settings.set("AUTOTHROTTLE_TARGET_CONCURRENCY", float(total), priority="spider")
        redirects.install(settings)
        settings.set("ROBOTSTXT_PARSER", "trawl.sources.live.robots.BoundedRobotParser", priority="spider")

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> ProbeSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, ProbeSpider)
        spider.cap = BodyCap(crawler.settings.getint("PROBE_MAX_BYTES"))  # held: signals keep weak refs
        crawler.signals.connect(spider.cap.headers_received, signal=signals.headers_received)
        crawler.signals.connect(spider.cap.bytes_received, signal=signals.bytes_received)
        spider.distance = crawler.settings.getint("PROBE_SOFT404_DISTANCE")
        spider.origins = {}
        spider.buffer = []
        return spider

    cap: BodyCap
    distance: int = SOFT404_DISTANCE
    origins: dict[str, Origin]
    #: Finished records not yet handed over (:meth:`_emit`), since when, and URLs asked and not yet a record.
    buffer: list[dict[str, Any]]
    buffer_since: float = 0.0
    outstanding: int = 0
    start_done: bool = False

    def configure_kind(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        subs = parse_bool("subs", arguments.get("subs", True))
        private = parse_bool("allow_private", arguments.get("allow_private", False))
        domain = arguments.get("domain")
        listed = str(arguments.get("list") or "").strip()
        self.uri = str(settings.get("STORE_URI") or "").strip()
        self.selection = self.url_list = None
        if arguments.get("list") is not None and not listed:
            raise TrawlUsageError("-a list= needs a file (or - for standard input)")
        if listed:
            for name in ("query", "all"):
                if arguments.get(name) is not None:
                    raise TrawlUsageError(
                        f"-a {name}= selects stored URLs: with -a list= every line is asked"
                    )
            given = domain is not None and str(domain).strip()
            self.target = parse_target(domain, subs, allow_private=private) if given else None
            self.url_list = read_list(listed, private, self.target)
            self.scope = self.url_list.scope
            self.limit = parse_int("limit", arguments.get("limit", 0) or 0)
            return
        self.target = parse_target(domain, include_subdomains=subs, allow_private=private)
        self.selection = read_selection(self.target, arguments)
        self.scope = ProbeScope(self.target, frozenset(), local_targets(self.target))
        self.limit = self.selection.limit
        self.probe_all = parse_bool("all", arguments.get("all", False))
        if not self.uri:
            raise TrawlUsageError(
                "the probe asks the URLs a store holds: it needs a store (STORE_URI), or -a list=FILE"
            )

    def run_inputs(self) -> dict[str, Any]:
        return {**super().run_inputs(), "target": self.target}

    def redirect_in_scope(self, url: str, request: scrapy.Request) -> bool:
        """May a redirect go to ``url``? Into the scope over http(s) only (:mod:`.scope`: a
        local address only if it was made a target)."""
        if self.scope.allows(url):
            return True
        self.crawler.stats.inc_value("trawl/probe/redirect_out_of_scope")
        return False

    # --- which URLs ----------------------------------------------------------------------

    async def start(self) -> AsyncIterator[Any]:
        asked = 0
        if self.url_list is not None:
            self.url_list.say_outside(self.logger, self.name)
            for request in self._ask(self.url_list.entries()):
                asked += request is None
                if request is not None:
                    yield request
        else:
            settings = self.crawler.settings
            try:
                searcher = stored_searcher(settings, self.uri)
            except TrawlError as exc:
                self.record_error("store", "cannot read the URLs to probe: %s", exc)
                return
            with searcher:
                # A lab target's other ports are stored under its host too: not asked.
                selected = (Entry(0, url) for url in self._selected(searcher) if self.scope.allows(url))
                for request in self._ask(selected):
                    asked += request is None
                    if request is not None:
                        yield request
        self.start_done = True
        for batch in self._emit([]):  # every answer came before the selection's end
            yield batch
        self.crawler.stats.set_value("trawl/probe/urls_selected", asked)
        if self.url_list is not None:
            self.logger.info("%s: %d URLs read from %s", self.name, asked, self.url_list.name)
        else:
            self.logger.info("%s: %d URLs selected for %s", self.name, asked, self.scope.describe())

    def _ask(self, entries: Iterator[Entry]) -> Iterator[scrapy.Request | None]:
        """Each entry's requests, up to ``-a limit=``; a ``None`` after each URL asked (a count)."""
        asked = 0
        for entry in entries:
            if self.limit and asked >= self.limit:
                break
            asked += 1
            yield None
            done = self.page_done(entry.url) is not None or bool(
                entry.fallback and self.page_done(entry.fallback)
            )
            if done:  # stored by this run before it was stopped
                continue
            yield from self._requests_for(entry.url, entry.fallback)

    def _selected(self, searcher: Any) -> Iterator[str]:
        """The first URL of each pattern; then, with ``-a all=true``, the others (:mod:`.patterns`)."""
        assert self.selection is not None
        picker = PatternPicker()
        for chunk in stored_urls(searcher, self.selection, apply_limit=False):
            yield from interleaved(picker.split(chunk)[0])
        if not self.probe_all:
            return
        picker = PatternPicker()  # the same order again: each pattern's first is the one asked above
        for chunk in stored_urls(searcher, self.selection, apply_limit=False):
            yield from interleaved(picker.split(chunk)[1])

    def _requests_for(self, url: str, fallback: str | None = None) -> Iterator[scrapy.Request]:
        """The URL's request, after its origin's random path and favicon the first time.

        A bare host's ``https://`` (``fallback``: its ``http://``) is asked once, not
        retried, as httpx does: with retries and backoff a host without https took
        17 s to be probed on ``http://`` (3 retries of 3 requests), 5 s without.
        """
        key = origin_of(url)
        first = key not in self.origins
        if first:
            self.origins[key] = Origin()
            asked = [
                self._request(key + random_path(), self.parse_baseline, self.baseline_failed, key, 10),
                self._request(key + "/favicon.ico", self.parse_favicon, self.favicon_failed, key, 10, True),
            ]
        request = self._request(url, self.parse_answer, self.answer_failed, key, 0)
        request.meta[PROBE_URL] = url
        if fallback:
            request.meta[FALLBACK] = fallback
        for one in [*asked, request] if first else [request]:
            if fallback:
                one.meta["dont_retry"] = True
            if one is request:
                self.outstanding += 1
            yield one

    def _request(
        self, url: str, callback: Any, errback: Any, origin: str, priority: int, any_body: bool = False
    ) -> scrapy.Request:
        meta: dict[str, Any] = {
            ORIGIN: origin,
            "handle_httpstatus_list": ANSWER_STATUSES,
            "redirect_ttl": MAX_REDIRECTS,
            # transfer.BodyCap cuts bodies at PROBE_MAX_BYTES; Scrapy's limits would fail the answer instead.
            "download_maxsize": 0,
            "download_warnsize": 0,
            # A compressed body (sent despite identity) inflates to PROBE_MAX_BYTES, kept cut there.
            INFLATE_LIMIT: "PROBE_MAX_BYTES",
            INFLATE_CUT: True,
        }
        if any_body:
            meta[ANY_BODY] = True
        return scrapy.Request(
            url,
            callback=callback,
            errback=errback,
            priority=priority,
            dont_filter=True,  # a redirect to a URL also selected must still reach its callback
            headers={"Accept-Encoding": "identity"},
            meta=meta,
        )

    # --- answers -------------------------------------------------------------------------

    def parse_answer(self, response: Response) -> Iterator[ProbeBatch]:
        origin = self.origins[response.meta[ORIGIN]]
        # The echo-free simhashes only where they can decide (most origins answer the random path 404).
        soft = not origin.baseline_done or (
            origin.answers_everything and response.status == origin.baseline_status
        )
        row, simhashes = answer_row(response, soft)
        yield from self._decide(response.meta[ORIGIN], row, simhashes)

    def answer_failed(self, failure: Failure) -> Iterator[ProbeBatch]:
        if failure.check(Abandoned):
            return
        request = failure.request  # type: ignore[attr-defined]
        response = getattr(failure.value, "response", None)
        fallback = request.meta.get(FALLBACK)
        if fallback and not (failure.check(HttpError) and response is not None):
            self.outstanding -= 1  # a bare host: https got no answer, http is asked in its place
            yield from self._requests_for(fallback)
            return
        if failure.check(HttpError) and response is not None:
            row, simhashes = answer_row(response)  # a 3xx without a Location: an answer all the same
        else:
            row, simhashes = failure_row(request.meta[PROBE_URL], _failure_text(failure)), ()
        yield from self._decide(request.meta[ORIGIN], row, simhashes)

    def parse_baseline(self, response: Response) -> Iterator[ProbeBatch]:
        origin = self.origins[response.meta[ORIGIN]]
        origin.baseline_status = response.status
        origin.baseline_simhashes = answer_row(response)[1] if response.status < 400 else ()
        origin.baseline_done = True
        yield from self._release(origin)

    def baseline_failed(self, failure: Failure) -> Iterator[ProbeBatch]:
        origin = self.origins[failure.request.meta[ORIGIN]]  # type: ignore[attr-defined]
        origin.baseline_done = True
        yield from self._release(origin)

    def parse_favicon(self, response: Response) -> Iterator[ProbeBatch]:
        origin = self.origins[response.meta[ORIGIN]]
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        icon = response.status == 200 and response.body and not content_type.lower().startswith("text/")
        if icon and "download_stopped" not in response.flags:
            origin.favicon = favicon_hash(response.body)
        origin.favicon_done = True
        yield from self._release(origin)

    def favicon_failed(self, failure: Failure) -> Iterator[ProbeBatch]:
        origin = self.origins[failure.request.meta[ORIGIN]]  # type: ignore[attr-defined]
        origin.favicon_done = True
        yield from self._release(origin)

    # --- verdicts ------------------------------------------------------------------------

    def _decide(self, key: str, row: dict[str, Any], simhashes: tuple[int, ...]) -> Iterator[ProbeBatch]:
        origin = self.origins[key]
        if not origin.ready:
            origin.pending.append((row, simhashes))  # type: ignore[arg-type]
            return
        yield from self._emit([self._finish(origin, row, simhashes)])

    def _release(self, origin: Origin) -> Iterator[ProbeBatch]:
        if not origin.ready or not origin.pending:
            return
        rows = [self._finish(origin, row, hashes) for row, hashes in origin.pending]  # type: ignore[misc]
        origin.pending.clear()
        yield from self._emit(rows)

    def _emit(self, rows: list[dict[str, Any]]) -> Iterator[ProbeBatch]:
        """Finished records into the buffer; a batch of it when it is full, old, or the last of the run."""
        now = time.monotonic()
        if rows and not self.buffer:
            self.buffer_since = now
        self.buffer.extend(rows)
        self.outstanding -= len(rows)
        last = self.start_done and self.outstanding == 0
        if self.buffer and (
            len(self.buffer) >= BATCH_ROWS or now - self.buffer_since >= BATCH_SECONDS or last
        ):
            rows, self.buffer = self.buffer, []
            yield ledgered(ProbeBatch.from_rows(self.name, rows))

    def _finish(self, origin: Origin, row: dict[str, Any], simhashes: tuple[int, ...]) -> dict[str, Any]:
        row["verdict"] = verdict(row, origin, simhashes, self.distance)
        row["live"] = row["verdict"] == "live"
        row["favicon_mmh3"] = origin.favicon
        row["host"] = (urlsplit(row["url"]).hostname or "").lower()
        count_record(self.crawler.stats, row)
        return row

    def closed(self, reason: str) -> None:
        super().closed(reason)
        if self.buffer:  # stopped (a signal, a store error) before its last answers: not stored
            self.logger.warning(
                "%s: %d probe records not stored: the crawl stopped", self.name, len(self.buffer)
            )
        log_table(self.logger, self.crawler.stats)


def ledgered(batch: ProbeBatch) -> ProbeBatch:
    """Each URL of the batch as a page of the store's ledger, written in the records' transaction.

    Why: ``-s JOBDIR=`` keeps the run across a stop, and the ledger is what a
    resumed run reads back (:meth:`~trawl.sources.base.Source.page_done`), so a
    URL whose record was stored is not asked again and one that was not is.
    """
    urls = batch.frame.get_column("url").to_list()
    if urls:
        batch.page, batch.page_rows = urls[0], 1
        batch._more_pages = dict.fromkeys(urls[1:], 1)
    return batch


def _failure_text(failure: Failure) -> str:
    """Why a URL got no answer, in a few words."""
    if failure.check(IgnoreRequest) and "redirect" in str(failure.value).lower():
        return "too many redirects"
    message = failure.getErrorMessage() or failure.type.__name__  # type: ignore[union-attr]
    return message.splitlines()[0][:200]


__all__ = ["ProbeSpider", "interleaved", "origin_of"]
