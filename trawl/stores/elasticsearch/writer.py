"""Writing a batch: a sans-IO state machine (:class:`BatchWrite`) and its two drivers.

The steps, per batch:

1. one ``_bulk`` of ``create`` actions: a URL Elasticsearch does not have is
   stored in one round trip (a fresh crawl costs nothing more);
2. the URLs that already existed (409) are read back (``_mget``), their
   provenance merged by :meth:`trawl.records.provenance.Provenance.merge` and written
   back with ``if_seq_no`` / ``if_primary_term``; a concurrent writer's 409 is
   merged again, on the newer document (at most ``_MAX_CONFLICT_ROUNDS``);
3. items the cluster rejects with 429 are tried again after a backoff
   (``ELASTICSEARCH_RETRIES`` rounds, ``ELASTICSEARCH_BACKOFF`` doubled up to
   ``ELASTICSEARCH_BACKOFF_MAX``); what still fails is a :class:`DeadLetter`.

A request that fails as a whole (a timeout, a refused or reset connection,
HTTP 502/503/504: a node restarting, a cluster busy with a merge or a GC pause)
is sent again after the same backoff, up to ``ELASTICSEARCH_RETRIES`` times;
only then does the error reach the store, which keeps the batch in the
dead-letter file and stops the crawl (issue "fit to run unattended", item 3: a
``ConnectionTimeout`` stopped unattended crawls).

A bulk request that timed out may have been written all the same. Sent again,
its ``create`` (or conditional ``index``) actions answer 409 and would be
merged into themselves, doubling the capture counts. So the documents a
failed request carried are remembered: a 409 whose document, read back, is
exactly what was sent is that earlier write, and counts as done. (A second
writer that changed the same document within that window makes this check
miss, and that URL's counts are merged twice: timeouts and concurrent writers
of one URL rarely meet.)

The machine yields :class:`Bulk`, :class:`Mget` and :class:`Sleep` requests and
is sent their answers, or a :class:`Failed`: :func:`run_sync` drives it with the
sync client (``scrapy es-replay``, the benchmark), :func:`run_async` with
``AsyncElasticsearch`` without blocking the reactor (crawls). Both switch off
the transport's own retries for these requests: they know nothing of this
check, and re-send a 503 at once, with no backoff.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from trawl.stores.elasticsearch.config import setting
from trawl.stores.elasticsearch.connection import one_line
from trawl.stores.elasticsearch.documents import UrlDocument, url_id

logger = logging.getLogger(__name__)

#: Conflicts in a row on one URL before it is a dead letter: each round re-reads the
#: document, so only writers that keep changing it at once exhaust them.
_MAX_CONFLICT_ROUNDS = 10
#: Whole-request answers worth waiting out: a gateway that lost the node (502, 504),
#: a node not ready or shedding load (503).
_RETRY_STATUSES = frozenset({502, 503, 504})
_BULK_FILTER = "items.*.status,items.*.result,items.*.error"


@dataclass(frozen=True)
class WriteOptions:
    """How a batch is written: request size, retries and their backoff."""

    bulk_docs: int
    retries: int
    backoff: float
    backoff_max: float

    @classmethod
    def from_settings(cls, settings: Any) -> WriteOptions:
        return cls(
            max(1, int(setting(settings, "ELASTICSEARCH_BULK_DOCS"))),
            max(0, int(setting(settings, "ELASTICSEARCH_RETRIES"))),
            float(setting(settings, "ELASTICSEARCH_BACKOFF")),
            float(setting(settings, "ELASTICSEARCH_BACKOFF_MAX")),
        )

    def wait(self, attempt: int) -> float:
        """Seconds before try ``attempt + 1`` (``attempt`` >= 1): doubled each time, capped."""
        return min(self.backoff_max, self.backoff * 2 ** (attempt - 1))


@dataclass
class Bulk:
    """Request: send these NDJSON lines to ``_bulk``; the answer is the list of items."""

    body: bytes
    count: int


@dataclass
class Mget:
    """Request: read these ids from ``index``; the answer is ``_mget``'s ``docs``."""

    index: str
    ids: list[str]


@dataclass
class Sleep:
    seconds: float


@dataclass
class Failed:
    """Answer: the request failed as a whole, in a way worth trying again."""

    error: BaseException


@dataclass
class DeadLetter:
    position: int
    status: int
    error: Any


#: One write of a batch round: (position, created fresh, record, its JSON document).
_Op = tuple[int, bool, UrlDocument, dict[str, Any]]


class BatchWrite:
    """Writes ``items`` (one contribution per URL) into ``index``; see the module docstring.

    Drive :meth:`steps` by sending the answer of each request it yields; when it
    returns, :attr:`new` says which URLs were created, :attr:`repeat` which ones
    this run had written before, :attr:`merged` holds the stored document of
    each URL written and :attr:`dead` what could not be. A request that failed
    more than ``retries`` times raises its error out of :meth:`steps`.
    """

    def __init__(
        self, index: str, items: list[UrlDocument], source: str, run: str, options: WriteOptions,
        extra_ops: bytes = b"",
    ) -> None:  # fmt: skip
        self.index = index
        self.items = items
        self.source = source
        self.run = run
        self.options = options
        self.extra_ops = extra_ops
        size = len(items)
        self.ids = [url_id(item.url) for item in items]
        self.new = [False] * size
        self.repeat = [False] * size
        self.merged: list[UrlDocument | None] = [None] * size
        self.dead: list[DeadLetter] = []
        self.rejections = 0
        self.retried_requests = 0
        #: Position -> (created fresh, record, document) of writes a failed request carried.
        self._sent: dict[int, tuple[bool, UrlDocument, dict[str, Any]]] = {}

    def _request(
        self, request: Bulk | Mget, carried: Sequence[_Op] = ()
    ) -> Generator[Bulk | Mget | Sleep, Any, Any]:
        """Yield ``request`` until it is answered; a :class:`Failed` one again after a backoff."""
        failures = 0
        while True:
            answer = yield request
            if not isinstance(answer, Failed):
                return answer
            failures += 1
            if failures > self.options.retries:
                raise answer.error
            for i, fresh, record, doc in carried:
                self._sent[i] = (fresh, record, doc)
            self.retried_requests += 1
            wait = self.options.wait(failures)
            logger.warning(
                "elasticsearch: %s request failed (%s); trying again in %.1f s (%d of %d)",
                "bulk" if isinstance(request, Bulk) else "mget", one_line(answer.error), wait, failures,
                self.options.retries,
            )  # fmt: skip
            yield Sleep(wait)

    def steps(self) -> Generator[Bulk | Mget | Sleep, Any, None]:
        now = int(time.time() * 1000)
        to_create = list(range(len(self.items)))
        to_merge: list[int] = []
        conflicts: dict[int, int] = {}
        tries = 0
        extra = self.extra_ops
        index = self.index.encode()
        while to_create or to_merge:
            ops: list[_Op] = []
            actions: list[bytes] = []
            if to_merge:
                docs = yield from self._request(Mget(self.index, [self.ids[i] for i in to_merge]))
                for i, found in zip(to_merge, docs, strict=True):
                    sent = self._sent.pop(i, None)
                    if found.get("found"):
                        if sent is not None and found["_source"] == sent[2]:
                            # The failed request had written it: that write is this URL's.
                            self.new[i], self.merged[i] = sent[0], sent[1]
                            continue
                        stored = UrlDocument.from_doc(found["_source"])
                        # This run wrote it before: its source's count names this run (the URL's
                        # ``last_run`` may be another source's, written in between: ``crawl all``).
                        wrote = stored.provenance.counts.get(self.source, [None])[0] == self.run
                        self.repeat[i] = self.repeat[i] or wrote
                        record = stored.merge(self.items[i], self.source, self.run)
                        action = {
                            "index": {
                                "_index": self.index,
                                "_id": self.ids[i],
                                "if_seq_no": found["_seq_no"],
                                "if_primary_term": found["_primary_term"],
                            }
                        }
                        ops.append((i, False, record, record.doc(now)))
                    else:  # deleted meanwhile: create it again
                        record = self.items[i]
                        action = {"create": {"_index": self.index, "_id": self.ids[i]}}
                        ops.append((i, True, record, record.doc(now)))
                    actions.append(orjson.dumps(action))
            for i in to_create:
                ops.append((i, True, self.items[i], self.items[i].doc(now)))
                actions.append(b'{"create":{"_index":"%s","_id":"%s"}}' % (index, self.ids[i].encode()))
            answers: list[Mapping[str, Any]] = []
            step = self.options.bulk_docs
            for start in range(0, len(ops), step):
                chunk = ops[start : start + step]
                body = b"".join(
                    action + b"\n" + orjson.dumps(op[3]) + b"\n"
                    for action, op in zip(actions[start : start + step], chunk, strict=True)
                )
                if extra and start + step >= len(ops):
                    body += extra  # the page ledger entry goes with the batch's last request
                    extra = b""
                items = yield from self._request(Bulk(body, len(chunk)), chunk)
                answers.extend(items[: len(chunk)])
            to_create, to_merge, rejected = [], [], []
            for (i, fresh, record, _), item in zip(ops, answers, strict=True):
                result = next(iter(item.values()))
                status = int(result.get("status", 500))
                if 200 <= status < 300:
                    self.new[i] = fresh and result.get("result") == "created"
                    self.merged[i] = record
                    self._sent.pop(i, None)
                elif status == 409:
                    conflicts[i] = conflicts.get(i, 0) + 1
                    if conflicts[i] > _MAX_CONFLICT_ROUNDS:
                        self.dead.append(DeadLetter(i, status, result.get("error")))
                    else:
                        to_merge.append(i)
                elif status == 429:
                    rejected.append((i, fresh, status, result.get("error")))
                else:
                    self.dead.append(DeadLetter(i, status, result.get("error")))
            if rejected:
                self.rejections += len(rejected)
                tries += 1
                if tries > self.options.retries:
                    self.dead.extend(DeadLetter(i, status, error) for i, _, status, error in rejected)
                else:
                    yield Sleep(self.options.wait(tries))
                    for i, fresh, _, _ in rejected:
                        (to_create if fresh else to_merge).append(i)


def _bulk_items(answer: Any) -> list[Mapping[str, Any]]:
    body = getattr(answer, "body", answer)
    return body.get("items", [])


def failure_answer(exc: BaseException, request: Bulk | Mget) -> Any:
    """What the state machine is told when ``request`` raised ``exc``; None: nothing to retry.

    A bulk request refused as a whole with 429 becomes a 429 for each of its
    items (they take the per-item backoff, then the dead-letter file). Timeouts,
    connection failures other than TLS ones (a bad certificate stays bad) and
    502/503/504 become :class:`Failed`.
    """
    from elastic_transport import ConnectionError, ConnectionTimeout, TlsError

    status = getattr(getattr(exc, "meta", None), "status", None)
    if status == 429 and isinstance(request, Bulk):
        error = {"type": "es_rejected_execution_exception", "reason": one_line(exc)}
        return [{"create": {"status": 429, "error": error}}] * request.count
    if status == 429 or status in _RETRY_STATUSES:
        return Failed(exc)
    if isinstance(exc, (ConnectionTimeout, ConnectionError)) and not isinstance(exc, TlsError):
        return Failed(exc)
    return None


def run_sync(client: Any, write: BatchWrite) -> None:
    """Drive a batch write with the sync client (blocking)."""
    client = client.options(max_retries=0)
    steps = write.steps()
    answer: Any = None
    while True:
        try:
            request = steps.send(answer)
        except StopIteration:
            return
        if isinstance(request, Sleep):
            time.sleep(request.seconds)
            answer = None
            continue
        try:
            if isinstance(request, Bulk):
                answer = _bulk_items(client.bulk(operations=request.body, filter_path=_BULK_FILTER))
            else:
                answer = client.mget(index=request.index, ids=request.ids).body["docs"]
        except Exception as exc:  # noqa: BLE001 - classified; what is not retryable is raised
            answer = failure_answer(exc, request)
            if answer is None:
                raise


async def run_async(client: Any, write: BatchWrite) -> None:
    """Drive a batch write with ``AsyncElasticsearch`` (never blocks the event loop)."""
    import asyncio

    client = client.options(max_retries=0)
    steps = write.steps()
    answer: Any = None
    while True:
        try:
            request = steps.send(answer)
        except StopIteration:
            return
        if isinstance(request, Sleep):
            await asyncio.sleep(request.seconds)
            answer = None
            continue
        try:
            if isinstance(request, Bulk):
                answer = _bulk_items(await client.bulk(operations=request.body, filter_path=_BULK_FILTER))
            else:
                answer = (await client.mget(index=request.index, ids=request.ids)).body["docs"]
        except Exception as exc:  # noqa: BLE001 - classified; what is not retryable is raised
            answer = failure_answer(exc, request)
            if answer is None:
                raise
