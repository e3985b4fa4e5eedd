"""Batch items: what spiders yield and what pipelines pass on.

One item per upstream page keeps Scrapy's per-item overhead (signals, pipeline
calls, logging) to a few thousand calls per million captures. A batch's
records are a polars ``DataFrame`` (Arrow memory): parsing, canonical form,
filter masks, dedup and provenance run as whole-column operations in Rust,
which also release the GIL. On 320,000 CDX lines polars parses, normalizes
and aggregates in ~0.6 s where per-row Python took ~4.5 s.

Every batch has a ``kind`` (``"capture"``, ``"url"``; crates.io records
will be another): hooks and stores look at it and leave alone the kinds they
do not handle, so a second record kind travels through the same pipeline. A
kind that declares its natural key (:attr:`Batch.KEY`) and merge rule
(:attr:`Batch.MERGE`) is stored without any store knowing it
(:mod:`trawl.records.kinds`).

Set-valued provenance (sources, statuses, mimes) is a polars ``List[str]``
column, sorted: joining it into text per row cost 0.9 s per 320,000 URLs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import polars as pl

# Imported from here too; its home is trawl.records.record, which a search reads without polars.
from trawl.records.record import UrlRecord

Mask = pl.Series | pl.Expr


class Batch:
    """Records of one upstream page, column-wise, as a polars ``DataFrame``.

    ``page`` names the upstream page (``"page=3"``) for progress and resume:
    stores record it in their page ledger in the same transaction as the rows.
    ``page_rows`` is the number of rows the page held before any filter (0: an
    empty page, which still goes into the ledger).

    A batch may hold several pages of one source (:meth:`coalesce`): ``pages``
    lists them all, and a store claims each in its ledger, in the same
    transaction as the rows.
    """

    __slots__ = ("source", "frame", "page", "page_rows", "_more_pages")

    #: What the records are; hooks and stores dispatch on it.
    kind: ClassVar[str] = ""
    #: Columns and their types; a frame may carry more, never fewer.
    SCHEMA: ClassVar[dict[str, Any]] = {}
    #: The natural key: the columns that name one record. A store keeps one record
    #: per key, in a table it makes from :attr:`SCHEMA`, and merges the others by
    #: :attr:`MERGE` (:mod:`trawl.records.kinds`). Empty: not stored that way
    #: (captures never reach a store; URLs have tables and a rule of their own).
    KEY: ClassVar[tuple[str, ...]] = ()
    #: How a stored record takes in the same record written again, by column:
    #: ``"min"``, ``"max"``, ``"sum"``, ``"first"`` or ``"last"`` (a column not named).
    MERGE: ClassVar[dict[str, str]] = {}
    #: A text column of ISO 8601 times (``"updated_at"``) by which a stored record that is
    #: newer keeps all its values when an older copy is written; empty: every write merges.
    NEWER: ClassVar[str] = ""
    #: Rows of a snapshot being loaded (the crates.io db-dump): a store keeps them apart from the
    #: kind's live records until a batch whose kind lists this one in :attr:`SWITCHES` makes them
    #: the live ones, all at once (:mod:`trawl.records.kinds`). False: merged into the live records.
    STAGED: ClassVar[bool] = False
    #: Kinds (``kind`` names) whose staged records replace the live ones in the transaction that
    #: writes a batch of this kind: the end of a snapshot load.
    SWITCHES: ClassVar[tuple[str, ...]] = ()
    #: Search field name -> :class:`trawl.search.fields.Field` (``column=`` where the column has
    #: another name; ``join=`` the column holding the URL, ``url`` by default): ``trawl search``
    #: names them beside the URL's fields, the SQLite store joins them, others refuse them.
    SEARCH_FIELDS: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.SEARCH_FIELDS:
            from trawl.search.fields import declare_kind_fields

            declare_kind_fields(cls.kind, cls.SEARCH_FIELDS)

    def __init__(self, source: str, frame: pl.DataFrame, page: str = "", page_rows: int = 0) -> None:
        self.source = source
        self.frame = frame
        self.page = page
        self.page_rows = page_rows
        self._more_pages: dict[str, int] = {}

    @property
    def pages(self) -> dict[str, int]:
        """Every upstream page this batch holds (page key -> rows before filters): the ledger entries."""
        first = {self.page: self.page_rows} if self.page else {}
        return {**first, **self._more_pages} if self._more_pages else first

    @classmethod
    def coalesce(cls, batches: Sequence[Batch]) -> Batch:
        """Several small batches of one source and kind as one, their pages all kept.

        Per-batch costs (a transaction, a dozen polars calls, each ~0.3-1 ms on
        a small frame) are paid once: 100-row urlscan pages cost ~16 ms each in
        the SQLite store alone.
        """
        first = batches[0]
        kind = type(first)
        if any(type(b) is not kind or b.source != first.source for b in batches):
            raise ValueError("only batches of one source and kind coalesce")
        combined = kind(first.source, kind.concat([b.frame for b in batches]), first.page, first.page_rows)
        for batch in batches[1:]:
            combined._more_pages.update(batch.pages)
        combined._more_pages.pop(first.page, None)
        return combined

    @classmethod
    def concat(cls, frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
        """The frames of batches of this kind as one (:meth:`coalesce`)."""
        return pl.concat(frames, how="vertical_relaxed")

    @classmethod
    def for_pages_of(cls, batch: Batch, frame: pl.DataFrame) -> Batch:
        """A batch of this kind with ``batch``'s source and pages: how a hook that changes the
        kind (dedup: captures -> URLs) keeps every page in the ledger."""
        made = cls(batch.source, frame, batch.page, batch.page_rows)
        made._more_pages = dict(batch._more_pages)
        return made

    def __len__(self) -> int:
        return self.frame.height

    def __repr__(self) -> str:
        # Scrapy logs every item; a repr of 5,000 URLs would swamp the log.
        more = f" (+{len(self._more_pages)} pages)" if self._more_pages else ""
        return f"<{type(self).__name__} {self.source} {self.page or '-'}{more} rows={self.frame.height}>"

    def select(self, keep: Mask) -> None:
        """Keep, in place, the rows where ``keep`` (a boolean Series or expression) is true."""
        self.frame = self.frame.filter(keep)

    def column(self, name: str) -> list[Any]:
        """One column as a Python list (for plugins that prefer plain loops)."""
        return self.frame.get_column(name).to_list()

    @classmethod
    def empty_frame(cls) -> pl.DataFrame:
        return pl.DataFrame(schema=cls.SCHEMA)


class CaptureBatch(Batch):
    """Captures of one upstream page, as the source reported them.

    Columns: ``url`` (raw, then canonical after the normalizer; null where the
    URL is not a web URL), ``timestamp`` (``YYYYMMDDhhmmss``), ``status``,
    ``mime``, ``digest``, ``length`` (text, null where the source does not
    report them) and ``host``, which the normalizer adds (the parse gives it).
    """

    __slots__ = ()
    kind = "capture"
    SCHEMA = {
        "url": pl.String,
        "timestamp": pl.String,
        "status": pl.String,
        "mime": pl.String,
        "digest": pl.String,
        "length": pl.String,
    }

    @classmethod
    def from_columns(
        cls,
        source: str,
        urls: Sequence[str],
        *,
        timestamps: Sequence[str | None] | None = None,
        statuses: Sequence[str | None] | None = None,
        mimes: Sequence[str | None] | None = None,
        digests: Sequence[str | None] | None = None,
        lengths: Sequence[str | None] | None = None,
        page: str = "",
        page_rows: int = 0,
    ) -> CaptureBatch:
        """A batch from plain lists (columns a source does not report stay null)."""
        columns = {
            "url": urls,
            "timestamp": timestamps,
            "status": statuses,
            "mime": mimes,
            "digest": digests,
            "length": lengths,
        }
        size = len(urls)
        frame = pl.DataFrame(
            [
                pl.Series(name, values if values is not None else [None] * size, dtype=pl.String)
                for name, values in columns.items()
            ]
        )
        return cls(source, frame, page, page_rows)

    @property
    def urls(self) -> list[str | None]:
        return self.column("url")


#: Columns of a :class:`UrlBatch`.
URL_SCHEMA: dict[str, Any] = {
    "url": pl.String,
    "host": pl.String,
    "sources": pl.List(pl.String),
    "first_seen": pl.String,
    "last_seen": pl.String,
    "captures": pl.Int64,
    "statuses": pl.List(pl.String),
    "mimes": pl.List(pl.String),
    "new": pl.Boolean,
    "repeat": pl.Boolean,
}


def merge_urls(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per URL of a URL frame: the union of the sets, the widest span, the captures summed."""

    def union(name: str) -> pl.Expr:
        value = pl.col(name).explode()
        return value.filter(value.is_not_null()).unique().sort().alias(name)

    return (
        frame.group_by("url", maintain_order=True)
        .agg(
            pl.col("host").first(),
            union("sources"),
            pl.col("first_seen").min(),
            pl.col("last_seen").max(),
            pl.col("captures").sum(),
            union("statuses"),
            union("mimes"),
            pl.col("new").any(),
            pl.col("repeat").all(),
        )
        .select(list(URL_SCHEMA))
        .cast(URL_SCHEMA)  # type: ignore[arg-type]
    )


class UrlBatch(Batch):
    """One record per canonical URL, with provenance: what stores write and exports read.

    ``new`` is set by the store: the store did not know the URL before.
    ``repeat`` marks URLs this run passed on already (a URL split over two CDX
    pages): stores still merge their provenance, exports skip them.
    """

    __slots__ = ()
    kind = "url"
    SCHEMA = URL_SCHEMA

    @classmethod
    def from_columns(
        cls,
        source: str,
        urls: Sequence[str],
        hosts: Sequence[str],
        first_seen: Sequence[str | None],
        last_seen: Sequence[str | None],
        captures: Sequence[int],
        statuses: Sequence[Sequence[str] | str],
        mimes: Sequence[Sequence[str] | str],
        sources: Sequence[Sequence[str] | str] | None = None,
        new: Sequence[bool] | None = None,
        page: str = "",
        page_rows: int = 0,
    ) -> UrlBatch:
        """A batch from plain lists; set-valued columns may be lists or comma-joined text."""
        size = len(urls)
        frame = pl.DataFrame(
            {
                "url": list(urls),
                "host": list(hosts),
                "sources": [_as_set(s) for s in sources] if sources is not None else [[source]] * size,
                "first_seen": list(first_seen),
                "last_seen": list(last_seen),
                "captures": list(captures),
                "statuses": [_as_set(s) for s in statuses],
                "mimes": [_as_set(s) for s in mimes],
                "new": list(new) if new is not None else [False] * size,
                "repeat": [False] * size,
            },
            schema=URL_SCHEMA,
        )
        return cls(source, frame, page, page_rows)

    @classmethod
    def concat(cls, frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
        """Each URL once: two small batches may hold one URL (mining finds an endpoint in many
        files), and a store takes a URL once a batch."""
        frame = super().concat(frames)
        return merge_urls(frame) if frame.get_column("url").is_duplicated().any() else frame

    @property
    def urls(self) -> list[str]:
        return self.column("url")

    def first_in_run(self) -> pl.DataFrame:
        """The rows exports write: URLs this run had not passed on before."""
        frame = self.frame
        return frame.filter(~pl.col("repeat")) if frame.get_column("repeat").any() else frame

    def records(self, first_in_run: bool = False) -> Iterator[UrlRecord]:
        """Row view (``first_in_run``: skip repeats, as exports do)."""
        frame = self.first_in_run() if first_in_run else self.frame
        for row in frame.iter_rows():
            yield UrlRecord(*row[:9])


def _as_set(value: Sequence[str] | str | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return sorted({v for v in value.split(",") if v})
    return sorted({v for v in value if v})
