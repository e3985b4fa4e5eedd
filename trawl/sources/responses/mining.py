"""Mining the responses a run stores (or had stored): endpoints, parameters, secrets.

The stage watches the responses source's own ``response`` batches leave the item
pipeline (Scrapy's ``item_scraped``: their files are written and the index row
stored), queues each file digest not mined before, and sends whole batches of
files (``MINING_BATCH_FILES``) to the process pool (:mod:`trawl.mining.pool`).
What a batch finds comes back as batches of the mining kinds
(:mod:`trawl.mining.records`) and a :class:`~trawl.records.batches.UrlBatch` of
the in-scope endpoint URLs (source ``responses``, first/last seen: the file's
captures), handed to the scraper exactly as items yielded by ``start()`` are
(``Scraper.start_itemproc_async``): the same hooks, filters and store, no
second pipeline.

Each digest is mined once: the ``mined`` records read at the start say which
were (and whether secrets were looked for), so a rerun mines nothing again.
The run does not end while files are queued or mined (``spider_idle``).
Workers read files from a local ``FILES_STORE``; with S3, GCS or FTP mining is
skipped, said in one line.
"""

from __future__ import annotations

import logging
from collections import Counter
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import polars as pl
from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.defer import deferred_from_coro
from twisted.internet import threads

from trawl.common import stopping
from trawl.common.counts import counted
from trawl.errors import TrawlError, TrawlUsageError
from trawl.mining.records import (
    ENDPOINT_SCHEMA,
    MINED_SCHEMA,
    SECRET_SCHEMA,
    EndpointBatch,
    MinedBatch,
    MinedFile,
    MinedUrlBatch,
    SecretBatch,
    endpoint_rows,
    frame,
    mask,
    mined_row,
    secret_rows,
)
from trawl.mining.spans import Span, read_widened, wider
from trawl.mining.work import Result, extractor, mine_files
from trawl.pipeline.runstore import stored_kind
from trawl.records.canonical import canonicalize_many
from trawl.sources.responses import stats
from trawl.sources.responses.records import ResponseBatch

if TYPE_CHECKING:
    from trawl.mining.pool import MiningPool
    from trawl.sources.base import SourceSpider

logger = logging.getLogger(__name__)
#: Files mined in the crawl process (a small run: no pool started), a Scrapy stats key.
IN_PROCESS = "responses/mined_in_process"


def check_extractor(settings: Any, name: str, sources: Any) -> None:
    """``MINING_EXTRACTOR`` names a function this process can import (so can the workers)."""
    raw = str(settings.get(name) or "").strip()
    try:
        found = extractor(raw)
    except (ImportError, AttributeError, ValueError):
        found = None
    if not callable(found):
        raise TrawlUsageError(f"{name} {raw!r} is not an importable function (package.module.function)")


def local_root(files_store: str) -> Path | None:
    """The folder of a local ``FILES_STORE`` (a path or ``file://``); None for S3, GCS, FTP."""
    raw = files_store.strip()
    if "://" not in raw:
        return Path(raw).expanduser()
    parts = urlsplit(raw)
    return Path(unquote(parts.path)) if parts.scheme.lower() == "file" else None


class Miner:
    """The mining stage of one responses run."""

    def __init__(self, spider: SourceSpider, secrets: bool) -> None:
        self.spider = spider
        self.crawler = spider.crawler
        settings = self.crawler.settings
        self.secrets = secrets
        self.processes = int(spider.setting(settings, "MINING_PROCESSES"))
        self.batch_files = int(spider.setting(settings, "MINING_BATCH_FILES"))
        self.extractor = str(spider.setting(settings, "MINING_EXTRACTOR"))
        self.max_bytes = int(spider.setting(settings, "RESPONSES_MAX_BYTES"))
        self.root = local_root(str(settings.get("FILES_STORE") or ""))
        #: digest -> were secrets looked for (the ``mined`` records, and this run's).
        self.mined: dict[str, bool] = {}
        #: digest -> the captures' span its records were stored with (:mod:`trawl.mining.spans`).
        self.stored_spans: dict[str, Span] = {}
        #: digests mined before (or in flight) that this run met captures of: their span may grow.
        self.touched: set[str] = set()
        self.widening = False
        self.closing = False
        #: digest -> (first capture, last capture) of every capture of it this run met.
        self.spans: dict[str, tuple[str, str]] = {}
        #: digest -> (path, url, host, mime, length) queued for the pool.
        self.queue: dict[str, tuple[str, str, str, str | None, int]] = {}
        self.in_flight: set[str] = set()
        self.emitting = 0
        self.outside: Counter[str] = Counter()
        self.pool: MiningPool | None = None
        self.crawler.signals.connect(self._stopping, signal=stopping.stopping)

    # --- the run ---------------------------------------------------------------------------

    def open(self) -> bool:
        """Read what was mined before; connect the signals. False (said once) when mining cannot run."""
        if self.root is None:
            logger.warning(
                "%s: mining reads files from a local FILES_STORE; %s is not one: not mined",
                self.spider.name,
                self.crawler.settings.get("FILES_STORE"),
            )
            return False
        try:
            columns = ["digest", "secrets", "first_seen", "last_seen"]
            done = stored_kind(self.crawler.settings, MinedBatch, columns)
        except TrawlError as exc:
            self.spider.record_error("store", "cannot read which files were mined: %s", exc)
            return False
        for digest, secrets, first, last in done.iter_rows():
            self.mined[digest] = bool(secrets)
            self.stored_spans[digest] = (first or "", last or "")
        self.crawler.stats.set_value(stats.MINED_BEFORE, len(self.mined))
        self.crawler.signals.connect(self.on_item, signal=signals.item_scraped)
        self.crawler.signals.connect(self.on_idle, signal=signals.spider_idle)
        return True

    def wanted(self, digest: str) -> bool:
        """Not mined yet (or mined without the secrets this run looks for), not queued, not in flight."""
        if digest in self.queue or digest in self.in_flight:
            return False
        if digest not in self.mined:
            return True
        return self.secrets and not self.mined[digest]

    def on_item(self, item: Any, **_: Any) -> None:
        """A ``response`` batch stored: its files join the queue; a full batch goes to the pool."""
        if not isinstance(item, ResponseBatch) or item.source != self.spider.name:
            return
        rows = item.frame
        if not rows.height or not {"digest", "path", "timestamp"} <= set(rows.columns):
            return
        rows = rows.filter(pl.col("path").is_not_null() & pl.col("digest").is_not_null())
        for row in rows.iter_rows(named=True):
            digest, stamp = row["digest"], row["timestamp"] or ""
            first, last = self.spans.get(digest, (stamp, stamp))
            self.spans[digest] = (min(first, stamp), max(last, stamp))
            if self.wanted(digest):
                host = row.get("host") or urlsplit(row["url"]).hostname or ""
                self.queue[digest] = (row["path"], row["url"], host, row.get("mime"), row.get("length") or 0)
            elif digest not in self.queue:
                self.touched.add(digest)
        while len(self.queue) >= self.batch_files:
            self.flush()
        if self.queue:
            # Look for idleness now rather than at Scrapy's 5 s heartbeat: a run whose files are all
            # stored mines what waits at once (measured: 5 s of a 14 s run of five bundles).
            from twisted.internet import reactor

            reactor.callLater(0, self._look_for_idle)  # type: ignore[attr-defined]

    def _look_for_idle(self) -> None:
        slot = getattr(self.crawler.engine, "_slot", None)
        nextcall = getattr(slot, "nextcall", None)
        if nextcall is not None:  # Scrapy's private heartbeat (2.19), as _emit uses it
            nextcall.schedule()

    def on_idle(self, **_: Any) -> None:
        """Keep the run open while files wait or are mined; send what waits; then widen the spans
        of files mined before whose captures this run extended."""
        if self.queue:
            self.flush()
        if self.queue or self.in_flight or self.emitting or self.widening:
            raise DontCloseSpider
        spans = {}
        for digest in self.touched:
            span = wider(self.stored_spans.get(digest), self.spans[digest])
            if span is not None:
                spans[digest] = span
        self.touched.clear()
        if not spans:
            return
        self.widening = True
        read = threads.deferToThread(read_widened, partial(stored_kind, self.crawler.settings), spans)
        read.addCallback(self._widened, spans)
        read.addErrback(self._widen_failed)
        raise DontCloseSpider

    def _widened(self, found: tuple[pl.DataFrame, ...], spans: dict[str, Span]) -> None:
        endpoints, secrets, mined = found
        self.widening = False
        self.stored_spans.update(spans)
        self.crawler.stats.inc_value(stats.WIDENED, len(spans))
        name = self.spider.name
        if endpoints.height:
            self._emit(EndpointBatch(name, endpoints))
        if secrets.height:
            self._emit(SecretBatch(name, secrets))
        self._emit(MinedBatch(name, mined))

    def _widen_failed(self, failure: Any) -> None:
        self.widening = False
        self.spider.record_error("store", "cannot read the mined records back: %s", failure.value)

    def flush(self) -> None:
        """Up to ``MINING_BATCH_FILES`` queued files to the pool, as one batch."""
        from trawl.mining.pool import IN_PROCESS_BYTES, MiningPool

        taken = list(self.queue.items())[: self.batch_files]
        files: list[MinedFile] = []
        size = 0
        for digest, (path, url, host, mime, length) in taken:
            del self.queue[digest]
            self.in_flight.add(digest)
            first, last = self.spans.get(digest, (None, None))
            files.append(MinedFile(digest, path, url, host, mime, first or None, last or None))
            size += int(length)
        jobs = [(f.digest, f.path, f.url, f.mime) for f in files]
        waiting = sum(int(queued[4]) for queued in self.queue.values())
        in_process = self.pool is None and size + waiting <= IN_PROCESS_BYTES
        logger.debug(
            "%s: mining %s (%s bytes) %s",
            self.spider.name,
            counted(len(files), "file"),
            f"{size:,}",
            "in this process" if in_process else "in the pool",
        )
        if in_process:
            self.crawler.stats.inc_value(IN_PROCESS, len(files))
            mined = threads.deferToThread(
                mine_files, jobs, str(self.root), self.secrets, self.extractor, self.max_bytes
            )
        else:
            if self.pool is None:
                self.pool = MiningPool(self.processes)
            mined = self.pool.mine(jobs, str(self.root), self.secrets, self.extractor, self.max_bytes)
        mined.addCallback(self._mined, files, size)
        mined.addErrback(self._failed, files)

    # --- a batch mined ---------------------------------------------------------------------

    def _mined(self, results: list[Result], files: list[MinedFile], size: int) -> None:
        stat = self.crawler.stats
        endpoints: list[dict[str, object]] = []
        secrets: list[dict[str, object]] = []
        mined: list[dict[str, object]] = []
        for file, (_, findings, why) in zip(files, results, strict=True):
            self.in_flight.discard(file.digest)
            self.mined[file.digest] = self.secrets
            self.stored_spans[file.digest] = (file.first_seen or "", file.last_seen or "")
            if findings is None:
                stat.inc_value(stats.MINE_FAILED)
                logger.warning("%s: cannot mine %s (%s): %s", self.spider.name, file.path, file.url, why)
            else:
                endpoints += endpoint_rows(file, findings)
                for found in secret_rows(file, findings):
                    secrets.append(found)
                    logger.warning(
                        "%s: secret %s in %s line %s: %s",
                        self.spider.name,
                        found["rule"],
                        file.url,
                        found["line"],
                        mask(str(found["value"])),
                    )
            mined.append(mined_row(file, findings, self.secrets))
        stat.inc_value(stats.MINED, len(files))
        stat.inc_value(stats.MINED_BYTES, size)
        stat.inc_value(stats.ENDPOINTS, len(endpoints))
        stat.inc_value(stats.SECRETS, len(secrets))
        name = self.spider.name
        if endpoints:
            self._emit(EndpointBatch(name, frame(ENDPOINT_SCHEMA, endpoints)))
            urls = self._in_scope(endpoints)
            if urls is not None:
                self._emit(urls)
        if secrets:
            self._emit(SecretBatch(name, frame(SECRET_SCHEMA, secrets)))
        # Last: a run stopped before its findings were stored mines the file again next time.
        self._emit(MinedBatch(name, frame(MINED_SCHEMA, mined)))

    def _failed(self, failure: Any, files: list[MinedFile]) -> None:
        """The pool itself failed (a worker killed): the batch is not mined, a rerun tries again."""
        for file in files:
            self.in_flight.discard(file.digest)
            self.touched.discard(file.digest)
        if self.closing:  # stopped mid-batch: a rerun mines these files
            return
        self.crawler.stats.inc_value(stats.MINE_FAILED, len(files))
        self.spider.record_error("mining", "mining %s failed: %s", counted(len(files), "file"), failure.value)

    def _in_scope(self, endpoints: list[dict[str, object]]) -> MinedUrlBatch | None:
        """The endpoints' URLs on the target's hosts, canonical (as the normalize hook makes every
        source's), past the URL filters, first and last seen the file's captures; the other hosts
        counted for the summary. URLs with an unknown part (``EXPR``) are not URLs yet: left out."""
        # An unknown base (`EXPR/user`) canonicalizes to a host named `expr`: judged on the raw value.
        endpoints = [r for r in endpoints if "EXPR" not in str(r["endpoint"])]
        raw = [str(r["endpoint"]) for r in endpoints]
        urls, hosts = canonicalize_many(raw)
        seen: dict[str, list[Any]] = {}
        for row, url, host in zip(endpoints, urls, hosts, strict=True):
            if url is None or host is None or "EXPR" in url:
                continue
            if not self.spider.target.in_scope(host):
                self.outside[host] += 1
                continue
            if not self.spider.filters.url_allowed(url):
                continue
            first, last = row["first_seen"], row["last_seen"]
            known = seen.setdefault(url, [host, first, last])
            known[1] = min(filter(None, (known[1], first)), default=None)
            known[2] = max(filter(None, (known[2], last)), default=None)
        if not seen:
            return None
        values = list(seen.values())
        return MinedUrlBatch.from_columns(
            self.spider.name,
            urls=list(seen),
            hosts=[v[0] for v in values],
            first_seen=[v[1] for v in values],
            last_seen=[v[2] for v in values],
            captures=[0] * len(seen),
            statuses=[[]] * len(seen),
            mimes=[[]] * len(seen),
        )

    def _stopping(self, reason: str) -> None:
        """A stop (a signal, a store error): no findings are handed over from now on; a rerun mines
        the files whose ``mined`` records were not stored. A finished run mined everything while idle."""
        if reason != "finished":
            self.closing = True

    def _emit(self, batch: Any) -> None:
        """Into the item pipeline as an item from ``start()`` goes; the engine looks again when done."""
        if self.closing:  # the engine is closing: a rerun mines (or widens) these files again
            return
        scraper = self.crawler.engine.scraper
        self.emitting += 1

        def done(result: Any) -> Any:
            self.emitting -= 1
            slot = getattr(self.crawler.engine, "_slot", None)
            nextcall = getattr(slot, "nextcall", None)
            if nextcall is not None:  # Scrapy's private heartbeat (2.19): look for idleness now
                nextcall.schedule()
            # An item handed over outside a response is not watched by the scraper's close (2.19):
            # without this its close waited for ever when the run stopped with such an item in flight.
            check = getattr(scraper, "_check_if_closing", None)
            if check is not None and scraper.slot is not None:
                check()
            return result

        deferred_from_coro(scraper.start_itemproc_async(batch, response=None)).addBoth(done)

    def close(self) -> None:
        """The summary line, then the workers stopped."""
        self.closing = True
        value = self.crawler.stats.get_value
        hosts = sum(1 for _ in self.outside)
        top = ", ".join(f"{host} {count}" for host, count in self.outside.most_common(5))
        self.crawler.stats.set_value(stats.OUT_OF_SCOPE, sum(self.outside.values()))
        self.crawler.stats.set_value(stats.OUT_OF_SCOPE_HOSTS, hosts)
        logger.info(
            "%s: mined %s (%s bytes%s; %s mined before): %s, %s; out of scope: %s on %s%s",
            self.spider.name,
            counted(int(value(stats.MINED, 0)), "file"),
            f"{int(value(stats.MINED_BYTES, 0)):,}",
            f", {value(IN_PROCESS)} in this process" if value(IN_PROCESS) else "",
            value(stats.MINED_BEFORE, 0),
            counted(int(value(stats.ENDPOINTS, 0)), "endpoint"),
            counted(int(value(stats.SECRETS, 0)), "secret"),
            counted(sum(self.outside.values()), "endpoint"),
            counted(hosts, "host"),
            f" (top: {top})" if top else "",
        )
        if self.pool is not None:
            self.pool.close()
            self.pool = None
