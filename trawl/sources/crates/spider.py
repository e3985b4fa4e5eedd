"""``trawl crawl crates``: the crates.io registry's metadata, from its daily db-dump or its API.

A :class:`~trawl.sources.base.Source` (no domain) with three modes.
``-a mode=api`` and ``-a mode=incremental`` read crates.io's API at one
request a second (:mod:`.api`, :mod:`.incremental`; their arguments and the
User-Agent policy in :mod:`.policy`). ``-a mode=dump`` (the default) fetches
``CRATES_DUMP_URL`` as one Scrapy request, so the proxies, the gate and the
download limits apply as to any source, and reads it as a stream (:mod:`.dump`) into ``crate``, ``version``
and ``dependency`` batches (:mod:`.records`) that travel the URL batches'
pipeline into the same store.

Scrapy hands a callback the whole body: the compressed dump is in memory once
(1.7 GiB in September 2026), never inflated whole nor written to disk; its
tables are inflated and parsed a block at a time. Parsing a real dump takes
minutes, so each step of the reader runs in the reactor's thread pool
(``deferToThread``): the progress line, signals and the store's writer go on
meanwhile, and the next block is read only once the pipeline took the last batch.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Mapping
from typing import Any

import scrapy
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import threads

from trawl.errors import TrawlUsageError
from trawl.pipeline.backlog import StoreBacklog, resume
from trawl.run.counts import counted
from trawl.run.stopping import is_stopping
from trawl.settings_checks import Setting, http_url, text, whole
from trawl.sources.base import Source
from trawl.sources.crates.api import ApiCrawl, ApiOptions
from trawl.sources.crates.apifetch import Stop
from trawl.sources.crates.dump import DumpInfo, read_dump
from trawl.sources.crates.incremental import read_known
from trawl.sources.crates.policy import API_ARGUMENTS, read_api_options
from trawl.sources.crates.tables import DumpError

DEFAULT_DUMP_URL = "https://static.crates.io/db-dump.tar.gz"
MODES = ("dump", "api", "incremental")
API_MODES = ("api", "incremental")


class CratesSpider(Source):
    """crates.io crates, versions and dependencies from the registry's daily db-dump or its API."""

    name = "crates"
    extra_arguments = frozenset({"mode", *API_ARGUMENTS})
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
            DEFAULT_DUMP_URL, http_url(), "where the crates source fetches the crates.io db-dump (tar.gz)"
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
    }

    mode: str = "dump"
    api: ApiOptions | None = None

    def configure_kind(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        mode = str(arguments.get("mode") or "dump").strip().lower()
        if mode not in MODES:
            raise TrawlUsageError(
                f"-a mode= of the crates source must be one of {', '.join(MODES)}, got {mode!r}"
            )
        self.mode = mode
        self.api = self._configure_api(mode, settings, arguments)
        self.dump_url = str(self.setting(settings, "CRATES_DUMP_URL")).strip()
        self.batch_rows = int(self.setting(settings, "CRATES_BATCH_ROWS"))

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

    def run_inputs(self) -> dict[str, Any]:
        return {**super().run_inputs(), "mode": self.mode}

    async def start(self) -> AsyncIterator[Any]:
        if self.api is not None:
            async for batch in self._start_api(self.api):
                yield batch
            return
        if self.check_only:
            self.report_estimate(1)
            return
        if not self.take_request():
            return
        self.logger.info("%s: fetching the db-dump %s", self.name, self.describe_url(self.dump_url))
        yield scrapy.Request(self.dump_url, callback=self.parse_dump, errback=self.on_request_error)

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
            yield batch
        await self._close_when_stored()

    async def _close_when_stored(self) -> None:
        """Let the engine close as soon as the last batch is stored, not on its next heartbeat.

        Everything of the API modes happens inside ``start()``: when it ends, the
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

    async def parse_dump(self, response: Response) -> AsyncIterator[Any]:
        where = self.describe_url(response.url)
        if self.reject_html(response, f"the db-dump {where}", "a tar.gz"):
            return
        info = DumpInfo()
        batches = read_dump(io.BytesIO(response.body), info, self.batch_rows)
        rows = 0
        while True:
            if not await self._store_caught_up():  # the crawl stops (Ctrl-C, a store error)
                self.logger.warning(
                    "%s: stopped while reading the db-dump; it is read again next run", self.name
                )
                return
            try:
                read = await maybe_deferred_to_future(threads.deferToThread(next, batches, None))
            except DumpError as exc:
                self.record_error("malformed", "the db-dump %s: %s", where, exc)
                return
            if read is None:
                break
            rows += read.frame.height
            yield read.batch_type(self.name, read.frame, page=read.page, page_rows=read.frame.height)
        self.logger.info(
            "%s: read the db-dump %s (%s, %s, exported %s)",
            self.name,
            info.snapshot,
            counted(info.tables, "table"),
            counted(rows, "row"),
            info.timestamp or "at an unknown time",
        )

    async def _store_caught_up(self) -> bool:
        """Wait while the store is more than ``STORE_BACKLOG_ROWS`` rows behind; False if the crawl stops.

        :class:`~trawl.pipeline.backlog.StoreBacklog` pauses the engine, which
        holds back requests, not a callback's items: without this wait the reader
        ran ahead of the SQLite writer (840,000 rows read in 4 s, written in 15 s)
        and a real dump's tables would pile up in memory. 50 ms steps: a fraction of
        the ~1 s of writing the bound stands for.
        """
        limit = int(self.crawler.settings.getint("STORE_BACKLOG_ROWS"))
        while limit and StoreBacklog.rows > limit:
            if not await self.wait(0.05):
                return False
        return not is_stopping(self.crawler)
