"""Batch items: what spiders yield and what pipelines pass on.

One item per upstream page keeps Scrapy's per-item overhead (signals, pipeline
calls, logging) to a few thousand calls per million captures. Columns are plain
lists so that pipelines can work on whole batches with set operations and
``executemany`` instead of per-record objects.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(slots=True, repr=False)
class CaptureBatch:
    """Captures of one upstream page, column-wise.

    ``urls`` is mandatory; the other columns are either ``None`` (the source does
    not report that field) or lists aligned with ``urls``.
    """

    source: str
    urls: list[str]
    timestamps: list[str] | None = None
    statuses: list[str] | None = None
    mimes: list[str] | None = None
    digests: list[str] | None = None
    lengths: list[str] | None = None
    #: Identifies the upstream page (e.g. ``"page=3"``) for progress and resume:
    #: stores record it with the batch, in the same transaction.
    page: str = ""
    #: Rows the upstream page held, before any filter (0: an empty page).
    page_rows: int = 0
    #: Host of each URL, filled in by the normalizer (it parses the URL anyway).
    hosts: list[str] | None = None

    COLUMNS = ("urls", "timestamps", "statuses", "mimes", "digests", "lengths", "hosts")

    def __len__(self) -> int:
        return len(self.urls)

    def __repr__(self) -> str:
        # Scrapy logs every item; a repr of 5,000 URLs would swamp the log.
        return f"<CaptureBatch {self.source} {self.page or '-'} rows={len(self.urls)}>"

    def select(self, keep: list[bool]) -> None:
        """Drop, in place, the rows whose ``keep`` flag is false."""
        for name in self.COLUMNS:
            column = getattr(self, name)
            if column is not None:
                setattr(self, name, [value for value, k in zip(column, keep, strict=True) if k])


@dataclass(slots=True)
class UrlRecord:
    """One canonical URL with its provenance: the row view of a :class:`UrlBatch`.

    Set-valued provenance (sources, statuses, mimes) is kept as comma-joined,
    sorted text, the way stores hold it; :meth:`as_dict` splits it.
    """

    url: str
    host: str
    sources: str
    first_seen: str | None
    last_seen: str | None
    captures: int
    statuses: str
    mimes: str
    new: bool

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-ready form used by exporters and the search command."""
        return {
            "url": self.url,
            "host": self.host,
            "sources": _split(self.sources),
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "captures": self.captures,
            "statuses": _split(self.statuses),
            "mimes": _split(self.mimes),
            "new": self.new,
        }


def _split(text: str) -> list[str]:
    return text.split(",") if text else []


@dataclass(slots=True, repr=False)
class UrlBatch:
    """Deduplicated URLs of one capture batch, column-wise, ready for stores and exports.

    ``statuses``, ``mimes`` and ``sources`` hold comma-joined sorted sets as text
    (what stores write). ``sources`` may be ``None``: every URL came from
    ``source`` alone, until a store merges in what it knew.
    """

    source: str
    urls: list[str]
    hosts: list[str]
    first_seen: list[str | None]
    last_seen: list[str | None]
    captures: list[int]
    statuses: list[str]
    mimes: list[str]
    sources: list[str] | None = None
    #: Set by stores: True where the store did not know the URL before.
    new: list[bool] | None = None
    page: str = ""
    page_rows: int = 0
    #: Canonical URLs already passed on earlier in this run: stored (their
    #: provenance still merges) but not exported a second time.
    repeats: set[str] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.urls)

    def __repr__(self) -> str:
        return f"<UrlBatch {self.source} {self.page or '-'} urls={len(self.urls)}>"

    def records(self, first_in_run: bool = False) -> Iterator[UrlRecord]:
        """Row view; ``first_in_run`` skips :attr:`repeats` (what exports write)."""
        size = len(self.urls)
        sources = self.sources or [self.source] * size
        new = self.new or [False] * size
        repeats = self.repeats if first_in_run else ()
        for row in zip(
            self.urls,
            self.hosts,
            sources,
            self.first_seen,
            self.last_seen,
            self.captures,
            self.statuses,
            self.mimes,
            new,
            strict=True,
        ):
            if row[0] not in repeats:
                yield UrlRecord(*row)

    def first_in_run_urls(self) -> list[str]:
        if not self.repeats:
            return self.urls
        repeats = self.repeats
        return [u for u in self.urls if u not in repeats]
