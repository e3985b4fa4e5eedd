"""The Elasticsearch store: ``STORE_URI=elasticsearch://host:9200``, on the store contract.

:class:`ElasticsearchStore` implements every Protocol of
:mod:`trawl.stores.contract`:

* WritingStore / AsyncWritingStore: ``write_batch`` (sync client, blocking:
  ``scrapy es-replay``, the benchmark, a pipeline worker thread) and
  ``write_batch_async`` (``AsyncElasticsearch``: what the pipeline awaits on
  the reactor) run the same :class:`~.writer.BatchWrite`;
* ResumableStore: the page ledger ``<prefix>-pages``, written with a batch's
  last bulk request, read back by ``done_pages``;
* ReadableStore, SearchableStore: class-level, given the crawl's settings
  (the index prefix and the connection are settings, not part of the URI).

Each batch reads the polars frame column-wise into one contribution per URL,
writes them, then puts the merged provenance, ``new`` and ``repeat`` back on
the frame as whole columns. ``repeat`` comes free with the merge: a URL this
run wrote before is a 409 whose stored count for the batch's source names this
run (the SQL stores' rule; the stored ``last_run`` may be another source's run,
written in between by ``crawl all``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import orjson
import polars as pl

from trawl.common import statkeys
from trawl.errors import StoreError
from trawl.records.batches import URL_SCHEMA, Batch, UrlBatch
from trawl.records.provenance import Provenance
from trawl.settings_checks import Setting
from trawl.stores.contract import KEYED_KINDS, PartlyStored, keeps
from trawl.stores.elasticsearch import kinds as declared
from trawl.stores.elasticsearch import reading
from trawl.stores.elasticsearch.config import ELASTICSEARCH_SETTINGS
from trawl.stores.elasticsearch.connection import (
    compat_of,
    connect,
    make_async_client,
    one_line,
    parse_uri,
    set_compat,
)
from trawl.stores.elasticsearch.deadletters import (
    append_dead_letters,
    dead_letter_line,
    dead_letter_path,
    error_text,
)
from trawl.stores.elasticsearch.documents import UrlDocument, url_id
from trawl.stores.elasticsearch.search import ElasticsearchSearcher
from trawl.stores.elasticsearch.templates import install_templates, names_from
from trawl.stores.elasticsearch.writer import BatchWrite, WriteOptions, run_async, run_sync

if TYPE_CHECKING:
    from trawl.pipeline.context import RunContext

logger = logging.getLogger(__name__)

#: Frame columns a contribution is read from, in :meth:`Provenance.contribution`'s order.
_PROVENANCE = ("url", "host", "sources", "first_seen", "last_seen", "captures", "statuses", "mimes")
#: Columns the merged provenance replaces (named as :class:`Provenance`'s attributes).
_MERGED = _PROVENANCE[2:]


class ElasticsearchStore:
    """URL records in Elasticsearch (see the module docstring)."""

    #: URLs, and every kind that declares its key, in an index per kind (:mod:`.kinds`).
    kinds: ClassVar[frozenset[str]] = frozenset({"url", KEYED_KINDS})
    #: Its settings, their defaults and checks (trawl.settings_checks).
    settings_declared: ClassVar[dict[str, Setting]] = ELASTICSEARCH_SETTINGS

    def __init__(self, uri: str, context: RunContext) -> None:
        self.uri = uri
        self.context = context
        self.settings = context.settings
        self.names = names_from(self.settings)
        self.options = WriteOptions.from_settings(self.settings)
        self.dead_letters = dead_letter_path(self.settings)
        self.client: Any = None
        self.async_client: Any = None
        # Pages this run stored: one batch at a time (the contract), so no lock.
        self._pages: set[tuple[str, str]] = set()
        #: Declared kinds whose index this store made or checked (:mod:`.kinds`).
        self._kind_indexes: set[type[Batch]] = set()

    @classmethod
    def check_uri(cls, uri: str) -> None:
        parse_uri(uri)

    @property
    def run(self) -> str:
        return self.context.run_id

    @property
    def shown(self) -> str:
        return parse_uri(self.uri).shown

    def open(self) -> None:
        self.client = connect(self.uri, self.settings)
        try:
            install_templates(self.client, self.names, self.settings)
            target = self.context.target
            self.client.index(
                index=self.names.runs,
                id=self.run,
                document={
                    "run_id": self.run,
                    "job": self.context.job_id or self.run,
                    "source": self.context.source,
                    "domain": target and target.domain,
                    "started_at": int(time.time() * 1000),
                },
            )
        except Exception as exc:  # noqa: BLE001
            self.client.close()
            self.client = None
            raise StoreError(
                f"cannot set up the Elasticsearch indexes at {self.shown}: {one_line(exc)}"
            ) from None

    # -- writing ------------------------------------------------------------------------
    def _contributions(self, batch: UrlBatch, now: int) -> list[UrlDocument]:
        source, run = batch.source, self.run
        contribution = Provenance.contribution
        return [
            UrlDocument.contribution(contribution(*row, source, run), now)
            for row in batch.frame.select(_PROVENANCE).iter_rows()
        ]

    def _prepare(self, batch: Batch) -> BatchWrite | bytes | None:
        """The write for a batch (for a declared kind: its ledger lines), or None if nothing to write."""
        pages = batch.pages
        if not keeps(self, batch) or (not len(batch) and not pages):
            return None
        keys = [(batch.source, page) for page in pages]
        stored = sum(key in self._pages for key in keys)
        if stored:
            if stored < len(keys):
                raise PartlyStored(f"{len(keys) - stored} of {len(keys)} pages stored before")
            # stored before this run was stopped: every row a repeat
            batch.frame = batch.frame.with_columns(pl.lit(False).alias("new"), pl.lit(True).alias("repeat"))
            self.context.stats.inc_value(statkeys.PAGES_ALREADY_STORED, len(keys))
            return None
        self._pages.update(keys)
        now = int(time.time() * 1000)
        ledger = b""
        for page, rows in pages.items():
            page_id = url_id(f"{self.run}\n{batch.source}\n{page}")
            ledger += orjson.dumps({"index": {"_index": self.names.pages, "_id": page_id}}) + b"\n"
            ledger += orjson.dumps(
                {"run": self.run, "source": batch.source, "page": page, "rows": rows, "stored_at": now}
            ) + b"\n"  # fmt: skip
        if not isinstance(batch, UrlBatch):
            return ledger
        return BatchWrite(
            self.names.urls, self._contributions(batch, now), batch.source, self.run, self.options,
            extra_ops=ledger,
        )  # fmt: skip

    def _finish(self, batch: UrlBatch, write: BatchWrite) -> int:
        """Put merged provenance, ``new`` and ``repeat`` on the frame; dead-letter failures; count new."""
        frame = batch.frame
        columns = [
            pl.Series("new", write.new, dtype=pl.Boolean),
            pl.Series("repeat", write.repeat, dtype=pl.Boolean),
        ]
        # Rows created fresh hold their own contribution: only merged rows change.
        changed = [i for i, record in enumerate(write.merged) if record is not None and not write.new[i]]
        if changed:
            for name in _MERGED:
                values = frame.get_column(name).to_list()
                for i in changed:
                    values[i] = getattr(write.merged[i].provenance, name)  # type: ignore[union-attr]
                columns.append(pl.Series(name, values, dtype=URL_SCHEMA[name]))
        # A row a source gave no sources for was stored as reported by the batch's source.
        columns_expr = [
            pl.when(pl.col("sources").list.len() == 0)
            .then(pl.lit([batch.source], dtype=URL_SCHEMA["sources"]))
            .otherwise(pl.col("sources"))
            .alias("sources")
        ]
        batch.frame = frame.with_columns(columns).with_columns(columns_expr)
        stats = self.context.stats
        if write.rejections:
            stats.inc_value(statkeys.ELASTICSEARCH_REJECTED_429, write.rejections)
        if write.retried_requests:
            stats.inc_value(statkeys.ELASTICSEARCH_RETRIED_REQUESTS, write.retried_requests)
        if write.dead:
            lines = [
                dead_letter_line(
                    write.index, write.items[d.position], batch.source, self.run, d.status, d.error
                )
                for d in write.dead
            ]
            append_dead_letters(self.dead_letters, lines)
            stats.inc_value(statkeys.ELASTICSEARCH_DEAD_LETTERS, len(lines))
            first = write.dead[0]
            logger.error(
                "elasticsearch: %d of %d URLs of %s %s could not be indexed (HTTP %s: %s); written to %s,"
                " replay them with: trawl es-replay",
                len(lines), len(batch), batch.source, batch.page or "-", first.status,
                error_text(first.error), self.dead_letters,
                extra={"spider": self.context.spider},  # this source's error (crawl all)
            )  # fmt: skip
        return sum(write.new)

    def write_batch(self, batch: Batch) -> int:
        """Merge the batch into the index; return how many URLs are new (blocking, sync client)."""
        assert self.client is not None, "store not open"
        write = self._prepare(batch)
        if write is None:
            return 0
        if isinstance(write, bytes):
            return self._write_kind(batch, write)
        assert isinstance(batch, UrlBatch)
        try:
            run_sync(self.client, write)
        except Exception as exc:  # noqa: BLE001 - the cluster went away: keep the batch, stop the run
            raise self._failed(batch, write, exc) from None
        return self._finish(batch, write)

    async def written(self) -> None:
        """Every write is awaited by its item: by a close, none is left in flight."""

    async def write_batch_async(self, batch: Batch) -> int:
        """:meth:`write_batch` with ``AsyncElasticsearch``: what the pipeline awaits on the reactor."""
        write = self._prepare(batch)
        if write is None:
            return 0
        if isinstance(write, bytes):  # the sync client, off the reactor: a few requests per batch
            import asyncio

            return await asyncio.to_thread(self._write_kind, batch, write)
        assert isinstance(batch, UrlBatch)
        if self.async_client is None:
            self.async_client = make_async_client(self.uri, self.settings)
            set_compat(self.async_client, compat_of(self.client))
        try:
            await run_async(self.async_client, write)
        except Exception as exc:  # noqa: BLE001
            raise self._failed(batch, write, exc) from None
        return self._finish(batch, write)

    def _write_kind(self, batch: Batch, ledger: bytes) -> int:
        """A declared kind's batch into its index (:mod:`.kinds`), then its pages into the ledger."""
        batch_type = type(batch)
        index = declared.kind_index(self.names.prefix, batch_type)
        try:
            if batch_type not in self._kind_indexes:
                declared.ensure_index(self.client, index, batch_type)
                self._kind_indexes.add(batch_type)
            retrying = declared.Retrying(self.options.retries, self.options.wait)
            try:
                frame, new = (None, 0)
                if len(batch):
                    frame, new = declared.write_kind(self.client, index, batch, self.run, retrying)
                if ledger:
                    client = self.client.options(max_retries=0)
                    retrying.call(lambda: client.bulk(operations=ledger, filter_path="errors"))
            finally:
                stats = self.context.stats
                if retrying.rejected:
                    stats.inc_value(statkeys.ELASTICSEARCH_REJECTED_429, retrying.rejected)
                if retrying.retried:
                    stats.inc_value(statkeys.ELASTICSEARCH_RETRIED_REQUESTS, retrying.retried)
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - the cluster went away: stop the run in one line
            raise StoreError(f"Elasticsearch at {self.shown} failed: {one_line(exc)}") from None
        if frame is not None:
            batch.frame = frame
        return new

    def read_kind(self, batch_type: type[Batch], columns: Sequence[str]) -> pl.DataFrame:
        """Stored columns of a declared kind (:class:`~trawl.stores.contract.KindReadingStore`)."""
        assert self.client is not None, "store not open"
        index = declared.kind_index(self.names.prefix, batch_type)
        self.client.indices.refresh(index=index, ignore_unavailable=True)
        return declared.read_kind(self.client, index, batch_type, columns)

    def _failed(self, batch: UrlBatch, write: BatchWrite, exc: BaseException) -> StoreError:
        """Keep the URLs not written yet in the dead-letter file; the error that stops the run."""
        error = {"type": type(exc).__name__, "reason": one_line(exc)}
        lines = [
            dead_letter_line(write.index, record, batch.source, self.run, 0, error)
            for record, done in zip(write.items, write.merged, strict=True)
            if done is None
        ]
        append_dead_letters(self.dead_letters, lines)
        self.context.stats.inc_value(statkeys.ELASTICSEARCH_DEAD_LETTERS, len(lines))
        if write.retried_requests:
            self.context.stats.inc_value(statkeys.ELASTICSEARCH_RETRIED_REQUESTS, write.retried_requests)
        retries = write.options.retries
        tries = f" after {retries} {'retry' if retries == 1 else 'retries'}" if write.retried_requests else ""
        return StoreError(
            f"Elasticsearch at {self.shown} failed{tries}: {one_line(exc)};"
            f" the batch's {len(batch)} URLs are in {self.dead_letters}"
        )

    def done_pages(self, source: str) -> dict[str, int]:
        """Pages this run stored already (page key -> upstream rows): what a resumed run skips."""
        assert self.client is not None, "store not open"
        self.client.indices.refresh(index=self.names.pages)
        done: dict[str, int] = {}
        query = {"bool": {"filter": [{"term": {"run": self.run}}, {"term": {"source": source}}]}}
        for hit in reading.scan(self.client, self.names.pages, query, sort_field="page"):
            done[hit["_source"]["page"]] = int(hit["_source"]["rows"])
        self._pages.update((source, page) for page in done)
        return done

    def close(self, reason: str) -> None:
        client = self.client
        if client is None:
            return
        try:
            stats = orjson.loads(orjson.dumps(self.context.stats.get_stats(), default=str))
            client.update(
                index=self.names.runs,
                id=self.run,
                doc={"finished_at": int(time.time() * 1000), "finish_reason": reason, "stats": stats},
            )
            kinds = [declared.kind_index(self.names.prefix, k) for k in sorted(self._kind_indexes, key=str)]
            client.indices.refresh(
                index=",".join([self.names.urls, self.names.pages, self.names.runs, *kinds])
            )
        except Exception as exc:  # noqa: BLE001 - the data is written; only the run record is missing
            logger.warning("elasticsearch: cannot record the end of run %s: %s", self.run, one_line(exc))
        finally:
            client.close()
            self.client = None
            if self.async_client is not None:
                self._close_async()

    def _close_async(self) -> None:
        """Close the async client on the loop it runs on (the reactor's, in a crawl)."""
        import asyncio

        client, self.async_client = self.async_client, None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop running any more: close it on a fresh one
            try:
                asyncio.run(client.close())
            except Exception as exc:  # noqa: BLE001 - its connections go when the process does
                logger.debug("elasticsearch: closing the async client: %s", exc)
            return
        task = loop.create_task(client.close())
        _closing.add(task)  # asyncio keeps only a weak reference to tasks
        task.add_done_callback(_closing.discard)

    # -- reading (class-level: no crawl needed) -----------------------------------------
    @classmethod
    def read_runs(
        cls, uri: str, run_ids: list[str], settings: Any, size: int = reading.BATCH_URLS
    ) -> Iterator[UrlBatch]:
        """The URLs the given runs wrote or updated, as stored now, in URL order."""
        return reading.read_runs(uri, run_ids, settings, size)

    @classmethod
    def read_domain(
        cls, uri: str, domain: str, settings: Any, size: int = reading.BATCH_URLS
    ) -> Iterator[UrlBatch]:
        """Every URL the index holds for ``domain`` and its subdomains, in URL order."""
        return reading.read_domain(uri, domain, settings, size)

    @classmethod
    def list_runs(cls, uri: str, domain: str, settings: Any) -> pl.DataFrame:
        """The runs recorded for ``domain`` and its subdomains."""
        return reading.list_runs(uri, domain, settings)

    @classmethod
    def read_first_seen(
        cls, uri: str, run_ids: list[str], domain: str, settings: Any, limit: int | None = None
    ) -> Iterator[pl.DataFrame]:
        """URLs of ``domain`` that one of ``run_ids`` stored first (``trawl.first_run``), in URL order."""
        return reading.read_first_seen(uri, run_ids, domain, settings, limit)

    @classmethod
    def read_stored_kind(
        cls, uri: str, batch_type: type[Batch], columns: Sequence[str], settings: Any
    ) -> pl.DataFrame:
        """A declared kind's stored columns, no crawl (:class:`~trawl.stores.contract.KindReadableStore`)."""
        client = connect(uri, settings)
        try:
            return declared.read_kind(
                client, declared.kind_index(names_from(settings).prefix, batch_type), batch_type, columns
            )
        finally:
            client.close()

    @classmethod
    def searcher(cls, uri: str, settings: Any) -> ElasticsearchSearcher:
        """The read side ``scrapy search`` uses."""
        return ElasticsearchSearcher(uri, settings)


#: Async client closes in flight (see ``_close_async``).
_closing: set[Any] = set()
