"""``-a mode=api``: crates.io's own API, one request a second, as its crawler policy asks.

crates.io (https://crates.io/data-access) allows at most **one request per
second** and wants a ``User-Agent`` that names the application and a contact.
The source's default budget is ``1/1s`` with one request at a time
(``CratesSpider.default_rate_limit``), enforced by trawl's gate like every
source's budget; the User-Agent comes from ``CRATES_USER_AGENT``
(:mod:`.policy`).

The crawl is strictly serial, so it is written as one coroutine
(:meth:`ApiCrawl.run`, driven by the spider's ``start``) that awaits each
answer (``engine.download_async``: the downloader middlewares, so the gate,
the proxies, the retries and ``Retry-After`` apply as to any request): first
the listing (``/api/v1/crates``, 100 a page, following ``meta.next_page``,
which is seek pagination: crates.io refuses page numbers past 200), or the
names given with ``-a crates=``; then per crate ``/api/v1/crates/{name}``,
``/downloads`` and, with ``-a dependencies=true``, each version's
``/{num}/dependencies``. A crate's batches are handed on only once all its
answers are in, the crate's own row last: a crate is stored whole or not at
all, and a stored ``updated_at`` means its versions are stored too (what
``mode=incremental`` relies on).

Resume (``JOBDIR``): each crate's batches carry page keys ``crate=<name>...``
in the store's ledger; a resumed run walks the listing again (one request per
100 crates) and skips the crates whose row it stored before.

What goes wrong is one line each, naming what and where (:mod:`.apifetch`):
403 (no User-Agent, a blocked crawler) and a 429 that outlasts its retries
stop the crawl; a crate that vanished (404) is skipped with a WARNING; an
answer that is not JSON is asked for again, then the crate is skipped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from trawl.common.counts import counted
from trawl.records.batches import Batch
from trawl.sources.crates.apifetch import Fetcher, Skip, Stop
from trawl.sources.crates.apirecords import (
    AnswerError,
    crate_frames,
    dependency_frame,
    download_frame,
    listed_crates,
)
from trawl.sources.crates.records import CrateBatch, DependencyBatch, VersionBatch, VersionDownloadBatch

if TYPE_CHECKING:
    from trawl.sources.crates.host import CratesHost

#: Crates per listing page: the most crates.io serves (``cannot request more than 100 items``).
PER_PAGE = 100


@dataclass
class ApiOptions:
    """What ``-a`` and the settings say for the API modes, checked (:func:`.policy.read_api_options`)."""

    mode: str
    user_agent: str
    crates: list[str] = field(default_factory=list)
    q: str = ""
    limit: int = 0
    dependencies: bool = False
    #: Crates per listing page (``CRATES_API_PAGE_SIZE``).
    per_page: int = PER_PAGE


@dataclass
class Known:
    """What the store holds of each crate: its id and its ``updated_at``."""

    ids: dict[str, int] = field(default_factory=dict)
    updated: dict[str, str] = field(default_factory=dict)


def parse_time(stamp: str | None) -> datetime | None:
    """``2017-01-06T14:23:11Z`` / ``...:11.123456Z`` (either side may have fractions) as a time."""
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None


class ApiCrawl:
    """One run of the API modes for one spider: the listing, then each crate whole."""

    def __init__(self, spider: CratesHost, options: ApiOptions, known: Known) -> None:
        self.spider = spider
        self.options = options
        self.known = known
        self.fetch = Fetcher(spider, options.user_agent)
        self.stored = 0
        self.skipped = 0

    @property
    def base(self) -> str:
        return self.spider.base_url

    async def run(self) -> AsyncIterator[Batch]:
        try:
            names = self.options.crates or await self.listing()
        except Stop:
            return
        if not self.options.crates:
            self.spider.logger.info(
                "%s: %s to fetch (%s)", self.spider.name, counted(len(names), "crate"), self.what_listed()
            )
        for name in names:
            if self.spider.page_done(f"crate={name}") is not None:
                continue  # stored by this run before it was stopped (resume)
            try:
                batches = await self.crate(name)
            except Skip:
                self.skipped += 1
                continue
            except Stop:
                return
            self.stored += 1
            for batch in batches:
                yield batch
        self.spider.logger.info(
            "%s: %s fetched from the API, %s skipped",
            self.spider.name,
            counted(self.stored, "crate"),
            self.skipped,
        )

    def what_listed(self) -> str:
        if self.options.mode == "incremental":
            return "updated since the store's newest"
        return f"q={self.options.q!r}" if self.options.q else "every crate"

    # --- the listing -------------------------------------------------------------------------

    def first_listing_url(self) -> str:
        limit = self.options.limit
        size = self.options.per_page
        params: dict[str, str] = {"per_page": str(min(size, limit) if limit else size)}
        if self.options.mode == "incremental":
            params["sort"] = "recent-updates"
        elif not self.options.q:
            params["sort"] = "alphabetical"
        if self.options.q:
            params["q"] = self.options.q
        return f"{self.base}/api/v1/crates?{urlencode(params, quote_via=quote)}"

    async def listing(self) -> list[str]:
        """Every crate's name the listing gives (up to ``limit``); in ``incremental``, those until the
        first one the store holds as updated as the listing says."""
        url: str | None = self.first_listing_url()
        names: list[str] = []
        page = 0
        while url:
            page += 1
            data = await self.fetch.json(url, f"the crate listing (page {page})", listing=True)
            try:
                listed, next_page = listed_crates(data)
            except AnswerError as exc:
                self.spider.record_error("malformed", "%s (%s)", exc, self.spider.describe_url(url))
                raise Stop from None
            for name, updated_at in listed:
                if self.options.mode == "incremental" and self.is_known(name, updated_at):
                    self.spider.logger.info(
                        "%s: the store has %s as of %s: the crates after it are known",
                        self.spider.name,
                        name,
                        updated_at,
                    )
                    return names
                names.append(name)
                if self.options.limit and len(names) >= self.options.limit:
                    return names
            url = self.next_url(next_page) if listed else None
        return names

    def next_url(self, next_page: str | None) -> str | None:
        """``meta.next_page`` is a query string (``?per_page=100&seek=...``) for the same path."""
        if not next_page:
            return None
        return f"{self.base}/api/v1/crates{next_page if next_page.startswith('?') else '?' + next_page}"

    def is_known(self, name: str, updated_at: str | None) -> bool:
        stored, listed = parse_time(self.known.updated.get(name)), parse_time(updated_at)
        return stored is not None and listed is not None and stored >= listed

    # --- one crate ---------------------------------------------------------------------------

    async def crate(self, name: str) -> list[Batch]:
        """The crate's batches, its own row last; :class:`Skip` / :class:`Stop` (said already) else."""
        mode, ids, source = self.options.mode, self.known.ids, self.spider.name
        path = f"{self.base}/api/v1/crates/{quote(name, safe='')}"
        details = await self.fetch.json(path, f"crate {name}")
        downloads = await self.fetch.json(f"{path}/downloads", f"the downloads of crate {name}")
        try:
            crate, versions = crate_frames(details, ids, mode)
            daily = download_frame(downloads, name, mode)
        except AnswerError as exc:
            self.spider.record_error("malformed", "%s (%s): skipped", exc, self.spider.describe_url(path))
            raise Skip from None
        batches: list[Batch] = [
            VersionBatch(source, versions, f"crate={name}/versions", versions.height),
            VersionDownloadBatch(source, daily, f"crate={name}/downloads", daily.height),
        ]
        if self.options.dependencies:
            batches += await self.dependencies(name, path, versions.get_column("num").to_list(), ids)
        batches.append(CrateBatch(source, crate, f"crate={name}", 1))
        return batches

    async def dependencies(
        self, name: str, path: str, numbers: list[str], ids: Mapping[str, int]
    ) -> list[Batch]:
        batches: list[Batch] = []
        for num in numbers:
            where = f"{name} {num}"
            url = f"{path}/{quote(num, safe='')}/dependencies"
            data = await self.fetch.json(url, f"the dependencies of {where}")
            try:
                frame = dependency_frame(data, ids, where, self.options.mode)
            except AnswerError as exc:
                self.spider.record_error(
                    "malformed", "%s (%s): crate %s skipped", exc, self.spider.describe_url(url), name
                )
                raise Skip from None
            batches.append(
                DependencyBatch(self.spider.name, frame, f"crate={name}/{num}/dependencies", frame.height)
            )
        return batches


def known_crates(frame: Any) -> Known:
    """The store's ``id``, ``name``, ``updated_at`` of every crate, as lookups (names the store holds
    twice, a stand-in and a real id, resolve to the real one: positive ids sort last)."""
    known = Known()
    for crate_id, name, updated_at in frame.sort("id").iter_rows():
        known.ids[name] = crate_id
        if updated_at:
            known.updated[name] = updated_at
    return known
