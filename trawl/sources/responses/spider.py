"""``trawl crawl responses``: the archived responses of stored URLs, downloaded once each.

A :class:`~trawl.sources.base.SourceSpider` (the domain, its scope, the waymore
filters and dates are the URL sources' own arguments, read the same way). Its
work, in order:

1. the URLs: those the store (``STORE_URI``) holds for the domain, narrowed
   by ``-a query=`` (the search language, :mod:`trawl.search`), the waymore URL
   filters and ``-a limit=``;
2. per URL, one CDX lookup on ``WAYBACK_BASE_URL`` (the wayback source's
   server) and the captures to keep (:mod:`.captures`: ``-a captures=latest``,
   ``all`` or ``yearly``; ``-a from_date``/``to_date``);
3. one ``response`` batch per URL, its page key the URL, so a resumed run
   (``JOBDIR``) skips the URLs stored before it stopped; the files pipeline
   (:mod:`.pipeline`) downloads what the index lacks and the item pipeline
   stores the index.

With ``-a files=DIR`` or ``-a warc=PATH`` nothing is asked of the archive:
the entries come from the local files (:mod:`.local`).

Two budgets: the replay service's is this source's gate (``default_rate_limit``,
``RATE_LIMITS["responses"]``), and the CDX lookups are also spaced by the
wayback source's budget (``RATE_LIMITS["wayback"]``, 60 a minute), since they
go to the same CDX server as a wayback crawl.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import polars as pl
import scrapy
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import threads
from twisted.python.failure import Failure

from trawl.common.counts import counted
from trawl.common.tally import Tally
from trawl.errors import StoreError, TrawlError, TrawlUsageError
from trawl.mining.work import DEFAULT_EXTRACTOR
from trawl.pipeline.runstore import check_store_can, stored_searcher
from trawl.politeness.ratelimit import source_rate
from trawl.politeness.rates import parse_rate
from trawl.search import And, Node, parse
from trawl.settings_checks import Setting, text, whole
from trawl.sources.arguments import parse_bool, parse_int
from trawl.sources.base import SourceSpider
from trawl.sources.cdx.wayback import WaybackSpider
from trawl.sources.responses import stats
from trawl.sources.responses.captures import MODES, cdx_params, choose, read_captures
from trawl.sources.responses.local import LocalCounts, read_folder, read_warc
from trawl.sources.responses.mining import Miner, check_extractor
from trawl.sources.responses.naming import clean_digest
from trawl.sources.responses.records import ResponseBatch
from trawl.sources.responses.replay import replay_url

PIPELINE = "trawl.pipeline.responsefiles.pipeline.ResponseFilesPipeline"


def check_files_store(settings: Any, name: str, sources: Any) -> None:
    """A local folder, ``file://``, ``s3://``, ``gs://`` or ``ftp://``: what Scrapy's FilesPipeline writes."""
    raw = str(settings.get(name) or "").strip()
    if not raw:
        raise TrawlUsageError(f"{name} must name a folder or an s3://, gs:// or ftp:// location, got {raw!r}")
    scheme = urlsplit(raw).scheme.lower() if "://" in raw else ""
    if scheme not in ("", "file", "s3", "gs", "ftp"):
        raise TrawlUsageError(
            f"{name} {raw!r}: Scrapy's files stores are a folder, file://, s3://, gs:// or ftp://"
        )


class ResponsesSpider(SourceSpider):
    """The Wayback Machine's raw responses for the URLs the store holds of a domain."""

    name = "responses"
    in_crawl_all = False  # it reads what the URL sources stored: run it after them, by name
    extra_arguments = {
        "query": "the search query choosing stored URLs (default: every URL of the domain)",
        "limit": "at most this many URLs (default 0: all)",
        "captures": "latest (default), all (every distinct content) or yearly",
        "files": "index a folder of saved responses instead of asking the archive",
        "warc": "index a WARC file (or a folder of them) instead of asking the archive",
        "mine": "false: store and index the files, do not mine them",
        "secrets": "true: also look for secrets while mining",
    }
    finish_counts = (
        Tally(stats.URLS, "URL", "selected"),
        Tally(stats.FILES, "file", "stored"),
        Tally(stats.NO_MEMENTO, "capture", "without a memento", unless_zero=True),
        Tally(stats.ENDPOINTS, "endpoint", "found"),
    )
    # The replay service's own budget: the Internet Archive's hard limit for mementos is
    # 600 a minute, and its staff ask clients to stay at 80% (edgi-govdata-archiving/wayback).
    default_rate_limit = "480/60s"
    default_concurrency = 4
    default_download_timeout = 60
    base_url_setting = "WAYBACK_BASE_URL"
    default_base_url = WaybackSpider.default_base_url
    settings_declared = {
        "FILES_STORE": Setting(
            "responses",
            check_files_store,
            "where the responses source writes files: a folder, s3://, gs:// or ftp:// (FilesPipeline)",
        ),
        "RESPONSES_MAX_BYTES": Setting(
            100 << 20, whole(1, 1 << 34), "bytes a stored response may have; a larger one is not stored"
        ),
        "RESPONSES_MAX_RUN_BYTES": Setting(
            0, whole(0), "bytes one responses run stores at most (0: no cap); then the run ends partial"
        ),
        "WAYBACK_CDX_PATH": WaybackSpider.settings_declared["WAYBACK_CDX_PATH"],
        "RESPONSES_QUERY": Setting("", text, "the search query choosing URLs when -a query= is not given"),
        "MINING_PROCESSES": Setting(0, whole(0, 256), "processes mining stored files (0: every core)"),
        "MINING_BATCH_FILES": Setting(32, whole(1, 100_000), "files a mining worker gets at a time"),
        "MINING_EXTRACTOR": Setting(
            DEFAULT_EXTRACTOR, check_extractor, "the function that mines one file (extract_file's signature)"
        ),
    }

    query_node: Node
    mode: str = "latest"
    url_limit: int = 0
    files: Path | None = None
    warc: Path | None = None
    mine: bool = True
    secrets: bool = False
    miner: Miner | None = None

    @classmethod
    def update_settings(cls, settings: Any) -> None:
        super().update_settings(settings)
        pipelines = dict(settings.getdict("ITEM_PIPELINES"))
        pipelines.setdefault(PIPELINE, 200)  # before trawl's item pipeline (300): files, then the index
        settings.set("ITEM_PIPELINES", pipelines, priority="spider")

    def configure_kind(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        super().configure_kind(settings, arguments)
        raw_query = str(arguments.get("query") or settings.get("RESPONSES_QUERY") or "").strip()
        self.query_text = raw_query or "*"
        self.query_node = parse(self.query_text)
        self.url_limit = parse_int("limit", arguments.get("limit", 0))
        self.mode = str(arguments.get("captures") or "latest").strip().lower()
        if self.mode not in MODES:
            raise TrawlUsageError(f"-a captures= takes one of {', '.join(MODES)}, got {self.mode!r}")
        self.files = self._local_path(arguments, "files", folder=True)
        self.warc = self._local_path(arguments, "warc", folder=False)
        self.mine = parse_bool("mine", arguments.get("mine", True))
        self.secrets = parse_bool("secrets", arguments.get("secrets", False))
        if self.secrets and not self.mine:
            raise TrawlUsageError("-a secrets=true looks for secrets while mining: not with -a mine=false")
        if not str(settings.get("STORE_URI") or "").strip():
            raise TrawlUsageError("the responses source keeps its index in a store: set STORE_URI")
        self.max_bytes = int(self.setting(settings, "RESPONSES_MAX_BYTES"))
        self.run_cap = int(self.setting(settings, "RESPONSES_MAX_RUN_BYTES"))
        self.cdx_path = str(self.setting(settings, "WAYBACK_CDX_PATH"))

    @staticmethod
    def _local_path(arguments: Mapping[str, Any], name: str, folder: bool) -> Path | None:
        raw = str(arguments.get(name) or "").strip()
        if not raw:
            return None
        path = Path(raw).expanduser()
        if folder and not path.is_dir():
            raise TrawlUsageError(f"-a {name}={raw}: not a folder")
        if not folder and not path.exists():
            raise TrawlUsageError(f"-a {name}={raw}: no such file or folder")
        return path

    def run_inputs(self) -> dict[str, Any]:
        return {
            **super().run_inputs(),
            "query": self.query_text,
            "captures": self.mode,
            "mine": self.mine,
            "secrets": self.secrets,
        }

    # --- the run -----------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[Any]:
        self.log_target()
        self.local_counts = LocalCounts()
        if self.mine and not self.check_only:
            miner = Miner(self, self.secrets)
            self.miner = miner if miner.open() else None
        if self.files is not None or self.warc is not None:
            async for batch in self._local():
                yield batch
            return
        urls = self._select_urls()
        if urls is None:
            return
        self.crawler.stats.set_value(stats.URLS, len(urls))
        self.logger.info(
            "%s: %s of %s in the store match %r",
            self.name,
            counted(len(urls), "URL"),
            self.target.domain,
            self.query_text,
        )
        if self.check_only:
            self.report_estimate(len(urls) * 2)
            return
        spacing = self._cdx_spacing()
        for url in urls:
            key = f"cdx {url}"
            if self.page_done(key) is not None:
                continue
            if self._run_cap_reached() or not self.take_request():
                return
            if spacing and not await self.wait(spacing):
                return
            query = urlencode(cdx_params(url, self.filters))
            yield scrapy.Request(
                f"{self.base_url}/{self.cdx_path.lstrip('/')}?{query}",
                callback=self.parse_captures,
                errback=self.on_request_error,
                meta={"page": key, "stored_url": url, "handle_httpstatus_all": True},
                dont_filter=True,
            )

    def _cdx_spacing(self) -> float:
        """Seconds between two CDX lookups: the wayback source's budget, when gates are on."""
        settings = self.crawler.settings
        if not settings.getbool("RATE_LIMITS_ENABLED"):
            return 0.0
        rate = source_rate(settings, WaybackSpider)
        if not rate:
            return 0.0
        requests, period = parse_rate(rate)
        return period / requests if requests else 0.0

    def _run_cap_reached(self) -> bool:
        return bool(self.run_cap) and int(self.crawler.stats.get_value(stats.BYTES, 0)) >= self.run_cap

    def _select_urls(self) -> list[str] | None:
        """The stored URLs of the domain the query, the filters and the limit leave."""
        settings = self.crawler.settings
        uri = str(settings.get("STORE_URI") or "").strip()
        domain = parse(f'{"domain" if self.target.include_subdomains else "host"}:"{self.target.domain}"')
        node = domain if self.query_text == "*" else And((domain, self.query_node))
        urls: list[str] = []
        try:
            check_store_can(settings, ("responses",))
            with stored_searcher(settings, uri, build_indexes=True) as searcher:
                for record in searcher.records(node):
                    if not self.target.in_scope(record.host) or not self.filters.url_allowed(record.url):
                        continue
                    urls.append(record.url)
                    if self.url_limit and len(urls) >= self.url_limit:
                        break
        except StoreError as exc:
            self.record_error("store", "cannot read the stored URLs: %s", exc)
            return None
        except TrawlError as exc:
            self.record_error("store", "%s", exc)
            return None
        return urls

    def parse_captures(self, response: Response) -> Iterator[Any]:
        url = response.meta["stored_url"]
        key = response.meta["page"]
        if response.status != 200:
            if not self.reject_html(response, f"the CDX lookup of {url}", "CDX lines"):
                self.record_error("http", "HTTP %d for the CDX lookup of %s", response.status, url)
            return
        if self.reject_html(response, f"the CDX lookup of {url}", "CDX lines"):
            return
        found = read_captures(response.body)
        chosen = choose(found, self.mode, self.filters)
        too_big = chosen.filter(pl.col("length").cast(pl.Int64, strict=False).fill_null(0) > self.max_bytes)
        if too_big.height:
            self.crawler.stats.inc_value(stats.TOO_BIG, too_big.height)
            chosen = chosen.filter(
                pl.col("length").cast(pl.Int64, strict=False).fill_null(0) <= self.max_bytes
            )
        self.crawler.stats.inc_value(stats.CAPTURES, chosen.height)
        host = urlsplit(url).hostname
        frame = pl.DataFrame(
            {
                "url": [url] * chosen.height,
                "timestamp": chosen.get_column("timestamp").to_list(),
                "host": [host] * chosen.height,
                "digest": [clean_digest(d) for d in chosen.get_column("digest").to_list()],
                "status": chosen.get_column("status").to_list(),
                "mime": chosen.get_column("mime").to_list(),
                "length": chosen.get_column("length").cast(pl.Int64, strict=False).to_list(),
                "origin": ["wayback"] * chosen.height,
                "replay": [
                    replay_url(self.base_url, t, u) for t, u in chosen.select("timestamp", "url").iter_rows()
                ],
            },
            schema_overrides={"length": pl.Int64},
        )
        yield ResponseBatch(self.name, ResponseBatch.with_transient(frame), page=key, page_rows=found.height)

    async def _local(self) -> AsyncIterator[Any]:
        """Batches from ``-a files=`` and ``-a warc=``, read in a thread a chunk at a time."""
        readers = []
        if self.files is not None:
            readers.append(("files", read_folder(self.files, self.target, self.max_bytes, self.local_counts)))
        if self.warc is not None:
            readers.append(("warc", read_warc(self.warc, self.target, self.max_bytes, self.local_counts)))
        for origin, chunks in readers:
            number = 0
            while True:
                chunk = await maybe_deferred_to_future(threads.deferToThread(next, chunks, None))
                if chunk is None:
                    break
                number += 1
                self.crawler.stats.inc_value(stats.CAPTURES, len(chunk))
                frame = ResponseBatch.with_transient(
                    pl.DataFrame(chunk, schema_overrides={"payload": pl.Binary})
                )
                yield ResponseBatch(self.name, frame, page=f"{origin} {number}", page_rows=len(chunk))
        counts = self.local_counts
        if counts.skipped or counts.too_big:
            self.crawler.stats.set_value(stats.LOCAL_SKIPPED, counts.skipped)
            self.crawler.stats.inc_value(stats.TOO_BIG, counts.too_big)
            self.logger.warning(
                "%s: skipped %s of the local files (%s), %s over RESPONSES_MAX_BYTES",
                self.name,
                counted(counts.skipped, "entry"),
                "; ".join(counts.reasons) or "-",
                counts.too_big,
            )

    def on_request_error(self, failure: Failure) -> None:
        super().on_request_error(failure)

    def closed(self, reason: str) -> None:
        """The summary: what was stored, shared, found missing, and what mining found."""
        if self.miner is not None:
            self.miner.close()
        super().closed(reason)
        value = self.crawler.stats.get_value
        self.logger.info(
            "%s: %s stored (%s bytes, %s downloaded); %s already stored before, %s shared within the run;"
            " %s without a memento (not stored), %s failed, %s too big",
            self.name,
            counted(int(value(stats.FILES, 0)), "file"),
            f"{int(value(stats.BYTES, 0)):,}",
            value(stats.DOWNLOADED, 0),
            value(stats.STORED_BEFORE, 0),
            value(stats.SHARED_IN_RUN, 0),
            value(stats.NO_MEMENTO, 0),
            value(stats.FAILED, 0),
            value(stats.TOO_BIG, 0),
        )
