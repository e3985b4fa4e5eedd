"""The files of the responses source: Scrapy's ``FilesPipeline``, one download per digest.

It runs before trawl's item pipeline (:class:`~trawl.pipeline.itempipeline.PluginPipeline`)
and only on ``response`` batches; every other item passes untouched. For each
row of a batch:

* a digest the store's index holds (read once, at the start: :meth:`ResponseIndex.digests`)
  or that this run stored already: no download, the row names that file;
* a digest another row of this run is downloading: the row waits for it;
* else one download of the raw replay (``id_``) through the engine, so the
  source's gate, retries, proxies and size bounds apply as to any request,
  and redirects between captures are followed as the archive serves them.

A file is named by the hash of its bytes under its host's folder
(:mod:`trawl.sources.responses.naming`) and written by the store ``FILES_STORE`` names: a local
folder through :class:`~.safestore.SafeFSFilesStore`, or S3, GCS and FTP as
Scrapy writes them. A "no memento" answer, a failed download or a capture
past the run's byte cap leaves its rows out of the batch: the index lists
only what is stored (and, with no file and the status ``no memento``, the
captures the archive has none of, so that a rerun does not ask again), and
the batch then goes on to the store like any other.
"""

from __future__ import annotations

import logging
from io import BytesIO
from typing import TYPE_CHECKING, Any, ClassVar

import polars as pl
from scrapy import Request
from scrapy.http import Response
from scrapy.pipelines.files import FilesPipeline
from scrapy.utils.datatypes import SequenceExclude
from scrapy.utils.defer import deferred_from_coro, ensure_awaitable, maybe_deferred_to_future
from twisted.internet.defer import Deferred, DeferredList
from twisted.python.failure import Failure

from trawl.common import statkeys
from trawl.errors import TrawlError
from trawl.pipeline.responsefiles.safestore import FolderUnwritable, SafeFSFilesStore, UnsafePath
from trawl.pipeline.runstore import stored_response_index
from trawl.politeness.bounds import ResponseTooLarge, bounded_failure
from trawl.sources.responses import stats
from trawl.sources.responses.naming import clean_digest, content_digest, file_path
from trawl.sources.responses.records import ResponseBatch
from trawl.sources.responses.replay import is_memento, is_no_memento, served_timestamp

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class NotStored(Exception):  # noqa: N818 - a row left out, said once where it happens
    """A capture whose bytes are not stored (no memento, an error, a cap): its rows leave the batch."""


class NoMemento(NotStored):
    """The archive has no memento of the capture: indexed without a file, never asked again."""


#: The ``status`` of an index row whose capture the archive had no memento of (its ``path`` is null).
NO_MEMENTO_STATUS = "no memento"


class ResponseFilesPipeline(FilesPipeline):
    """Downloads and stores the files of ``response`` batches; passes every other item on."""

    STORE_SCHEMES: ClassVar[dict[str, Any]] = {
        **FilesPipeline.STORE_SCHEMES,
        "": SafeFSFilesStore,
        "file": SafeFSFilesStore,
    }

    def __init__(self, store_uri: str, *, crawler: Crawler) -> None:
        super().__init__(store_uri, crawler=crawler)
        self._handle_statuses(True)  # redirects between captures are followed, as served
        self.allow_redirects = True
        settings = crawler.settings
        self.max_bytes = settings.getint("RESPONSES_MAX_BYTES")
        self.run_cap = settings.getint("RESPONSES_MAX_RUN_BYTES")
        #: digest -> stored file: what the index held at the start, and what this run stored.
        self.known: dict[str, str] = {}
        #: (url, timestamp) of captures the archive had no memento of, in an earlier run.
        self.missing: set[tuple[str, str]] = set()
        #: digest -> rows waiting for its download in flight (fired with its file, or None).
        self.pending: dict[str, list[Deferred[str | None]]] = {}
        self.bytes_stored = 0
        self.cap_said = False
        self.folder_failed = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ResponseFilesPipeline:
        cls._update_stores(crawler.settings)
        return cls(str(crawler.settings.get("FILES_STORE") or ""), crawler=crawler)

    def open_spider(self, spider: Any = None) -> None:
        super().open_spider()
        uri = str(self.crawler.settings.get("STORE_URI") or "").strip()
        if not uri:
            return
        try:
            index = stored_response_index(self.crawler.settings)
            try:
                self.known = dict(index.digests())
                self.missing = set(index.missing())
            finally:
                index.close()
        except TrawlError as exc:
            logger.error("responses: cannot read the index of stored responses: %s", exc)
            self.crawler.stats.inc_value(statkeys.ERRORS)
        self.crawler.stats.set_value(stats.INDEXED_BEFORE, len(self.known))

    # --- one batch -------------------------------------------------------------------------

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        if not isinstance(item, ResponseBatch):
            return item
        frame = ResponseBatch.with_transient(item.frame)
        if frame.height == 0:  # a URL without captures: its page still goes to the ledger
            item.frame = frame.drop("replay", "payload")
            return item
        rows = frame.to_dicts()
        done = await maybe_deferred_to_future(
            DeferredList(
                [deferred_from_coro(self._row(row)) for row in rows],
                fireOnOneErrback=True,
                consumeErrors=True,
            )
        )
        kept = [{**row, **found} for row, (_, found) in zip(rows, done, strict=True) if found is not None]
        stored = ResponseBatch.with_transient(
            pl.DataFrame(kept, schema=frame.schema) if kept else frame.clear()
        )
        item.frame = stored.drop("replay", "payload")
        return item

    async def _row(self, row: dict[str, Any]) -> dict[str, Any] | None:
        """What the row becomes in the index (its file, and what the archive said), or ``None``."""
        digest = clean_digest(row.get("digest"))
        if (row.get("url"), row.get("timestamp")) in self.missing:
            self.crawler.stats.inc_value(stats.KNOWN_MISSING)
            return None  # indexed as missing before: not asked again
        if digest is not None and digest in self.known:
            self.crawler.stats.inc_value(stats.STORED_BEFORE)
            return {"digest": digest, "path": self.known[digest]}
        if digest is not None and digest in self.pending:
            self.crawler.stats.inc_value(stats.SHARED_IN_RUN)
            waiter: Deferred[str | None] = Deferred()
            self.pending[digest].append(waiter)
            path = await maybe_deferred_to_future(waiter)
            return None if path is None else {"digest": digest, "path": path}
        if digest is not None:
            self.pending[digest] = []
        found: dict[str, Any] | None = None
        try:
            found = await self._store(row, digest)
        except NoMemento:
            return {"digest": digest, "path": None, "status": NO_MEMENTO_STATUS, "length": None}
        except NotStored:
            found = None
        finally:
            path = found["path"] if found else None
            if digest is not None:
                if path is not None:
                    self.known[digest] = path
                for waiting in self.pending.pop(digest, []):
                    waiting.callback(path)
        return found

    async def _store(self, row: dict[str, Any], digest: str | None) -> dict[str, Any]:
        if self.run_cap and self.bytes_stored >= self.run_cap:
            self._cap_reached()
            raise NotStored("run cap")
        payload = row.get("payload")
        if payload is not None:
            return await self._persist(row, bytes(payload), digest, origin_status=row.get("status"))
        replay = row.get("replay")
        if not replay:
            raise NotStored("nothing to download")
        request = Request(
            replay,
            meta={
                "download_maxsize": self.max_bytes,
                "download_warnsize": 0,
                "trawl_response_row": {k: row.get(k) for k in ("url", "timestamp", "host", "mime")},
                "trawl_response_digest": digest,
                # 3xx are followed by the redirect middleware; every other status comes here.
                "handle_httpstatus_list": SequenceExclude(range(300, 400)),
            },
        )
        try:
            response = await self.crawler.engine.download_async(request)
        except Exception:  # noqa: BLE001 - media_failed says it in one line and raises NotStored
            self.media_failed(Failure(), request, self.spiderinfo)
            raise NotStored("failed") from None
        if not isinstance(response, Response):
            raise NotStored("not a response")
        return await self.media_downloaded(response, request, self.spiderinfo)

    async def _persist(
        self, row: dict[str, Any], body: bytes, digest: str | None, origin_status: Any = None
    ) -> dict[str, Any]:
        """Write the bytes under their content hash; the row's index fields."""
        if self.max_bytes and len(body) > self.max_bytes:
            self.crawler.stats.inc_value(stats.TOO_BIG)
            raise NotStored("too big")
        named = content_digest(body)
        path = file_path(row.get("host"), named, row.get("url"), row.get("mime"))
        try:
            await ensure_awaitable(self.store.persist_file(path, BytesIO(body), self.spiderinfo))
        except UnsafePath as exc:
            self.crawler.stats.inc_value(stats.UNSAFE)
            logger.warning("responses: not written: %s", exc)
            raise NotStored("unsafe") from None
        except FolderUnwritable as exc:
            self._folder_failed(exc)
            raise NotStored("unwritable") from None
        self.bytes_stored += len(body)
        stat = self.crawler.stats
        stat.inc_value(stats.FILES)
        stat.inc_value(stats.BYTES, len(body))
        return {
            "digest": digest or named,
            "path": path,
            "length": len(body),
            "status": str(origin_status) if origin_status is not None else None,
        }

    def _folder_failed(self, exc: FolderUnwritable) -> None:
        """One ERROR line and the run stopped: every later file would fail the same way.

        Each file is counted as failed; files written before stay whole and indexed.
        """
        stat = self.crawler.stats
        stat.inc_value(stats.FAILED)
        if self.folder_failed:
            return
        self.folder_failed = True
        stat.inc_value(statkeys.ERRORS)
        logger.error("responses: %s; stopping the crawl (rerun to complete it)", exc.strerror)
        engine = self.crawler.engine
        if engine is not None and engine.spider is not None:
            deferred_from_coro(engine.close_spider_async(reason="store_error"))

    def _cap_reached(self) -> None:
        if not self.cap_said:
            self.cap_said = True
            logger.warning(
                "responses: stopping downloads at RESPONSES_MAX_RUN_BYTES (%d bytes stored);"
                " the results are partial",
                self.bytes_stored,
            )
            self.crawler.stats.set_value(statkeys.LIMITED, True)
        self.crawler.stats.inc_value(stats.OVER_RUN_CAP)

    # --- FilesPipeline's interface ---------------------------------------------------------

    def get_media_requests(self, item: Any, info: Any) -> list[Request]:
        return []  # rows are downloaded one by one in _store

    def media_to_download(self, request: Request, info: Any, *, item: Any = None) -> None:
        """Always download: the index, not the folder, says what is stored (a file left by a
        run stopped before its batch was indexed is written again, the same bytes)."""
        return None

    async def media_downloaded(
        self, response: Response, request: Request, info: Any, *, item: Any = None
    ) -> dict[str, Any]:
        row = request.meta["trawl_response_row"]
        stat = self.crawler.stats
        if is_no_memento(response):
            stat.inc_value(stats.NO_MEMENTO)
            raise NoMemento("no memento")
        if response.status != 200 and not is_memento(response):
            stat.inc_value(stats.FAILED)
            logger.warning(
                "responses: HTTP %d for %s at %s from the archive; not stored",
                response.status,
                row["url"],
                row["timestamp"],
            )
            raise NotStored("http")
        mime = response.headers.get("Content-Type")
        found = await self._persist(
            {**row, "mime": mime.decode("latin-1") if mime else row.get("mime")},
            response.body,
            request.meta.get("trawl_response_digest"),
            origin_status=response.status,
        )
        stat.inc_value(stats.DOWNLOADED)
        found["served"] = served_timestamp(response.url)
        if mime:
            found["mime"] = mime.decode("latin-1").split(";", 1)[0].strip() or None
        return found

    def media_failed(self, failure: Failure, request: Request, info: Any) -> Any:
        if failure.check(NotStored):
            failure.raiseException()
        row = request.meta.get("trawl_response_row", {})
        stat = self.crawler.stats
        told = bounded_failure(request, failure.value)
        if failure.check(ResponseTooLarge):
            stat.inc_value(stats.TOO_BIG)
            logger.warning(
                "responses: %s at %s over RESPONSES_MAX_BYTES: not stored",
                row.get("url"),
                row.get("timestamp"),
            )
        else:
            stat.inc_value(stats.FAILED)
            stat.inc_value(statkeys.ERRORS)
            why = told[1] if told else (failure.getErrorMessage() or failure.type.__name__)
            logger.error("responses: cannot download %s at %s: %s", row.get("url"), row.get("timestamp"), why)
        raise NotStored("failed")

    def item_completed(self, results: list[Any], item: Any, info: Any) -> Any:
        return item

    def file_path(self, request: Request, response: Any = None, info: Any = None, *, item: Any = None) -> str:
        row = request.meta.get("trawl_response_row", {})
        body = getattr(response, "body", None)
        digest = content_digest(body) if body is not None else request.meta.get("trawl_response_digest")
        return file_path(row.get("host"), digest or "0" * 40, row.get("url"), row.get("mime"))
