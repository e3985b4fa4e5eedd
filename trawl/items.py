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
    #: Identifies the upstream page (e.g. ``"page=3"``) for progress and resume.
    page: str = ""

    COLUMNS = ("urls", "timestamps", "statuses", "mimes", "digests", "lengths")

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
    """One canonical URL with the provenance gathered for it.

    ``first_seen``/``last_seen`` are capture timestamps as the source reports them
    (14-digit ``YYYYMMDDhhmmss`` strings sort correctly as text).
    """

    url: str
    host: str
    sources: set[str] = field(default_factory=set)
    first_seen: str | None = None
    last_seen: str | None = None
    captures: int = 0
    statuses: set[str] = field(default_factory=set)
    mimes: set[str] = field(default_factory=set)
    #: True when the store did not know this URL before this run wrote it.
    new: bool = False

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-ready form used by exporters and the search command."""
        return {
            "url": self.url,
            "host": self.host,
            "sources": sorted(self.sources),
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "captures": self.captures,
            "statuses": sorted(self.statuses),
            "mimes": sorted(self.mimes),
            "new": self.new,
        }


@dataclass(slots=True, repr=False)
class UrlBatch:
    """Deduplicated URLs of one capture batch, ready for stores and exports."""

    source: str
    records: list[UrlRecord]
    page: str = ""
    #: Canonical URLs already passed on earlier in this run: stored (their
    #: provenance still merges) but not exported a second time.
    repeats: set[str] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return f"<UrlBatch {self.source} {self.page or '-'} urls={len(self.records)}>"

    def __iter__(self) -> Iterator[UrlRecord]:
        return iter(self.records)

    def first_in_run(self) -> list[UrlRecord]:
        """Records not passed on earlier in this run: what exports write."""
        if not self.repeats:
            return self.records
        return [r for r in self.records if r.url not in self.repeats]
