"""The store contract: one Protocol per capability, every store implements them.

A store class is registered by a plugin's ``trawl_register_stores`` hook under
a URI scheme and built as ``StoreClass(uri, context)`` for one crawl.

Writing is the same for every record kind (``batch.kind``): a store lists the
kinds it keeps in ``kinds``, and :data:`KEYED_KINDS` there means "and every kind
that declares its natural key" (:mod:`trawl.records.kinds`: the store makes a
table from the declaration). Reading, searching and reporting are per record
kind: the Protocols below are the URL kind's (``UrlReadableStore``...), under
their historical names too; another kind gets Protocols of its own beside them
when something reads it back (the crates.io exports), not a widened URL one.

* :class:`WritingStore` (required): ``open``, ``write_batch``, ``close``. This
  is all a plain crawl needs.
* :class:`AsyncWritingStore`: ``write_batch_async`` instead of blocking; the
  pipeline awaits it on the reactor (a store that talks to a server).
* :class:`ResumableStore`: a page ledger (``done_pages``) so that a crawl run
  with ``JOBDIR`` skips the pages it stored before it was stopped.
* :class:`KindReadingStore` (optional): ``read_kind``, the stored columns of a
  declared kind, read during a crawl (the crates source's ``mode=incremental``
  reads each crate's ``updated_at`` and id). A source that needs it and meets a
  store without it says so in one line and stops; only stores that keep
  declared kinds (:data:`KEYED_KINDS`) can have it.
* :class:`KindReadableStore` (optional, class-level): ``read_stored_kind``, the
  same columns read with no crawl running (``trawl crates`` questions and the
  crates alerts, after the run): a read-only look, never a run of its own.
* :class:`UrlReadableStore` (class-level, alias ``ReadableStore``): ``read_runs``
  and ``read_domain``, what ``crawl all -o`` and store exports read back.
* :class:`UrlSearchableStore` (class-level, alias ``SearchableStore``):
  ``searcher``, what ``scrapy search`` queries.
* :class:`UrlReportingStore` (class-level, alias ``ReportingStore``): ``list_runs``
  and ``read_first_seen``, what ``trawl report new`` and the end-of-run summary
  read (:mod:`trawl.run.report`).

Capabilities are checked with ``isinstance`` against these runtime-checkable
Protocols when a crawl starts (:func:`missing_capabilities`): a store that
lacks one a run needs is refused in one line naming what it lacks, instead of
the run silently losing resume, ``-o`` or search (a third-party store
with the three writing methods lost all three without a word).

``write_batch`` is called on the reactor thread, one batch at a time; a store
that waits on a server, or writes on a thread of its own (SQLite, see
:mod:`trawl.stores.sqlite.writer`), implements ``AsyncWritingStore``, and the
pipeline awaits its batches in the order it hands them over.

The write rule every store follows is, for URLs, :mod:`trawl.records.provenance`'s
(one record type, one merge rule), and for a declared kind its own declaration's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    import polars as pl

    from trawl.records.batches import Batch, UrlBatch, UrlRecord
    from trawl.search import Node

#: In a store's ``kinds``: every record kind that declares its natural key
#: (``Batch.KEY``), kept in a table the store makes from that declaration.
KEYED_KINDS = "*"


class PartlyStored(Exception):  # noqa: N818 - a signal to the pipeline, not an error
    """A batch of several pages of which this run stored some already: write them one by one."""


@runtime_checkable
class WritingStore(Protocol):
    """A place where records of one or more kinds are written: what every store implements."""

    #: Record kinds (``Batch.kind``) this store keeps; batches of other kinds pass it by.
    #: :data:`KEYED_KINDS` in it: every kind that declares its key, too.
    kinds: ClassVar[frozenset[str]]

    @classmethod
    def check_uri(cls, uri: str) -> None:
        """Raise ``TrawlUsageError`` for a URI this store cannot use (before any crawl starts)."""

    def open(self) -> None:
        """Connect, create what is missing and register the run; raise ``StoreError`` if impossible."""

    def write_batch(self, batch: Batch) -> int:
        """Merge the batch in one transaction, with its pages (``batch.pages``) in the ledger.

        Sets ``new`` (the store did not know the record's key: the URL, or a
        declared kind's ``KEY``) and ``repeat`` (this run wrote it before) on the
        batch's frame, replaces the merged columns (URL provenance, a declared
        kind's ``MERGE``) by the stored values, and returns the number of new records. A page this
        run stored already is not merged again (resume): when every page of
        the batch was, every row comes back ``repeat`` and 0 is returned; when
        only some were, nothing is written and :class:`PartlyStored` is raised
        (the pipeline then writes the pages one by one).
        """

    def close(self, reason: str) -> None:
        """Record the run's end and release resources."""


@runtime_checkable
class AsyncWritingStore(WritingStore, Protocol):
    """A store whose writes are awaited on the reactor instead of blocking it."""

    def write_batch_async(self, batch: Batch) -> Awaitable[int]:
        """:meth:`WritingStore.write_batch`, as an awaitable."""

    def written(self) -> Awaitable[None]:
        """Everything handed to the store so far is written, awaited on the reactor: the pipeline
        awaits it before ``close``, which then blocks on nothing queued (in ``crawl all`` a source
        that finished first held the reactor, and every other source, until the shared writer
        had written their batches too)."""


@runtime_checkable
class ResumableStore(WritingStore, Protocol):
    """A store with a page ledger: what ``JOBDIR`` resume needs."""

    def done_pages(self, source: str) -> dict[str, int]:
        """Pages this run stored before (page key -> upstream rows)."""


@runtime_checkable
class KindReadingStore(WritingStore, Protocol):
    """An open store that reads a declared kind's records back (instance-level, during a crawl)."""

    def read_kind(self, batch_type: type[Batch], columns: Sequence[str]) -> pl.DataFrame:
        """These stored columns of every record of ``batch_type``, typed as its ``SCHEMA`` says.

        An empty frame (with those columns) when the store holds none of that kind.
        Whole: meant for a few columns of a kind of a few hundred thousand rows
        (the crates' names, ids and ``updated_at``), not for a kind's every column.
        """


@runtime_checkable
class KindReadableStore(Protocol):
    """A store that reads a declared kind's records back with no crawl (class-level).

    What ``trawl crates`` questions and alerts read. Class-level, like the URL
    kind's reading side: opening a store registers a run, and a question is not one.
    """

    @classmethod
    def read_stored_kind(
        cls, uri: str, batch_type: type[Batch], columns: Sequence[str], settings: Any
    ) -> pl.DataFrame:
        """:meth:`KindReadingStore.read_kind`'s answer, from the store ``uri`` names (read-only).

        An empty frame (with those columns) when the store holds none of that
        kind, or does not exist yet.
        """


@runtime_checkable
class ExistenceCheckingStore(Protocol):
    """A store that can tell, before reading, that ``uri`` names no store at all (a file store).

    Read commands call it first: a typo in a store path is one error line naming
    the path, not an empty answer. A server store needs none: reaching the
    server says it.
    """

    @classmethod
    def check_exists(cls, uri: str) -> None:
        """Raise :class:`~trawl.errors.StoreError` naming the place when ``uri`` names no store."""


def keeps(store: WritingStore, batch: Batch) -> bool:
    """Does ``store`` keep batches of this kind (named in its ``kinds``, or keyed and welcome)?"""
    kinds = store.kinds
    return batch.kind in kinds or (KEYED_KINDS in kinds and bool(type(batch).KEY))


# --- the URL kind's reading side -------------------------------------------------------------


@runtime_checkable
class UrlReadableStore(Protocol):
    """Reading URL records back (class-level: no crawl needed)."""

    @classmethod
    def read_runs(cls, uri: str, run_ids: list[str], settings: Any) -> Iterator[UrlBatch]:
        """The URLs the given runs wrote or updated, as stored now, in URL order."""

    @classmethod
    def read_domain(cls, uri: str, domain: str, settings: Any) -> Iterator[UrlBatch]:
        """Every URL the store holds for ``domain`` and its subdomains, in URL order."""


class UrlSearcher(Protocol):
    """What ``scrapy search`` queries; URL records come in URL order (byte order)."""

    def __enter__(self) -> UrlSearcher: ...

    def __exit__(self, *exc: object) -> None: ...

    def records(self, node: Node, limit: int | None = None) -> Iterator[UrlRecord]: ...

    def count(self, node: Node) -> int: ...

    def facet(self, node: Node, name: str, size: int) -> list[tuple[str, int]]: ...


@runtime_checkable
class UrlSearchableStore(Protocol):
    """A store ``scrapy search`` can query for URLs (class-level)."""

    @classmethod
    def searcher(cls, uri: str, settings: Any) -> UrlSearcher:
        """Open the read side of the store ``uri`` names."""


@runtime_checkable
class UrlReportingStore(Protocol):
    """Which URLs are new since a run: ``trawl report new`` and the run summary (class-level).

    Both read whole columns: the runs are a small frame the caller selects a
    window from (:func:`trawl.run.report.select_window`, one definition of "the
    last crawl" for every store); the URLs come in frames of a few thousand.
    """

    @classmethod
    def list_runs(cls, uri: str, domain: str, settings: Any) -> pl.DataFrame:
        """The runs recorded for ``domain``, its parent domains and its subdomains.

        A frame of :data:`trawl.records.runs.RUNS_SCHEMA`: a run of ``example.com``
        may have found the URLs of ``sub.example.com``.
        """

    @classmethod
    def read_first_seen(
        cls, uri: str, run_ids: list[str], domain: str, settings: Any, limit: int | None = None
    ) -> Iterator[pl.DataFrame]:
        """URLs of ``domain`` (and subdomains) that one of ``run_ids`` stored first, in URL order.

        Frames of :data:`trawl.records.runs.FIRST_SEEN_SCHEMA`: the provenance as stored
        now, and ``run_id``, the run that stored the URL first. At most ``limit`` rows.
        """


# --- the response kind's reading side --------------------------------------------------------


class ResponseIndex(Protocol):
    """The index of stored archived responses, read back (``response`` records).

    What the responses source reads before it downloads (which digests are stored,
    and in which file) and what a miner reads: the records in frames of
    ``size`` rows, in (url, timestamp) order, each a batch of the kind.
    """

    def digests(self) -> dict[str, str]:
        """Every stored digest and the file (relative to ``FILES_STORE``) that holds its bytes."""

    def missing(self) -> set[tuple[str, str]]:
        """(url, timestamp) of the captures indexed without a file: the archive had no memento."""

    def batches(
        self, domain: str | None = None, include_subdomains: bool = True, size: int = 5000
    ) -> Iterator[Batch]:
        """The records with a file, of ``domain`` (and subdomains; all without one), ``size`` rows a batch."""

    def close(self) -> None:
        """Release the connection."""


@runtime_checkable
class ResponseIndexStore(Protocol):
    """A store that can read its ``response`` records back (class-level)."""

    @classmethod
    def response_index(cls, uri: str, settings: Any) -> ResponseIndex:
        """Open the index of the store ``uri`` names (read-only)."""


#: The names plugin authors have imported since before the reading side was per kind.
ReadableStore = UrlReadableStore
Searcher = UrlSearcher
SearchableStore = UrlSearchableStore
ReportingStore = UrlReportingStore

#: Capability -> (Protocol, what a user loses without it), for one-line refusals.
CAPABILITIES: dict[str, tuple[type, str]] = {
    "write": (WritingStore, "storing URLs"),
    "resume": (ResumableStore, "resuming a crawl (JOBDIR)"),
    "read": (ReadableStore, "exports from the store (crawl all -o)"),
    "search": (SearchableStore, "trawl search"),
    "report": (ReportingStore, "trawl report new"),
    "responses": (ResponseIndexStore, "the responses index (trawl crawl responses, trawl responses list)"),
    "read_kinds": (KindReadableStore, "trawl crates questions and alerts"),
}


#: The names a refusal gives: those plugin authors import (the aliases above).
_SHOWN = {"read": "ReadableStore", "search": "SearchableStore", "report": "ReportingStore"}


def missing_capabilities(store_class: type, needed: list[str]) -> list[str]:
    """The capabilities among ``needed`` that ``store_class`` does not implement.

    ``isinstance`` of the class object against a runtime-checkable Protocol
    checks that every member exists on it: instance methods (writing, resume)
    and classmethods (read, search) alike.
    """
    return [name for name in needed if not isinstance(store_class, CAPABILITIES[name][0])]


def describe_missing(scheme: str, store_class: type, missing: list[str]) -> str:
    """One line for a refusal: which store, what it lacks, what that breaks."""
    parts = [f"{_SHOWN.get(m, CAPABILITIES[m][0].__name__)} ({CAPABILITIES[m][1]})" for m in missing]
    return f"the {scheme!r} store ({store_class.__name__}) does not implement " + ", ".join(parts)
