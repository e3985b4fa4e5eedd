"""``trawl crawl crates``: the crates.io registry's metadata, from its daily db-dump or its API.

A :class:`~trawl.sources.base.Source` (no domain) with three modes.
``-a mode=api`` and ``-a mode=incremental`` read crates.io's API at one
request a second (:mod:`.api`, :mod:`.incremental`; their arguments and the
User-Agent policy in :mod:`.policy`). ``-a mode=dump`` (the default) fetches
``CRATES_DUMP_URL`` as one Scrapy request, so the proxies, the gate and the
download limits apply as to any source, and reads it as a stream (:mod:`.dump`) into ``crate``, ``version``
and ``dependency`` batches (:mod:`.records`) that travel the URL batches'
pipeline into the same store.

The body is streamed (:mod:`.stream`): Scrapy's handler hands each chunk to
the thread that reads the dump instead of gathering the body, so at most
about 32 MiB of the compressed dump is in memory, whatever its size (it was
whole in memory before: 1.7 GiB in September 2026). The reading starts as the
body begins, from :meth:`CratesSpider.start` (which may yield items since
Scrapy 2.13), not from the callback, which Scrapy calls only when the body has
ended. Each step of the reader runs in the reactor's thread pool
(``deferToThread``): the progress line, signals and the store's writer go on
meanwhile, and the next block is read only once the pipeline took the last batch.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import task, threads

from trawl.common.secrets import redact
from trawl.common.stopping import is_stopping, stopping
from trawl.errors import TrawlUsageError
from trawl.pipeline.backlog import resume
from trawl.records.batches import Batch
from trawl.settings_checks import Setting, http_url, text, whole
from trawl.sources.arguments import parse_bool
from trawl.sources.base import Source
from trawl.sources.crates import loadlock
from trawl.sources.crates.api import ApiCrawl, ApiOptions
from trawl.sources.crates.apifetch import Stop
from trawl.sources.crates.bridge import UrlBridge
from trawl.sources.crates.dump import SETTINGS as DUMP_SETTINGS
from trawl.sources.crates.dumpread import DumpReading
from trawl.sources.crates.history import SETTINGS as HISTORY_SETTINGS
from trawl.sources.crates.history import HistoryBackfill, read_history_days
from trawl.sources.crates.incremental import read_known
from trawl.sources.crates.policy import API_ARGUMENTS, read_api_options
from trawl.sources.crates.staging import empty_staging
from trawl.sources.crates.stream import STREAM, BodyStream
from trawl.sources.target import parse_target

STREAMING_HANDLER = "trawl.sources.crates.stream.StreamingDownloadHandler"
DEFAULT_DUMP_URL = "https://static.crates.io/db-dump.tar.gz"
MODES = ("dump", "api", "incremental")
API_MODES = ("api", "incremental")


def _one_line(exc: BaseException) -> str:
    """An error's first line, secrets masked (a store's message may quote its URI)."""
    return redact((str(exc).strip().splitlines() or [type(exc).__name__])[0])


class CratesSpider(DumpReading, Source):
    """crates.io crates, versions and dependencies from the registry's daily db-dump or its API."""

    name = "crates"
    extra_arguments = {
        "mode": "dump (the daily db-dump, default), api (the API) or incremental (what changed since)",
        "domain": "the crates' repository and homepage URLs on this domain go to the URL store too",
        "subs": "with domain=: its subdomains too (default true)",
        "history": "days of version downloads before the dump's 90, from the per-day archive (default 0)",
        "crates": "api: these crates only (comma-separated), no listing",
        "q": "api / incremental: the listing's search (/api/v1/crates?q=)",
        "limit": "api / incremental: at most this many crates from the listing (default 0: all)",
        "dependencies": "api / incremental: also each version's dependencies (default false)",
    }
    in_crawl_all = False  # a 1.7 GiB download has no place in "all sources for a domain"
    #: One answer: the whole dump (1.7 GiB compressed in September 2026, growing).
    default_download_maxsize = 8 << 30
    default_download_warnsize = 4 << 30
    #: The time to download it: the longest DOWNLOAD_TIMEOUT allows (1.7 GiB at 0.5 MB/s).
    default_download_timeout = 3600
    #: crates.io's crawler policy (https://crates.io/data-access): one request a second, one at a time.
    default_rate_limit = "1/1s"
    default_concurrency = 1
    base_url_setting = "CRATES_BASE_URL"
    default_base_url = "https://crates.io"
    settings_declared = {
        "CRATES_DUMP_URL": Setting(
            DEFAULT_DUMP_URL,
            http_url(),
            "where the crates source fetches the crates.io db-dump (a tar.gz; a zip when it ends in .zip)",
        ),
        "CRATES_PARQUET_DIR": Setting(
            "", text, "a folder for the raw layer: the db-dump's tables as Parquet (off when empty)"
        ),
        "CRATES_BATCH_ROWS": Setting(
            50_000, whole(1000, 10_000_000), "rows of a dump table per batch (per store transaction)"
        ),
        "CRATES_API_PAGE_SIZE": Setting(
            100, whole(1, 100), "crates per listing page of the API modes (crates.io serves at most 100)"
        ),
        "CRATES_USER_AGENT": Setting(
            "", text, "the User-Agent of the API modes: your application and a contact (email or URL)"
        ),
        **DUMP_SETTINGS,
        **HISTORY_SETTINGS,
    }

    mode: str = "dump"
    api: ApiOptions | None = None
    #: ``-a domain=``: the crates' URLs on it go to the URL store too (:mod:`.bridge`).
    bridge: UrlBridge | None = None
    #: ``-a history=DAYS``: the per-day archive, after the mode (:mod:`.history`).
    history: HistoryBackfill | None = None

    def configure_kind(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        mode = str(arguments.get("mode") or "dump").strip().lower()
        if mode not in MODES:
            raise TrawlUsageError(
                f"-a mode= of the crates source must be one of {', '.join(MODES)}, got {mode!r}"
            )
        self.mode = mode
        self.api = self._configure_api(mode, settings, arguments)
        self.bridge = self._configure_bridge(arguments)
        self.dump_url = str(self.setting(settings, "CRATES_DUMP_URL")).strip()
        self.expected = "a zip" if urlsplit(self.dump_url).path.endswith(".zip") else "a tar.gz"
        self.batch_rows = int(self.setting(settings, "CRATES_BATCH_ROWS"))
        self.dump_max_bytes = int(self.setting(settings, "CRATES_DUMP_MAX_BYTES"))
        parquet = str(self.setting(settings, "CRATES_PARQUET_DIR") or "").strip()
        self.parquet_dir = Path(parquet).expanduser() if parquet else None
        days = read_history_days(arguments)
        if days:
            archive = str(self.setting(settings, "CRATES_ARCHIVE_BASE_URL")).strip()
            agent = " ".join(str(settings.get("CRATES_USER_AGENT") or "").split())
            self.history = HistoryBackfill(self, days, archive, agent)

    def _configure_api(
        self, mode: str, settings: Mapping[str, Any], arguments: Mapping[str, Any]
    ) -> ApiOptions | None:
        """The API modes' options (:mod:`.policy`); ``None`` for ``dump``, which refuses their arguments."""
        if mode not in API_MODES:
            given = [name for name in API_ARGUMENTS if arguments.get(name) not in (None, "")]
            if given:
                raise TrawlUsageError(
                    f"-a {given[0]}= is an argument of -a mode=api or incremental, not of {mode}"
                )
            return None
        if mode == "incremental" and not str(settings.get("STORE_URI") or "").strip():
            raise TrawlUsageError("-a mode=incremental tops up the crates a store holds: it needs STORE_URI")
        options = read_api_options(mode, settings, arguments, self._read_base_url(settings))
        options.per_page = int(self.setting(settings, "CRATES_API_PAGE_SIZE"))
        return options

    def _configure_bridge(self, arguments: Mapping[str, Any]) -> UrlBridge | None:
        """``-a domain=`` (and ``subs=``, as for the URL sources): the URL bridge, else None."""
        domain = arguments.get("domain")
        if domain in (None, ""):
            if arguments.get("subs") not in (None, ""):
                raise TrawlUsageError("-a subs= scopes -a domain=, which the crates source was not given")
            return None
        subs = parse_bool("subs", arguments.get("subs", True))
        return UrlBridge(self.name, parse_target(str(domain), include_subdomains=subs))

    def run_inputs(self) -> dict[str, Any]:
        inputs: dict[str, Any] = {**super().run_inputs(), "mode": self.mode}
        if self.bridge is not None:  # the URL plugins' scope, and the run's domain in the store
            inputs["target"] = self.bridge.target
        return inputs

    def bridged(self, batch: Batch) -> list[Batch]:
        """``batch``, and the capture batch of its crates' URLs on ``-a domain=`` (:mod:`.bridge`)."""
        captures = self.bridge.captures(batch) if self.bridge is not None else None
        return [batch] if captures is None else [batch, captures]

    @classmethod
    def update_settings(cls, settings: Any) -> None:
        """The streaming download handler (:mod:`.stream`): trawl's own, plus bodies that stream."""
        super().update_settings(settings)
        handlers = dict(settings.getdict("DOWNLOAD_HANDLERS"))
        for scheme in ("http", "https"):
            handlers[scheme] = STREAMING_HANDLER
        settings.set("DOWNLOAD_HANDLERS", handlers, priority="spider")

    async def start(self) -> AsyncIterator[Any]:
        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            self.crawler.signals.connect(self._item_done, signal=signal)  # items_pending (dump, history)
        self.crawler.signals.connect(self._watch_close, signal=stopping)
        async for item in self._start_mode():
            yield item
        if self.history is not None and not self.check_only and not is_stopping(self.crawler):
            async for batch in self.history.run():
                yield batch
            await self._close_when_stored()

    async def _start_mode(self) -> AsyncIterator[Any]:
        """The mode's requests and batches (``dump``, ``api``, ``incremental``)."""
        if self.api is not None:
            async for batch in self._start_api(self.api):
                yield batch
            return
        if self.check_only:
            self.report_estimate(1)
            return
        if not self.take_request() or not await self._start_load():
            return
        self.logger.info("%s: fetching the db-dump %s", self.name, self.describe_url(self.dump_url))
        stream = BodyStream()
        self.crawler.signals.connect(self._stop_streaming, signal=signals.bytes_received)
        # Not retried: a retry would start the archive again under a reader that is midway.
        meta = {STREAM: stream, "dont_retry": True}
        yield scrapy.Request(  # dont_filter: a redirect back to a URL seen is counted, not dropped unsaid
            self.dump_url, callback=self.parse_dump, errback=self.on_dump_error, meta=meta, dont_filter=True
        )
        if not await maybe_deferred_to_future(stream.started):
            return  # not streamed: an error status or an HTML page, which the callback or errback says
        async for batch in self.read_stream(stream):
            yield batch
        await self._close_when_stored()  # the run ends with its switch stored, not 5 s later

    async def _start_load(self) -> bool:
        """Before the dump is fetched: the store's load lock taken (:mod:`.loadlock`: one load
        at a time, a second one refused in one ERROR line naming the first), and its staging
        tables emptied (:mod:`.staging`), so that no row of a load that did not end reaches
        this one's snapshot. False, after one ERROR line, when the load cannot start."""
        context = getattr(self, "run_context", None)
        store = context.store if context is not None else None
        if store is None:
            return True
        try:
            self._load_lock = await maybe_deferred_to_future(threads.deferToThread(loadlock.acquire, store))
        except loadlock.LoadBusy as busy:
            self.record_error("busy", "%s", busy)
            return False
        except Exception as exc:  # noqa: BLE001 - the store's own errors, said in one line
            self.record_error("store", "cannot take the store's load lock: %s", _one_line(exc))
            return False
        previous = self._load_lock.previous
        if previous is not None:
            self.logger.warning(
                "%s: the load of %s did not end: what it left in the store is removed",
                self.name,
                previous.named(),
            )
        try:
            emptied = await maybe_deferred_to_future(threads.deferToThread(empty_staging, store, self.name))
        except Exception as exc:  # noqa: BLE001 - the store's own errors, said in one line
            self.record_error("store", "cannot empty the staging tables of the dump: %s", _one_line(exc))
            return False
        if emptied:
            tables = ", ".join(emptied)
            self.logger.info(
                "%s: emptied the staging tables a load that did not end left (%s)", self.name, tables
            )
        return True

    #: The store's load lock, held from the load's start until the spider has closed.
    _load_lock: loadlock.LoadLock | None = None

    async def _start_api(self, options: ApiOptions) -> AsyncIterator[Any]:
        """``mode=api`` / ``incremental``: one coroutine, request after request (:mod:`.api`)."""
        if self.check_only:
            self.logger.info(
                "%s: check only: the API modes' request count is known only as they go", self.name
            )
            return
        try:
            known = read_known(self, options.mode)
        except Stop:
            return
        self.logger.info(
            "%s: %s from %s as %r",
            self.name,
            options.mode,
            self.describe_url(self.base_url),
            options.user_agent,
        )
        async for batch in ApiCrawl(self, options, known).run():
            for item in self.bridged(batch):
                yield item
        await self._close_when_stored()

    async def _close_when_stored(self) -> None:
        """Let the engine close as soon as the last batch is stored, not on its next heartbeat.

        Everything of the API modes and of the dump happens inside ``start()``: when it ends, the
        engine looked for idleness last while the batches were still in the
        pipeline, and would look again only on its 5 s heartbeat. Waiting for the
        pipeline to empty, then nudging it (:func:`~trawl.pipeline.backlog.resume`)
        makes it find the crawl idle once ``start()`` has returned.
        """
        engine = self.crawler.engine
        slot = getattr(getattr(engine, "scraper", None), "slot", None)
        while slot is not None and not slot.is_idle():
            if not await self.wait(0.05):
                return
        resume(engine)

    #: How often a closing engine is looked at until its scraper has let the last batch go.
    CLOSE_CHECK_SECONDS = 0.05
    _close_check: task.LoopingCall | None = None

    def _watch_close(self, reason: str = "", **_: Any) -> None:
        """The engine starts closing (a signal, a store error, the end): see that it gets past its
        scraper once the batches in the pipeline are done.

        Every batch of this source is an item of ``start()``. Scrapy 2.19 counts such
        an item in the scraper's ``itemproc_size`` (so that ``is_idle`` waits for it)
        but, unlike an item of a callback, never looks at a closing scraper again when
        one ends: a close that began while a batch was in the pipeline (Ctrl-C, a store
        error, both mid-load) waited for ever, the progress line going on every 10 s.
        This looks every 50 ms, and does what Scrapy does after a callback's item.
        """
        if self._reading is not None:  # a load under way: its reading threads stop now
            load, stream = self._reading
            self._reading = None
            self._say_stopped()
            stream.close()
            load.abandon()
        if self._close_check is None:
            self._close_check = task.LoopingCall(self._close_if_idle)
            self._close_check.start(self.CLOSE_CHECK_SECONDS, now=False)

    def _close_if_idle(self) -> None:
        scraper = getattr(self.crawler.engine, "scraper", None)
        slot = getattr(scraper, "slot", None)
        closing = getattr(slot, "closing", None)
        if slot is None or (closing is not None and closing.called):
            self._stop_close_check()
        elif closing is not None and slot.is_idle():
            self._stop_close_check()
            check = getattr(scraper, "_check_if_closing", None)
            if check is not None:
                check()
            else:  # a Scrapy without it: what it does
                closing.callback(self)

    def _stop_close_check(self) -> None:
        if self._close_check is not None and self._close_check.running:
            self._close_check.stop()

    def closed(self, reason: str) -> None:
        self._stop_close_check()
        lock, self._load_lock = self._load_lock, None
        if lock is not None:  # the store is closed: every batch of the load, and its switch, written
            lock.release()
        super().closed(reason)

    def parse_dump(self, response: Response) -> None:
        """The answer, once it ended: a streamed body was read from :meth:`start`; one that was
        not streamed (a 200 labelled HTML, an empty one) is said here."""
        stream = response.meta.get(STREAM)
        if isinstance(stream, BodyStream):
            if stream.streaming:
                return
            stream.not_streamed()  # the final answer (after any redirect): start() stops waiting
        where = self.describe_url(response.url)
        if not response.body:
            self.record_error("malformed", "the db-dump %s: the answer is empty", where)
        elif not self.reject_html(response, f"the db-dump {where}", self.expected):
            kind = response.headers.get("Content-Type")
            self.record_error("malformed", "the db-dump %s: not %s (%s)", where, self.expected, kind)

    def _stop_streaming(self, data: bytes, request: scrapy.Request, **_: Any) -> None:
        """``bytes_received``: the reader is done with a body still arriving (an error, the stop,
        the archive's end before its padding): end the download as Scrapy lets a handler."""
        stream = request.meta.get(STREAM)
        if isinstance(stream, BodyStream) and stream.discarding:
            raise StopDownload(fail=False)

    #: Batches yielded and not through the pipeline yet (Scrapy processes items from start()
    #: without waiting for them: with no store to hold the reader back, 8 million rows took
    #: the crawl to 715 MB where the reader alone peaks at 251 MB).
    items_pending: int = 0
    MAX_ITEMS_PENDING = 2

    def _item_done(self, item: Any, **_: Any) -> None:
        if isinstance(item, Batch) and item.source == self.name:
            self.items_pending = max(0, self.items_pending - 1)

    def on_dump_error(self, failure: Any) -> None:
        stream = failure.request.meta.get(STREAM)  # type: ignore[attr-defined]
        if isinstance(stream, BodyStream):
            stream.end("the download failed")
        if failure.check(IgnoreRequest) and "redirections" in str(failure.value):
            limit = self.crawler.settings.getint("REDIRECT_MAX_TIMES")
            where = self.describe_url(self.dump_url)
            self.record_error("http", "the db-dump %s: over %d redirects (REDIRECT_MAX_TIMES)", where, limit)
            return
        self.on_request_error(failure)
