"""``-a history=DAYS``: version downloads older than the db-dump's 90 days, from the per-day archive.

The dump and the API give the last 90 days of each version's downloads; a
trend over a year needs the days before. crates.io keeps them as one CSV a
day (:mod:`.archive`) under ``CRATES_ARCHIVE_BASE_URL``. After the run's mode
(dump, api or incremental) is done, this fetches the ``DAYS`` days before the
90 the dump holds (the 91st day before today, UTC, and the ``DAYS - 1`` before
it), oldest first, one request a day through trawl's gate (the source's
budget, one a second), and hands each day on as
:class:`~.archive.VersionDownloadArchiveBatch` batches of ``CRATES_BATCH_ROWS``
rows through the same pipeline into the store (and to Parquet when
``CRATES_PARQUET_DIR`` is set), then the day's
:class:`~.archive.ArchiveDayBatch` row.

A day every enabled layer holds already (the store's day rows, the Parquet
dataset's day files) is not fetched again: a rerun, or a longer ``DAYS``
later, fetches only the days missing. With neither layer, every day is fetched.

What goes wrong is one line naming the day and where: a day the archive does
not have (404) is a WARNING and skipped (a rerun asks again); a file cut short
or malformed (:class:`~.archive.ArchiveError`) is an ERROR and none of that day
is written; 403, a 429 past its retries, another status or a failed
connection end the backfill (the next days would fail alike).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
import scrapy
from scrapy.http import Response
from scrapy.utils.datatypes import SequenceExclude
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.python.failure import Failure

from trawl.common import statkeys
from trawl.common.counts import counted
from trawl.common.stopping import is_stopping
from trawl.errors import TrawlUsageError
from trawl.records.batches import Batch
from trawl.settings_checks import Setting, http_url
from trawl.sources.arguments import parse_int
from trawl.sources.crates.apifetch import error_detail
from trawl.sources.crates.archive import (
    ArchiveDayBatch,
    ArchiveError,
    VersionDownloadArchiveBatch,
    parquet_days,
    parse_day,
    write_parquet,
)
from trawl.sources.crates.parquet import ParquetError
from trawl.stores.contract import KindReadingStore

if TYPE_CHECKING:
    from trawl.sources.crates.host import CratesHost

DEFAULT_ARCHIVE_BASE_URL = "https://static.crates.io/archive/version-downloads"
#: The days of version downloads the db-dump (and the API) hold: the archive has the days before.
DUMP_DAYS = 90
#: The most days ``-a history=`` takes: crates.io started in 2014.
MAX_DAYS = 20 * 366

SETTINGS: dict[str, Setting] = {
    "CRATES_ARCHIVE_BASE_URL": Setting(
        DEFAULT_ARCHIVE_BASE_URL,
        http_url(),
        "where -a history= of the crates source fetches the per-day version-downloads archive"
        " (<base>/YYYY-MM-DD.csv)",
    ),
}


def read_history_days(arguments: Mapping[str, Any]) -> int:
    """``-a history=DAYS`` (0: not asked for), checked."""
    given = arguments.get("history")
    if given in (None, ""):
        return 0
    days = parse_int("history", given, minimum=1)
    if days > MAX_DAYS:
        raise TrawlUsageError(
            f"-a history= takes at most {MAX_DAYS} days (crates.io began in 2014), got {days}"
        )
    return days


def window(days: int, today: date | None = None) -> list[str]:
    """The ``days`` days before the dump's 90, oldest first (ISO dates)."""
    today = today or datetime.now(UTC).date()
    newest = today - timedelta(days=DUMP_DAYS + 1)
    return [(newest - timedelta(days=n)).isoformat() for n in range(days - 1, -1, -1)]


class _End(Exception):  # noqa: N818 - a decision, said already
    """The backfill cannot go on (said already)."""


class HistoryBackfill:
    """One run's backfill for one spider (see the module docstring)."""

    def __init__(self, spider: CratesHost, days: int, base_url: str, user_agent: str) -> None:
        self.spider = spider
        self.days = days
        self.base_url = base_url.rstrip("/")
        self.headers = {"User-Agent": user_agent} if user_agent else {}
        self.stored = 0
        self.rows = 0

    @property
    def parquet_dir(self) -> Path | None:
        return self.spider.parquet_dir

    def held(self) -> set[str]:
        """The days every enabled layer holds whole (none: no layer)."""
        layers: list[set[str]] = []
        store = getattr(getattr(self.spider, "run_context", None), "store", None)
        if isinstance(store, KindReadingStore):
            layers.append(set(store.read_kind(ArchiveDayBatch, ["date"]).get_column("date").to_list()))
        elif store is not None:
            layers.append(set())  # a store that cannot say what it holds: fetch
        if self.parquet_dir is not None:
            layers.append(parquet_days(self.parquet_dir))
        return set.intersection(*layers) if layers else set()

    async def run(self) -> AsyncIterator[Batch]:
        spider = self.spider
        days = window(self.days)
        held = self.held()
        todo = [d for d in days if d not in held]
        spider.logger.info(
            "%s: history: %s from %s to %s, %s held already, %s to fetch from %s",
            spider.name, counted(len(days), "day"), days[0], days[-1], len(days) - len(todo), len(todo),
            spider.describe_url(self.base_url),
        )  # fmt: skip
        try:
            for day in todo:
                if is_stopping(spider.crawler):
                    return
                async for batch in self.day(day):
                    yield batch
        except _End:
            pass
        spider.logger.info(
            "%s: history: %s stored (%s)", spider.name, counted(self.stored, "day"), counted(self.rows, "row")
        )

    async def day(self, day: str) -> AsyncIterator[Batch]:
        """The day's batches, then its ledger row; nothing when it is missing or malformed (said)."""
        spider, url = self.spider, f"{self.base_url}/{day}.csv"
        body = await self.fetch(day, url)
        if body is None:
            return
        try:
            frame = parse_day(body, day)
        except ArchiveError as exc:
            spider.record_error(
                "malformed",
                "history: the archive of %s (%s): %s; not stored",
                day,
                spider.describe_url(url),
                exc,
            )
            return
        if self.parquet_dir is not None:
            try:
                await asyncio.to_thread(write_parquet, self.parquet_dir, day, frame)
            except ParquetError as exc:  # a full disk: the next day would fail the same way
                spider.record_error("parquet", "history: %s", exc)
                raise _End from None
        size = max(1, spider.batch_rows)
        for number, chunk in enumerate(frame.iter_slices(size)):
            if not await spider._store_caught_up():
                raise _End
            spider.items_pending += 1
            yield VersionDownloadArchiveBatch(
                spider.name, chunk, page=f"history/{day}#{number}", page_rows=chunk.height
            )
        row = {"date": day, "rows": frame.height, "downloads": int(frame.get_column("downloads").sum())}
        spider.items_pending += 1
        yield ArchiveDayBatch(
            spider.name,
            pl.DataFrame([row], schema=ArchiveDayBatch.SCHEMA),
            page=f"history/{day}",
            page_rows=1,
        )
        self.stored += 1
        self.rows += frame.height

    async def fetch(self, day: str, url: str) -> bytes | None:
        """The day's body; None when the archive has no such day (said); :class:`_End` (said) when
        nothing more can be fetched."""
        spider = self.spider
        if not spider.take_request():
            raise _End
        what = f"history: the archive of {day}"
        # Every status comes back here but a redirect, which Scrapy's middleware follows.
        meta = {"handle_httpstatus_list": SequenceExclude(range(300, 400)), "page": what}
        request = scrapy.Request(url, headers=self.headers, meta=meta, dont_filter=True)
        try:
            response: Response = await maybe_deferred_to_future(
                deferred_from_coro(spider.crawler.engine.download_async(request))
            )
        except Exception as exc:  # noqa: BLE001 - said in one line by the errback every source uses
            failure = Failure(exc)
            failure.request = request  # type: ignore[attr-defined]
            spider.on_request_error(failure)
            raise _End from None
        status, where = response.status, spider.describe_url(url)
        if status == 200:
            spider.crawler.stats.inc_value(statkeys.PAGES)
            return response.body
        detail = error_detail(response.body)
        said = f": {detail}" if detail else ""
        if status == 404:
            spider.logger.warning(
                "%s: %s: not in the archive (HTTP 404 from %s); skipped", spider.name, what, where
            )
            return None
        if status == 403:
            spider.record_blocked(f"{what}: refused (HTTP 403 from {where}){said}")
        elif status == 429:
            spider.record_error("rate_limited", "%s: rate limited (HTTP 429 from %s)%s", what, where, said)
        else:
            spider.record_error("http", "%s: HTTP %d from %s%s", what, status, where, said)
        raise _End
