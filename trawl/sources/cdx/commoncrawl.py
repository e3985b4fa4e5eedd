"""Common Crawl's URL index (index.commoncrawl.org): one CDX endpoint per crawl.

Common Crawl publishes one pywb CDX index per crawl (``CC-MAIN-2025-33``...),
listed newest first in ``collinfo.json``. This spider reads that list (from a
small on-disk cache when it is fresh), picks the crawls to query (the newest
``cc_indexes``, or those whose crawl dates meet ``from_date``/``to_date``) and
hands one endpoint per crawl to :class:`~trawl.sources.cdx.base.CdxSpider`,
which counts, pages and walks each of them exactly as it does the Wayback
Machine's (pywb dialect: NDJSON, ``~`` regex filters, a 404 "No Captures
found" that is an empty result, a 400 "Page N invalid" past the last page).

Endpoints are built from ``COMMONCRAWL_BASE_URL`` and the crawl id, not from
the absolute ``cdx-api`` URL in ``collinfo.json``: a mirror or a test server
lists the real host there, and would otherwise send the crawl to the Internet.
"""

from __future__ import annotations

import hashlib
import os
import re
import site
import sysconfig
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import scrapy
from scrapy.http import Response

import trawl
from trawl.common import statkeys
from trawl.settings_checks import Setting, seconds, text
from trawl.sources.arguments import parse_int
from trawl.sources.cdx.base import CdxSpider
from trawl.sources.cdx.parse import Dialect

COLLINFO = "collinfo.json"
NOT_JSON = "it is not valid JSON"
#: How CDX servers pad a short date: ``from`` down, ``to`` up (pywb's PAD_14_*).
PAD_DOWN = "10000101000000"
PAD_UP = "29991231235959"
#: A crawl id is used as a path segment: nothing that could climb out of it.
_CRAWL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: Bump when the cache file's layout changes: older files are then refetched.
CACHE_VERSION = 1


class CollinfoError(ValueError):
    """``collinfo.json`` could not be read as a list of crawl indexes."""


@dataclass(frozen=True, slots=True)
class CrawlIndex:
    """One crawl's index, as ``collinfo.json`` lists it."""

    id: str
    name: str
    #: First and last capture time of the crawl, 14 digits ("" when not given).
    start: str
    end: str

    def overlaps(self, from_date: str | None, to_date: str | None) -> bool:
        """Could the crawl hold captures between the dates (inclusive, prefix-wise, as CDX)?

        A crawl without dates is kept: querying it costs a request, skipping
        it could lose URLs (captures outside the dates are dropped anyway).
        """
        if from_date and self.end and self.end[: len(from_date)] < from_date:
            return False
        if to_date and self.start and self.start[: len(to_date)] > to_date:
            return False
        return True


def _timestamp(value: object, pad: str) -> str:
    """``2025-08-02T22:09:07`` -> ``20250802220907``; short dates padded as CDX pads them."""
    digits = re.sub(r"\D", "", str(value or ""))[:14]
    if len(digits) < 4:
        return ""
    return digits + pad[len(digits) :]


def indexes_from_collinfo(data: object) -> list[CrawlIndex]:
    """The decoded ``collinfo.json`` -> crawl indexes; entries without a usable id are skipped."""
    if not isinstance(data, list):
        raise CollinfoError("it is not a JSON list of crawl indexes")
    indexes = []
    for entry in data:
        if not isinstance(entry, dict):
            continue
        ident = entry.get("id")
        if not isinstance(ident, str) or not _CRAWL_ID.fullmatch(ident):
            continue
        indexes.append(
            CrawlIndex(
                ident,
                str(entry.get("name") or ""),
                _timestamp(entry.get("from"), PAD_DOWN),
                _timestamp(entry.get("to"), PAD_UP),
            )
        )
    if not indexes:
        raise CollinfoError("it lists no crawl index with an id")
    return indexes


def decode_collinfo(body: bytes) -> list[Any]:
    """Bytes of ``collinfo.json`` -> the decoded list (checked by :func:`indexes_from_collinfo`)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise CollinfoError(NOT_JSON) from None
    indexes_from_collinfo(data)
    return data


def select_indexes(
    indexes: Sequence[CrawlIndex], count: int, from_date: str | None, to_date: str | None
) -> list[CrawlIndex]:
    """The newest ``count`` crawls (``0``: all) among those that meet the dates.

    ``collinfo.json`` is newest first; sorting by crawl start again (stable)
    keeps that order and does not depend on it.
    """
    newest_first = sorted(indexes, key=lambda index: index.start, reverse=True)
    chosen = [index for index in newest_first if index.overlaps(from_date, to_date)]
    return chosen if count == 0 else chosen[:count]


# --- the collinfo.json cache -----------------------------------------------------------------


def collinfo_cache_file(cache_dir: Path, base_url: str) -> Path:
    """One file per base URL: a mirror or a test server never reads the real list, nor the reverse."""
    parts = urlsplit(base_url)
    readable = re.sub(r"[^A-Za-z0-9.-]+", "_", parts.netloc + parts.path).strip("_")[:60]
    digest = hashlib.sha256(base_url.encode("utf-8")).hexdigest()[:16]
    return cache_dir / f"commoncrawl-collinfo-{readable}-{digest}.json"


def install_dirs() -> list[Path]:
    """Where Python packages live: a cache written there is lost on upgrade, or not writable.

    (waymore keeps its state next to its code, in site-packages; trawl never does.)
    """
    dirs = {sysconfig.get_paths()[name] for name in ("purelib", "platlib")}
    dirs.update(site.getsitepackages())
    dirs.add(site.getusersitepackages())
    dirs.add(str(Path(trawl.__file__).parent))  # the package itself, also when installed editable
    return [Path(d).resolve() for d in dirs if d]


def inside_install_dirs(path: Path) -> bool:
    resolved = path.resolve()
    return any(resolved == d or resolved.is_relative_to(d) for d in install_dirs())


def read_collinfo_cache(path: Path, base_url: str, ttl: float, now: float) -> tuple[list[Any] | None, str]:
    """The cached ``collinfo.json`` if fresh, else ``None``; and why, for the log.

    Anything unexpected in the file (cut short, edited, another layout, another
    base URL) makes it a miss: the list is fetched again and the file rewritten.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, "no cached copy"
    except OSError as exc:
        return None, f"cannot read the cached copy ({exc.strerror or exc})"
    try:
        cached = orjson.loads(raw)
        if not isinstance(cached, dict) or cached.get("version") != CACHE_VERSION:
            raise CollinfoError("unknown layout")
        if cached.get("base_url") != base_url:
            raise CollinfoError("another base URL")
        fetched = cached.get("fetched_at")
        if not isinstance(fetched, (int, float)) or isinstance(fetched, bool):
            raise CollinfoError("no fetch time")
        data = cached.get("collinfo")
        indexes_from_collinfo(data)
    except (orjson.JSONDecodeError, CollinfoError):
        return None, "the cached copy is unreadable; ignoring it"
    age = now - fetched
    if not 0 <= age < ttl:
        return None, f"the cached copy is {_age(age)} old (COMMONCRAWL_COLLINFO_TTL={ttl:g}s)"
    return data, f"cached copy, {_age(age)} old"


def write_collinfo_cache(path: Path, base_url: str, data: list[Any], now: float) -> None:
    """Atomically: a crash or a concurrent run never leaves half a file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"version": CACHE_VERSION, "base_url": base_url, "fetched_at": now, "collinfo": data}
    fd, tmp = tempfile.mkstemp(prefix=".collinfo-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _age(seconds: float) -> str:
    if abs(seconds) < 120:
        return f"{seconds:.0f} s"
    if abs(seconds) < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# --- the spider ----------------------------------------------------------------------------


class CommonCrawlSpider(CdxSpider):
    """Every URL Common Crawl's indexes hold for a domain (and its subdomains)."""

    name = "commoncrawl"
    default_rate_limit = "1/1s"
    # Common Crawl's index server is shared and slow; its staff ask clients to
    # slow down (it answers 503 when overloaded). SOURCE_CONCURRENCY overrides this.
    default_concurrency = 2
    # A CDX page may take a minute to come.
    default_download_timeout = 120
    # A page of Common Crawl's index is 5 blocks of 3,000 NDJSON lines of up to ~700 bytes:
    # about 10 MB; 32 MiB is three times that.
    default_download_maxsize = 32 << 20
    default_download_warnsize = 16 << 20
    # Spreadable: its page requests carry their crawl index's endpoint in their meta
    # (CdxSpider.endpoint_of), so any worker's spider answers them, whoever read collinfo.json.
    spreadable = True
    base_url_setting = "COMMONCRAWL_BASE_URL"
    default_base_url = "https://index.commoncrawl.org"
    extra_arguments = {"cc_indexes": "the newest N crawl indexes to query (default 1; 0: all)"}
    settings_declared = {
        "COMMONCRAWL_COLLINFO_TTL": Setting(
            86400,
            seconds(0, maximum=30 * 86400),
            "seconds collinfo.json stays cached, at most 30 days: a crawl is published about monthly, "
            "and an older list misses it",
        ),
        "TRAWL_CACHE_DIR": Setting(
            "~/.cache/trawl", text, "where small upstream metadata (collinfo.json) is cached; empty: nowhere"
        ),
    }

    #: ``-a cc_indexes=N``; ``None``: not given (1, or every crawl in the dates).
    cc_indexes: int | None
    cache_file: Path | None
    #: Why a TRAWL_CACHE_DIR that was set is not used.
    cache_refused: str | None
    collinfo_ttl: float

    def configure(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        super().configure(settings, arguments)
        raw = arguments.get("cc_indexes")
        self.cc_indexes = None if raw is None or str(raw).strip() == "" else parse_int("cc_indexes", raw)
        self.collinfo_ttl = float(self.setting(settings, "COMMONCRAWL_COLLINFO_TTL"))
        self.cache_file = None
        self.cache_refused = None
        cache_dir = str(self.setting(settings, "TRAWL_CACHE_DIR") or "").strip()
        if not cache_dir:
            return  # caching switched off
        directory = Path(os.path.expanduser(cache_dir))
        if inside_install_dirs(directory):
            self.cache_refused = f"TRAWL_CACHE_DIR {directory} is inside Python's package directories"
            return
        self.cache_file = collinfo_cache_file(directory, self.base_url)

    @property
    def collinfo_url(self) -> str:
        return f"{self.base_url}/{COLLINFO}"

    @property
    def index_count(self) -> int:
        """``cc_indexes`` as given; without it 1, or every crawl when dates choose them."""
        if self.cc_indexes is not None:
            return self.cc_indexes
        return 0 if (self.filters.from_date or self.filters.to_date) else 1

    async def start(self) -> AsyncIterator[Any]:
        self.log_target()
        if self.should_skip():
            return
        cached = self._read_cache()
        if cached is not None:
            for request in self.query_indexes(indexes_from_collinfo(cached)):
                yield request
            return
        yield scrapy.Request(
            self.collinfo_url,
            callback=self.parse_collinfo,
            errback=self.on_request_error,
            # parse_collinfo reports a request that ran out of retries, in one ERROR line.
            meta={"handle_httpstatus_all": True},
            dont_filter=True,
        )

    # --- collinfo.json ---------------------------------------------------------------------

    def _read_cache(self) -> list[Any] | None:
        stats = self.crawler.stats
        if self.cache_file is None:
            if self.cache_refused:
                self.logger.warning("%s: not caching %s: %s", self.name, COLLINFO, self.cache_refused)
            return None
        data, why = read_collinfo_cache(self.cache_file, self.base_url, self.collinfo_ttl, time.time())
        if data is None:
            self.logger.info("%s: fetching %s: %s", self.name, COLLINFO, why)
            return None
        self.logger.info("%s: %s from %s (%s)", self.name, COLLINFO, self.cache_file, why)
        stats.set_value(statkeys.COMMONCRAWL_COLLINFO_CACHED, True)
        return data

    def _write_cache(self, data: list[Any]) -> None:
        if self.cache_file is None:
            return
        try:
            write_collinfo_cache(self.cache_file, self.base_url, data, time.time())
        except OSError as exc:
            self.logger.warning(
                "%s: cannot cache %s in %s: %s", self.name, COLLINFO, self.cache_file.parent, exc
            )

    def parse_collinfo(self, response: Response) -> Iterator[Any]:
        """The list of crawls: any failure here is the whole run's, in one line."""
        where = self.describe_url(response.url)
        if response.status != 200:
            self.record_error("http", "HTTP %d for the list of crawl indexes (%s)", response.status, where)
            return
        if self.reject_html(response, where, "the list of crawl indexes"):
            return
        try:
            data = decode_collinfo(response.body)
        except CollinfoError as exc:
            if str(exc) == NOT_JSON:  # a transfer gone wrong, most often: asked for again
                retry = self.retry_bad_body(
                    response, "%s is not a usable list of crawl indexes: %s", where, exc
                )
                if retry is not None:
                    yield retry
                return
            self.record_error("malformed", "%s is not a usable list of crawl indexes: %s", where, exc)
            return
        self._write_cache(data)
        yield from self.query_indexes(indexes_from_collinfo(data))

    # --- the indexes -----------------------------------------------------------------------

    def query_indexes(self, indexes: list[CrawlIndex]) -> Iterator[scrapy.Request]:
        """One endpoint and one page-count request per chosen crawl."""
        dates = (self.filters.from_date, self.filters.to_date)
        chosen = select_indexes(indexes, self.index_count, *dates)
        self.crawler.stats.set_value(statkeys.COMMONCRAWL_INDEXES, len(chosen))
        if not chosen:
            self.logger.warning(
                "%s: no crawl index has captures between %s and %s: nothing to query",
                self.name,
                dates[0] or "the first crawl",
                dates[1] or "the last crawl",
            )
            return
        ids = [index.id for index in chosen]
        shown = ", ".join(ids[:6]) + (f", ... ({len(ids) - 6} more)" if len(ids) > 6 else "")
        self.logger.info(
            "%s: querying %d of %d crawl index(es): %s", self.name, len(chosen), len(indexes), shown
        )
        for index in chosen:
            number = self.add_endpoint(f"{self.base_url}/{index.id}-index", index.id, Dialect.PYWB, True)
            self.endpoints[number].named = len(chosen) > 1  # every worker's spider names its pages alike
            yield self.count_request(number)

    def where(self, response: Response) -> str:
        """Always name the crawl: "HTTP 504 for CDX page 3" alone does not say which index."""
        return f" ({self.endpoints[self.endpoint_of(response)].label})"
