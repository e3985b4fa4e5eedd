"""The Elasticsearch store: ``STORE_URI=elasticsearch://host:9200``.

One document per canonical URL in ``<prefix>-urls-v1`` (index template
``<prefix>-urls`` over ``<prefix>-urls-*``, strict mappings, ECS ``url.*``
fields and trawl's provenance under ``trawl.*``). The document ``_id`` is the
hex SHA-256 of the canonical URL, so any writer (another run, another source,
another worker, a reindex) lands on the same document.

Writes, per batch:

1. one ``_bulk`` of ``create`` actions: a URL Elasticsearch does not have is
   stored in one round trip (a fresh crawl costs nothing more);
2. the URLs that already existed (409) are read back (``_mget``), their
   provenance merged by the SQLite store's rules (:mod:`trawl.provenance`:
   sources union, first_seen min, last_seen max, per-source capture counts
   that a rerun does not double) and written back with ``if_seq_no`` /
   ``if_primary_term``; a concurrent writer's 409 is merged again;
3. items the cluster rejects with 429 are retried with exponential backoff;
   whatever still fails is appended to the dead-letter file (an NDJSON line per
   URL with what the batch said about it and the error) and ``scrapy
   es-replay`` writes it later, through the same merge. Nothing is dropped.

Blocking: trawl's store hook is synchronous, so this store uses the sync
client; a batch is a handful of bulk requests, each at most
``ELASTICSEARCH_BULK_DOCS`` documents, and backoff waits are capped by
``ELASTICSEARCH_BACKOFF_MAX``. The write logic is written once, as a generator
of requests (:class:`_BatchWrite`), so an async driver (``write_batch_async``,
AsyncElasticsearch) runs the same steps without blocking the reactor.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import os
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import orjson

from trawl import hookimpl
from trawl.ecs import param_names, split_url, url_fields
from trawl.errors import StoreError, TrawlUsageError
from trawl.items import UrlBatch, UrlRecord
from trawl.provenance import add_run_count, join_set, max_ts, min_ts, split_set
from trawl.secrets import register_secret

if TYPE_CHECKING:
    from trawl.context import RunContext

logger = logging.getLogger(__name__)

MAPPING_VERSION = 1
DEFAULT_PORT = 9200
_MAX_CONFLICT_ROUNDS = 10
_RETRYABLE = frozenset({429})
_TS_FORMAT = "yyyyMMddHHmmss||strict_date_optional_time||epoch_millis"


# --------------------------------------------------------------------------------------
# Connection
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EsTarget:
    """Where ``STORE_URI`` points: the node URL (no credentials) and the basic auth."""

    url: str
    basic_auth: tuple[str, str] | None

    @property
    def shown(self) -> str:
        return self.url


def parse_uri(uri: str) -> EsTarget:
    """``elasticsearch://h:9200``, ``elasticsearch+https://user:pass@h:9200`` -> node URL and auth."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme in ("elasticsearch", "elasticsearch+http"):
        http = "http"
    elif scheme == "elasticsearch+https":
        http = "https"
    else:
        raise TrawlUsageError(
            f"STORE_URI {_hide(uri)!r}: use elasticsearch://host:9200 or elasticsearch+https://host:9200"
        )
    try:
        host = parts.hostname
        port = parts.port or DEFAULT_PORT
    except ValueError as exc:
        raise TrawlUsageError(f"STORE_URI {_hide(uri)!r}: {exc}") from None
    if not host:
        raise TrawlUsageError(f"STORE_URI {_hide(uri)!r} names no host (elasticsearch://host:9200)")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise TrawlUsageError(
            f"STORE_URI {_hide(uri)!r}: an Elasticsearch URI is scheme://[user:password@]host[:port] only"
            " (the index prefix is the ELASTICSEARCH_INDEX_PREFIX setting)"
        )
    shown_host = f"[{host}]" if ":" in host else host
    auth = None
    if parts.username is not None:
        auth = (unquote(parts.username), unquote(parts.password or ""))
        register_secret(auth[1])
    return EsTarget(f"{http}://{shown_host}:{port}", auth)


def _hide(uri: str) -> str:
    parts = urlsplit(uri)
    if parts.password:
        return uri.replace(f":{parts.password}@", ":***@", 1)
    return uri


def _setting(settings: Any, name: str, default: Any = None) -> Any:
    value = settings.get(name, default) if settings is not None else default
    return default if value is None else value


def _api_key(settings: Any) -> str:
    key = str(_setting(settings, "ELASTICSEARCH_API_KEY", "") or os.environ.get("ELASTICSEARCH_API_KEY", ""))
    register_secret(key)
    return key


def client_options(uri: str, settings: Any) -> dict[str, Any]:
    """Keyword arguments for ``Elasticsearch(...)`` / ``AsyncElasticsearch(...)``."""
    target = parse_uri(uri)
    options: dict[str, Any] = {
        "hosts": [target.url],
        "request_timeout": float(_setting(settings, "ELASTICSEARCH_TIMEOUT", 30)),
        "max_retries": 3,
        "retry_on_timeout": True,
        # 429 is retried per item by the store, with backoff; whole-request 5xx by the transport.
        "retry_on_status": (502, 503, 504),
    }
    if target.basic_auth:
        options["basic_auth"] = target.basic_auth
    key = _api_key(settings)
    if key:
        options["api_key"] = key
    ca_certs = str(_setting(settings, "ELASTICSEARCH_CA_CERTS", "") or "")
    if ca_certs:
        options["ca_certs"] = os.path.expanduser(ca_certs)
    verify = _setting(settings, "ELASTICSEARCH_VERIFY_CERTS", True)
    if isinstance(verify, str):
        verify = verify.strip().lower() not in ("0", "false", "no", "off")
    if target.url.startswith("https:"):
        options["verify_certs"] = bool(verify)
    try:
        from elasticsearch.serializer import OrjsonSerializer

        options["serializer"] = OrjsonSerializer()
    except ImportError:  # elasticsearch < 8.13 without it
        pass
    return options


def _client_major() -> int:
    from elasticsearch import __versionstr__

    return int(__versionstr__.split(".")[0])


def _compat_transport(base: type) -> type:
    """A transport that asks for the server's major in the compatibility headers.

    The 9.x client sends ``compatible-with=9``, which Elasticsearch 8 refuses;
    both 8 and 9 accept ``compatible-with=8``. The store learns the server's
    major from its first answer and asks for ``min(client, server)``.
    """

    class CompatTransport(base):  # type: ignore[misc,valid-type]
        compat: int | None = 8

        def _fix(self, headers: Any) -> Any:
            compat = self.compat
            if compat is None or headers is None or not hasattr(headers, "items"):
                return headers
            fixed = headers.copy()
            for name, value in headers.items():
                if isinstance(value, str) and "compatible-with=" in value:
                    fixed[name] = value.split("compatible-with=")[0] + f"compatible-with={compat}"
            return fixed

    if inspect.iscoroutinefunction(base.perform_request):

        async def perform_request(self, method, target, **kwargs):  # type: ignore[no-untyped-def]
            if "headers" in kwargs:
                kwargs["headers"] = self._fix(kwargs["headers"])
            return await base.perform_request(self, method, target, **kwargs)

    else:

        def perform_request(self, method, target, **kwargs):  # type: ignore[no-untyped-def]
            if "headers" in kwargs:
                kwargs["headers"] = self._fix(kwargs["headers"])
            return base.perform_request(self, method, target, **kwargs)

    CompatTransport.perform_request = perform_request  # type: ignore[method-assign]
    return CompatTransport


def _quiet_transport_logs() -> None:
    """elastic_transport logs every request (INFO) and every retry with a traceback (WARNING);
    the store reports failures itself, in one line."""
    logging.getLogger("elastic_transport").setLevel(logging.ERROR)


def make_client(uri: str, settings: Any) -> Any:
    """A sync client for ``uri``, not yet connected (see :func:`connect`)."""
    _quiet_transport_logs()
    from elastic_transport import Transport
    from elasticsearch import Elasticsearch

    return Elasticsearch(transport_class=_compat_transport(Transport), **client_options(uri, settings))


def make_async_client(uri: str, settings: Any) -> Any:
    _quiet_transport_logs()
    from elastic_transport import AsyncTransport
    from elasticsearch import AsyncElasticsearch

    return AsyncElasticsearch(
        transport_class=_compat_transport(AsyncTransport), **client_options(uri, settings)
    )


def _set_compat(client: Any, server_major: int) -> None:
    transport = getattr(client, "transport", None) or getattr(client, "_transport", None)
    if transport is not None and hasattr(transport, "compat"):
        transport.compat = min(_client_major(), server_major)


def connect(uri: str, settings: Any) -> Any:
    """A sync client that answered; :class:`StoreError` with one line if the cluster does not."""
    client = make_client(uri, settings)
    shown = parse_uri(uri).shown
    try:
        info = client.options(request_timeout=min(10.0, client_options(uri, settings)["request_timeout"]))
        answer = info.info()
    except Exception as exc:  # noqa: BLE001 - every failure becomes one line
        client.close()
        raise StoreError(f"cannot reach Elasticsearch at {shown}: {_reason(exc)}") from None
    _set_compat(client, int(str(answer["version"]["number"]).split(".")[0]))
    return client


def _reason(exc: BaseException) -> str:
    """One line for an elasticsearch / transport exception."""
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "meta", None), "status", None)
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            message = f"{error.get('type')}: {error.get('reason')}"
    text = f"HTTP {status}: {message}" if isinstance(status, int) else f"{type(exc).__name__}: {message}"
    return " ".join(str(text).split())[:300]


# --------------------------------------------------------------------------------------
# Indexes and templates
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Names:
    prefix: str

    @property
    def urls(self) -> str:
        return f"{self.prefix}-urls-v{MAPPING_VERSION}"

    @property
    def urls_pattern(self) -> str:
        return f"{self.prefix}-urls-*"

    @property
    def template(self) -> str:
        return f"{self.prefix}-urls"

    @property
    def pages(self) -> str:
        return f"{self.prefix}-pages"

    @property
    def runs(self) -> str:
        return f"{self.prefix}-runs"


def names_from(settings: Any) -> Names:
    prefix = str(_setting(settings, "ELASTICSEARCH_INDEX_PREFIX", "trawl") or "trawl").strip().lower()
    if not prefix or any(c in prefix for c in ' "*\\<|,>/?#:') or prefix[0] in "-_+":
        raise TrawlUsageError(f"ELASTICSEARCH_INDEX_PREFIX {prefix!r} is not a valid index name prefix")
    return Names(prefix)


_KEYWORD = {"type": "keyword", "ignore_above": 1024}
_LONG_KEYWORD = {"type": "keyword", "ignore_above": 8191}

URL_PROPERTIES: dict[str, Any] = {
    "full": _LONG_KEYWORD,
    "original": _LONG_KEYWORD,
    "scheme": _KEYWORD,
    "domain": _KEYWORD,
    "registered_domain": _KEYWORD,
    "subdomain": _KEYWORD,
    "top_level_domain": _KEYWORD,
    "port": {"type": "long"},
    "path": _LONG_KEYWORD,
    "query": _LONG_KEYWORD,
    "extension": _KEYWORD,
}

TRAWL_PROPERTIES: dict[str, Any] = {
    "sources": _KEYWORD,
    "first_seen": {"type": "date", "format": _TS_FORMAT, "ignore_malformed": True},
    "last_seen": {"type": "date", "format": _TS_FORMAT, "ignore_malformed": True},
    "captures": {"type": "long"},
    "status_codes": {"type": "short", "ignore_malformed": True},
    "mime_types": _KEYWORD,
    "params": _KEYWORD,
    "run_ids": _KEYWORD,
    "first_run": _KEYWORD,
    "last_run": _KEYWORD,
    # {source: [run id, captures in that run, best run]}: read back for merges, never searched.
    "source_counts": {"type": "object", "enabled": False},
    "added_at": {"type": "date"},
    "updated_at": {"type": "date"},
}


def component_templates(names: Names, settings: Any) -> dict[str, dict[str, Any]]:
    shards = int(_setting(settings, "ELASTICSEARCH_SHARDS", 1))
    replicas = str(_setting(settings, "ELASTICSEARCH_REPLICAS", "0-1"))
    index_settings: dict[str, Any] = {"number_of_shards": shards}
    if "-" in replicas:
        index_settings["auto_expand_replicas"] = replicas
    else:
        index_settings["number_of_replicas"] = int(replicas)
    return {
        f"{names.template}-settings": {"template": {"settings": {"index": index_settings}}},
        f"{names.template}-mappings": {
            "template": {
                "mappings": {
                    "dynamic": "strict",
                    "_meta": {"trawl_mapping_version": MAPPING_VERSION},
                    "properties": {
                        "@timestamp": {"type": "date"},
                        "url": {"properties": URL_PROPERTIES},
                        "trawl": {"properties": TRAWL_PROPERTIES},
                    },
                }
            },
            "_meta": {"description": "trawl URL records: ECS url.* and trawl provenance"},
        },
    }


def index_template(names: Names) -> dict[str, Any]:
    return {
        "index_patterns": [names.urls_pattern],
        "composed_of": [f"{names.template}-settings", f"{names.template}-mappings"],
        "priority": 200,
        "_meta": {"managed_by": "trawl", "trawl_mapping_version": MAPPING_VERSION},
    }


PAGES_MAPPINGS = {
    "dynamic": "strict",
    "properties": {
        "run": {"type": "keyword"},
        "source": {"type": "keyword"},
        "page": {"type": "keyword"},
        "rows": {"type": "long"},
        "stored_at": {"type": "date"},
    },
}
RUNS_MAPPINGS = {
    "dynamic": "strict",
    "properties": {
        "run_id": {"type": "keyword"},
        "source": {"type": "keyword"},
        "domain": {"type": "keyword"},
        "started_at": {"type": "date"},
        "finished_at": {"type": "date"},
        "finish_reason": {"type": "keyword"},
        "stats": {"type": "object", "enabled": False},
    },
}


def install_templates(client: Any, names: Names, settings: Any) -> None:
    """Component and index templates, then the indexes (idempotent: run at every open)."""
    for name, body in component_templates(names, settings).items():
        client.cluster.put_component_template(name=name, **body)
    client.indices.put_index_template(name=names.template, **index_template(names))
    _create_index(client, names.urls, None)
    small = {"index": {"number_of_shards": 1, "auto_expand_replicas": "0-1"}}
    _create_index(client, names.pages, PAGES_MAPPINGS, small)
    _create_index(client, names.runs, RUNS_MAPPINGS, small)


def _create_index(client: Any, name: str, mappings: Any, settings: Any = None) -> None:
    from elasticsearch import BadRequestError

    if client.indices.exists(index=name):
        return
    try:
        kwargs: dict[str, Any] = {}
        if mappings is not None:
            kwargs["mappings"] = mappings
        if settings is not None:
            kwargs["settings"] = settings
        client.indices.create(index=name, **kwargs)
    except BadRequestError as exc:  # created meanwhile by another worker
        if "resource_already_exists" not in str(exc):
            raise


# --------------------------------------------------------------------------------------
# Documents
# --------------------------------------------------------------------------------------


def url_id(url: str) -> str:
    """The document ``_id`` of a canonical URL: hex SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()


def _status_value(status: str) -> int | str:
    return int(status) if status.isdigit() else status


def _es_time(timestamp: str | None) -> str | None:
    """``YYYYMMDDhhmmss`` -> ISO 8601 (for ``@timestamp``); None if unreadable."""
    if not timestamp or not timestamp.isdigit() or len(timestamp) < 4:
        return None
    digits = (timestamp + "0101000000"[max(0, len(timestamp) - 4) :])[:14]
    try:
        parsed = datetime.strptime(digits, "%Y%m%d%H%M%S")
    except ValueError:
        return None
    return parsed.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Provenance:
    """What the store knows about one URL (the merge rules of :mod:`trawl.provenance`)."""

    url: str
    host: str
    sources: str
    first_seen: str | None
    last_seen: str | None
    captures: int
    statuses: str
    mimes: str
    counts: dict[str, list]
    run_ids: list[str]
    first_run: str
    last_run: str
    added_at: int

    @classmethod
    def contribution(cls, url: str, host: str, sources: str, first: str | None, last: str | None,
                     captures: int, statuses: str, mimes: str, source: str, run: str,
                     now: int) -> Provenance:  # fmt: skip
        return cls(url, host, sources or source, first, last, captures, statuses, mimes,
                   {source: [run, captures, captures]}, [run], run, run, now)  # fmt: skip

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> Provenance:
        url = doc.get("url", {})
        trawl = doc.get("trawl", {})
        return cls(
            url.get("full", ""),
            url.get("domain", ""),
            join_set(set(trawl.get("sources") or [])),
            trawl.get("first_seen"),
            trawl.get("last_seen"),
            int(trawl.get("captures") or 0),
            join_set({str(s) for s in trawl.get("status_codes") or []}),
            join_set(set(trawl.get("mime_types") or [])),
            dict(trawl.get("source_counts") or {}),
            list(trawl.get("run_ids") or []),
            trawl.get("first_run") or "",
            trawl.get("last_run") or "",
            int(trawl.get("added_at") or 0),
        )

    def merge(self, new: Provenance, source: str, run: str) -> Provenance:
        """This stored record with a batch's contribution merged in (``self`` unchanged)."""
        counts = {k: list(v) for k, v in self.counts.items()}
        captures = new.counts.get(source, [run, new.captures, new.captures])[1]
        add_run_count(counts, source, run, captures)
        run_ids = list(self.run_ids)
        if run not in run_ids:
            run_ids.append(run)
        return Provenance(
            self.url,
            self.host or new.host,
            join_set(split_set(self.sources) | split_set(new.sources)),
            min_ts(self.first_seen, new.first_seen),
            max_ts(self.last_seen, new.last_seen),
            sum(entry[2] for entry in counts.values()),
            join_set(split_set(self.statuses) | split_set(new.statuses)),
            join_set(split_set(self.mimes) | split_set(new.mimes)),
            counts,
            run_ids,
            self.first_run or run,
            run,
            self.added_at or new.added_at,
        )

    def doc(self, now: int) -> dict[str, Any]:
        url = url_fields(self.url, self.host)
        trawl: dict[str, Any] = {
            "sources": sorted(split_set(self.sources)),
            "captures": self.captures,
            "status_codes": [_status_value(s) for s in sorted(split_set(self.statuses))],
            "mime_types": sorted(split_set(self.mimes)),
            "run_ids": self.run_ids,
            "first_run": self.first_run,
            "last_run": self.last_run,
            "source_counts": self.counts,
            "added_at": self.added_at or now,
            "updated_at": now,
        }
        if self.first_seen:
            trawl["first_seen"] = self.first_seen
        if self.last_seen:
            trawl["last_seen"] = self.last_seen
        params = param_names(url.get("query"))  # type: ignore[arg-type]
        if params:
            trawl["params"] = params
        stamp = _es_time(self.first_seen) or datetime.fromtimestamp(
            (self.added_at or now) / 1000, tz=timezone.utc
        ).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"@timestamp": stamp, "url": url, "trawl": trawl}


def record_from_doc(source: Mapping[str, Any], new: bool = False) -> UrlRecord:
    prov = Provenance.from_doc(source)
    return UrlRecord(
        prov.url,
        prov.host,
        prov.sources,
        prov.first_seen,
        prov.last_seen,
        prov.captures,
        prov.statuses,
        prov.mimes,
        new,
    )


# --------------------------------------------------------------------------------------
# Writing a batch: a generator of requests, driven by a sync or an async client
# --------------------------------------------------------------------------------------


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
class DeadLetter:
    position: int
    status: int
    error: Any


class _BatchWrite:
    """Writes ``contributions`` (one per URL) into ``index``; see the module docstring.

    Drive :meth:`steps` by sending the answer of each request it yields; when it
    returns, :attr:`new` says which URLs were created, :attr:`merged` holds the
    stored provenance of each URL written, :attr:`dead` what could not be.
    """

    def __init__(self, index: str, contributions: list[Provenance], source: str, run: str,
                 bulk_docs: int, retries: int, backoff: float, backoff_max: float,
                 extra_ops: bytes = b"") -> None:  # fmt: skip
        self.index = index
        self.items = contributions
        self.source = source
        self.run = run
        self.bulk_docs = max(1, bulk_docs)
        self.retries = retries
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.extra_ops = extra_ops
        size = len(contributions)
        self.ids = [url_id(c.url) for c in contributions]
        self.new = [False] * size
        self.merged: list[Provenance | None] = [None] * size
        self.dead: list[DeadLetter] = []
        self.rejections = 0

    def steps(self) -> Generator[Bulk | Mget | Sleep, Any, None]:
        now = int(time.time() * 1000)
        to_create = list(range(len(self.items)))
        to_merge: list[int] = []
        conflicts: dict[int, int] = {}
        tries = 0
        extra = self.extra_ops
        while to_create or to_merge:
            ops: list[tuple[int, bool, Provenance]] = []  # (position, created fresh, record)
            lines: list[bytes] = []
            if to_merge:
                docs = yield Mget(self.index, [self.ids[i] for i in to_merge])
                for i, found in zip(to_merge, docs, strict=True):
                    if found.get("found"):
                        merged = Provenance.from_doc(found["_source"]).merge(
                            self.items[i], self.source, self.run
                        )
                        action = {
                            "index": {
                                "_index": self.index,
                                "_id": self.ids[i],
                                "if_seq_no": found["_seq_no"],
                                "if_primary_term": found["_primary_term"],
                            }
                        }
                        ops.append((i, False, merged))
                    else:  # deleted meanwhile: create it again
                        merged = self.items[i]
                        action = {"create": {"_index": self.index, "_id": self.ids[i]}}
                        ops.append((i, True, merged))
                    lines.append(orjson.dumps(action))
                    lines.append(orjson.dumps(merged.doc(now)))
            for i in to_create:
                ops.append((i, True, self.items[i]))
                lines.append(
                    b'{"create":{"_index":"%s","_id":"%s"}}' % (self.index.encode(), self.ids[i].encode())
                )
                lines.append(orjson.dumps(self.items[i].doc(now)))
            answers: list[Mapping[str, Any]] = []
            step = self.bulk_docs
            for start in range(0, len(ops), step):
                body = b"\n".join(lines[2 * start : 2 * (start + step)]) + b"\n"
                if extra and start + step >= len(ops):
                    body += extra  # the page ledger entry goes with the batch's last request
                    extra = b""
                items = yield Bulk(body, min(step, len(ops) - start))
                answers.extend(items[: min(step, len(ops) - start)])
            to_create, to_merge, rejected = [], [], []
            for (i, fresh, record), item in zip(ops, answers, strict=True):
                result = next(iter(item.values()))
                status = int(result.get("status", 500))
                if 200 <= status < 300:
                    self.new[i] = fresh and result.get("result") == "created"
                    self.merged[i] = record
                elif status == 409:
                    conflicts[i] = conflicts.get(i, 0) + 1
                    if conflicts[i] > _MAX_CONFLICT_ROUNDS:
                        self.dead.append(DeadLetter(i, status, result.get("error")))
                    else:
                        to_merge.append(i)
                elif status in _RETRYABLE:
                    rejected.append((i, fresh, status, result.get("error")))
                else:
                    self.dead.append(DeadLetter(i, status, result.get("error")))
            if rejected:
                self.rejections += len(rejected)
                tries += 1
                if tries > self.retries:
                    self.dead.extend(DeadLetter(i, status, error) for i, _, status, error in rejected)
                else:
                    yield Sleep(min(self.backoff_max, self.backoff * 2 ** (tries - 1)))
                    for i, fresh, _, _ in rejected:
                        (to_create if fresh else to_merge).append(i)


def _bulk_items(answer: Any) -> list[Mapping[str, Any]]:
    body = getattr(answer, "body", answer)
    return body.get("items", [])


def _rejected_whole(exc: BaseException, count: int) -> list[Mapping[str, Any]] | None:
    """A bulk request refused as a whole with 429: every item of it is a rejection to retry."""
    if getattr(getattr(exc, "meta", None), "status", None) == 429:
        error = {"type": "es_rejected_execution_exception", "reason": _reason(exc)}
        return [{"create": {"status": 429, "error": error}}] * count
    return None


def run_sync(client: Any, write: _BatchWrite) -> None:
    """Drive a batch write with the sync client (blocking)."""
    from elasticsearch import ApiError

    steps = write.steps()
    answer: Any = None
    try:
        request = steps.send(None)
        while True:
            if isinstance(request, Bulk):
                try:
                    answer = _bulk_items(client.bulk(operations=request.body, filter_path=_BULK_FILTER))
                except ApiError as exc:
                    answer = _rejected_whole(exc, request.count)
                    if answer is None:
                        raise
            elif isinstance(request, Mget):
                answer = client.mget(index=request.index, ids=request.ids).body["docs"]
            else:
                time.sleep(request.seconds)
                answer = None
            request = steps.send(answer)
    except StopIteration:
        return


async def run_async(client: Any, write: _BatchWrite) -> None:
    """Drive a batch write with ``AsyncElasticsearch`` (never blocks the event loop)."""
    import asyncio

    from elasticsearch import ApiError

    steps = write.steps()
    answer: Any = None
    try:
        request = steps.send(None)
        while True:
            if isinstance(request, Bulk):
                try:
                    answer = _bulk_items(await client.bulk(operations=request.body, filter_path=_BULK_FILTER))
                except ApiError as exc:
                    answer = _rejected_whole(exc, request.count)
                    if answer is None:
                        raise
            elif isinstance(request, Mget):
                answer = (await client.mget(index=request.index, ids=request.ids)).body["docs"]
            else:
                await asyncio.sleep(request.seconds)
                answer = None
            request = steps.send(answer)
    except StopIteration:
        return


_BULK_FILTER = "items.*.status,items.*.result,items.*.error"


# --------------------------------------------------------------------------------------
# Dead letters
# --------------------------------------------------------------------------------------


def dead_letter_path(settings: Any) -> Path:
    path = str(_setting(settings, "ELASTICSEARCH_DEAD_LETTERS", "trawl-es-dead-letters.ndjson"))
    return Path(os.path.expanduser(path))


_dead_letter_lock = threading.Lock()


def append_dead_letters(path: Path, lines: list[bytes]) -> None:
    if not lines:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with _dead_letter_lock, open(path, "ab") as file:
        file.write(b"".join(line + b"\n" for line in lines))
        file.flush()
        os.fsync(file.fileno())


def dead_letter_line(index: str, record: Provenance, source: str, run: str, status: int, error: Any) -> bytes:
    return orjson.dumps(
        {
            "index": index,
            "source": source,
            "run": run,
            "url": record.url,
            "host": record.host,
            "sources": record.sources,
            "first_seen": record.first_seen,
            "last_seen": record.last_seen,
            "captures": record.captures,
            "statuses": record.statuses,
            "mimes": record.mimes,
            "status": status,
            "error": error,
            "failed_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    )


@dataclass
class ReplayResult:
    replayed: int
    left: int


def replay_dead_letters(uri: str, settings: Any, path: Path | None = None) -> ReplayResult:
    """Write every dead letter in ``path`` through the store's merge; keep only those that fail again.

    Lines are grouped by (index, source, run) and written as batches of the run
    they came from, so capture counts merge as if the write had not failed. The
    file is rewritten atomically with what is left (removed when nothing is).
    """
    path = path or dead_letter_path(settings)
    if not path.exists():
        return ReplayResult(0, 0)
    client = connect(uri, settings)
    try:
        groups: dict[tuple[str, str, str], list[Provenance]] = {}
        unreadable: list[bytes] = []
        with open(path, "rb") as file:
            for raw in file:
                raw = raw.strip()
                if not raw:
                    continue
                try:
                    line = orjson.loads(raw)
                    key = (line["index"], line["source"], line["run"])
                    record = _from_dead_letter(line)
                except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                    unreadable.append(raw)
                    continue
                groups.setdefault(key, []).append(record)
        left: list[bytes] = list(unreadable)
        replayed = 0
        options = _write_options(settings)
        try:
            for (index, source, run), records in groups.items():
                write = _BatchWrite(index, records, source, run, **options)
                run_sync(client, write)
                for dead in write.dead:
                    record = records[dead.position]
                    left.append(dead_letter_line(index, record, source, run, dead.status, dead.error))
                replayed += len(records) - len(write.dead)
            client.indices.refresh(index=",".join(sorted({key[0] for key in groups})) or "_all")
        except Exception as exc:  # noqa: BLE001 - the file is left as it was: replay again later
            raise StoreError(f"the replay stopped, {path} is unchanged: {_reason(exc)}") from None
        tmp = path.with_name(path.name + ".tmp")
        if left:
            tmp.write_bytes(b"".join(line + b"\n" for line in left))
            tmp.replace(path)
        else:
            path.unlink()
        return ReplayResult(replayed, len(left))
    finally:
        client.close()


def _from_dead_letter(line: Mapping[str, Any]) -> Provenance:
    return Provenance.contribution(
        line["url"], line["host"], line["sources"], line["first_seen"], line["last_seen"],
        int(line["captures"]), line["statuses"], line["mimes"], line["source"], line["run"], 0,
    )  # fmt: skip


def _write_options(settings: Any) -> dict[str, Any]:
    return {
        "bulk_docs": int(_setting(settings, "ELASTICSEARCH_BULK_DOCS", 2000)),
        "retries": int(_setting(settings, "ELASTICSEARCH_RETRIES", 5)),
        "backoff": float(_setting(settings, "ELASTICSEARCH_BACKOFF", 0.5)),
        "backoff_max": float(_setting(settings, "ELASTICSEARCH_BACKOFF_MAX", 10.0)),
    }


# --------------------------------------------------------------------------------------
# The store
# --------------------------------------------------------------------------------------


class ElasticsearchStore:
    """URL records in Elasticsearch (see the module docstring)."""

    @staticmethod
    def check_uri(uri: str) -> None:
        parse_uri(uri)

    #: Settings of the stores this process opened, by URI: ``read_runs(uri, run_ids)`` (``crawl
    #: all -o``) is called without settings, and must read the index the crawl wrote to.
    _settings_by_uri: dict[str, Any] = {}

    def __init__(self, uri: str, context: RunContext) -> None:
        self.uri = uri
        self.context = context
        self.settings = context.settings
        ElasticsearchStore._settings_by_uri[uri] = self.settings
        self.names = names_from(self.settings)
        self.options = _write_options(self.settings)
        self.dead_letters = dead_letter_path(self.settings)
        self.client: Any = None
        self.async_client: Any = None
        self._pages: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    @property
    def run(self) -> str:
        return self.context.run_id

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
                    "source": self.context.source,
                    "domain": target and target.domain,
                    "started_at": int(time.time() * 1000),
                },
            )
        except Exception as exc:  # noqa: BLE001
            self.client.close()
            self.client = None
            raise StoreError(
                f"cannot set up the Elasticsearch indexes at {parse_uri(self.uri).shown}: {_reason(exc)}"
            ) from None

    # -- writing ------------------------------------------------------------------------
    def _contributions(self, batch: UrlBatch, now: int) -> list[Provenance]:
        size = len(batch.urls)
        sources = batch.sources or [batch.source] * size
        run = self.run
        source = batch.source
        return [
            Provenance.contribution(url, host, src, first, last, captures, statuses, mimes, source, run, now)
            for url, host, src, first, last, captures, statuses, mimes in zip(
                batch.urls,
                batch.hosts,
                sources,
                batch.first_seen,
                batch.last_seen,
                batch.captures,
                batch.statuses,
                batch.mimes,
                strict=True,
            )
        ]

    def _prepare(self, batch: UrlBatch) -> _BatchWrite | None:
        """The write for a batch, or None when this run stored its page already (a resume)."""
        if batch.page:
            key = (batch.source, batch.page)
            with self._lock:
                if key in self._pages:
                    batch.new = [False] * len(batch.urls)
                    batch.repeats = set(batch.urls)
                    self.context.stats.inc_value("trawl/pages_already_stored")
                    return None
                self._pages.add(key)
        now = int(time.time() * 1000)
        ledger = b""
        if batch.page:
            page_id = url_id(f"{self.run}\n{batch.source}\n{batch.page}")
            ledger = orjson.dumps({"index": {"_index": self.names.pages, "_id": page_id}}) + b"\n"
            ledger += orjson.dumps(
                {"run": self.run, "source": batch.source, "page": batch.page, "rows": batch.page_rows,
                 "stored_at": now}
            ) + b"\n"  # fmt: skip
        return _BatchWrite(
            self.names.urls, self._contributions(batch, now), batch.source, self.run, extra_ops=ledger,
            **self.options,
        )  # fmt: skip

    def _finish(self, batch: UrlBatch, write: _BatchWrite) -> int:
        """Copy merged provenance into the batch (exports see it), dead-letter failures, count new."""
        size = len(batch.urls)
        if batch.sources is None:
            batch.sources = [batch.source] * size
        for i, record in enumerate(write.merged):
            if record is None or write.new[i]:
                continue
            batch.sources[i] = record.sources
            batch.first_seen[i] = record.first_seen
            batch.last_seen[i] = record.last_seen
            batch.captures[i] = record.captures
            batch.statuses[i] = record.statuses
            batch.mimes[i] = record.mimes
        stats = self.context.stats
        if write.rejections:
            stats.inc_value("trawl/elasticsearch/rejected_429", write.rejections)
        if write.dead:
            lines = [
                dead_letter_line(
                    write.index, write.items[d.position], batch.source, self.run, d.status, d.error
                )
                for d in write.dead
            ]
            append_dead_letters(self.dead_letters, lines)
            stats.inc_value("trawl/elasticsearch/dead_letters", len(lines))
            first = write.dead[0]
            logger.error(
                "elasticsearch: %d of %d URLs of %s %s could not be indexed (HTTP %s: %s); written to %s,"
                " replay them with: scrapy es-replay",
                len(lines),
                size,
                batch.source,
                batch.page or "-",
                first.status,
                _error_text(first.error),
                self.dead_letters,
            )
        batch.new = write.new
        return sum(write.new)

    def write_batch(self, batch: UrlBatch) -> int:
        """Merge the batch into the index; return how many URLs are new (blocking, sync client)."""
        if not batch.urls and not batch.page:
            return 0
        assert self.client is not None, "store not open"
        write = self._prepare(batch)
        if write is None:
            return 0
        try:
            run_sync(self.client, write)
        except Exception as exc:  # noqa: BLE001 - the cluster went away: keep the batch, stop the run
            self._dead_letter_all(batch, write, exc)
            raise StoreError(
                f"Elasticsearch at {parse_uri(self.uri).shown} failed: {_reason(exc)};"
                f" the batch's {len(batch.urls)} URLs are in {self.dead_letters}"
            ) from None
        return self._finish(batch, write)

    async def write_batch_async(self, batch: UrlBatch) -> int:
        """:meth:`write_batch` with ``AsyncElasticsearch``: for an async store hook (see the docs)."""
        if not batch.urls and not batch.page:
            return 0
        if self.async_client is None:
            self.async_client = make_async_client(self.uri, self.settings)
            transport = getattr(self.client, "transport", None)
            _set_compat(self.async_client, getattr(transport, "compat", 8) or 8)
        write = self._prepare(batch)
        if write is None:
            return 0
        try:
            await run_async(self.async_client, write)
        except Exception as exc:  # noqa: BLE001
            self._dead_letter_all(batch, write, exc)
            raise StoreError(
                f"Elasticsearch at {parse_uri(self.uri).shown} failed: {_reason(exc)};"
                f" the batch's {len(batch.urls)} URLs are in {self.dead_letters}"
            ) from None
        return self._finish(batch, write)

    def _dead_letter_all(self, batch: UrlBatch, write: _BatchWrite, exc: BaseException) -> None:
        error = {"type": type(exc).__name__, "reason": _reason(exc)}
        lines = [
            dead_letter_line(write.index, record, batch.source, self.run, 0, error)
            for record, done in zip(write.items, write.merged, strict=True)
            if done is None
        ]
        append_dead_letters(self.dead_letters, lines)
        self.context.stats.inc_value("trawl/elasticsearch/dead_letters", len(lines))

    def done_pages(self, source: str) -> dict[str, int]:
        """Pages this run stored already (page key -> upstream rows): what a resumed run skips."""
        assert self.client is not None
        self.client.indices.refresh(index=self.names.pages)
        done: dict[str, int] = {}
        for hit in _scan(
            self.client,
            self.names.pages,
            {"bool": {"filter": [{"term": {"run": self.run}}, {"term": {"source": source}}]}},
            sort_field="page",
        ):
            done[hit["_source"]["page"]] = int(hit["_source"]["rows"])
        with self._lock:
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
            client.indices.refresh(index=f"{self.names.urls},{self.names.pages},{self.names.runs}")
        except Exception as exc:  # noqa: BLE001 - the data is written; only the run record is missing
            logger.warning("elasticsearch: cannot record the end of run %s: %s", self.run, _reason(exc))
        finally:
            client.close()
            self.client = None
            if self.async_client is not None:
                self._close_async()

    def _close_async(self) -> None:
        client, self.async_client = self.async_client, None
        try:
            import asyncio

            loop = asyncio.get_event_loop()
            if loop.is_running():
                loop.create_task(client.close())
            else:
                loop.run_until_complete(client.close())
        except RuntimeError:
            pass

    # -- reading ------------------------------------------------------------------------
    @classmethod
    def read_runs(
        cls, uri: str, run_ids: list[str], size: int = 5000, settings: Any = None
    ) -> Iterator[UrlBatch]:
        """The URLs the given runs wrote or updated, in batches, ordered by URL."""
        if not run_ids:
            return
        if settings is None:
            settings = cls._settings_by_uri.get(uri)
        if settings is None:
            from scrapy.utils.project import get_project_settings

            settings = get_project_settings()
        client = connect(uri, settings)
        names = names_from(settings)
        wanted = set(run_ids)
        try:
            query = {"terms": {"trawl.run_ids": list(run_ids)}}
            records: list[UrlRecord] = []
            for hit in _scan(client, names.urls_pattern, query, size=size):
                source = hit["_source"]
                records.append(
                    record_from_doc(source, new=source.get("trawl", {}).get("first_run") in wanted)
                )
                if len(records) >= size:
                    yield _batch_of(records)
                    records = []
            if records:
                yield _batch_of(records)
        finally:
            client.close()

    @classmethod
    def searcher(cls, uri: str, settings: Any) -> ElasticsearchSearcher:
        """The read side ``scrapy search`` uses (see :mod:`trawl.search`)."""
        return ElasticsearchSearcher(uri, settings)


def _error_text(error: Any) -> str:
    if isinstance(error, Mapping):
        return f"{error.get('type')}: {error.get('reason')}"
    return str(error)


def _batch_of(records: list[UrlRecord]) -> UrlBatch:
    return UrlBatch(
        source="store",
        urls=[r.url for r in records],
        hosts=[r.host for r in records],
        sources=[r.sources for r in records],
        first_seen=[r.first_seen for r in records],
        last_seen=[r.last_seen for r in records],
        captures=[r.captures for r in records],
        statuses=[r.statuses for r in records],
        mimes=[r.mimes for r in records],
        new=[r.new for r in records],
    )


def _scan(client: Any, index: str, query: Mapping[str, Any], size: int = 1000,
          sort_field: str = "url.full", limit: int | None = None) -> Iterator[Mapping[str, Any]]:  # fmt: skip
    """Every hit of ``query`` in ``sort_field`` order (``search_after`` paging)."""
    after: list[Any] | None = None
    seen = 0
    while True:
        page = size if limit is None else min(size, limit - seen)
        if page <= 0:
            return
        kwargs: dict[str, Any] = {
            "index": index,
            "query": query,
            "size": page,
            # URLs are unique, so the URL alone pages exactly (ES 8 cannot sort on _id).
            "sort": [{sort_field: {"order": "asc", "missing": "_last"}}],
            "track_total_hits": False,
        }
        if after is not None:
            kwargs["search_after"] = after
        hits = client.search(**kwargs).body["hits"]["hits"]
        if not hits:
            return
        yield from hits
        seen += len(hits)
        if len(hits) < page:
            return
        after = hits[-1].get("sort")
        if not after or after[0] is None:
            logger.warning("elasticsearch: a document without %s ends the listing early", sort_field)
            return


# --------------------------------------------------------------------------------------
# Search
# --------------------------------------------------------------------------------------


class ElasticsearchSearcher:
    """``scrapy search`` on the Elasticsearch store: queries become ES queries."""

    def __init__(self, uri: str, settings: Any) -> None:
        self.client = connect(uri, settings)
        self.index = names_from(settings).urls_pattern

    def __enter__(self) -> ElasticsearchSearcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    def records(self, node: Any, limit: int | None = None) -> Iterator[UrlRecord]:
        from trawl.query import to_es

        for hit in _scan(self.client, self.index, to_es(node), limit=limit):
            yield record_from_doc(hit["_source"])

    def count(self, node: Any) -> int:
        from trawl.query import to_es

        return int(self.client.count(index=self.index, query=to_es(node)).body["count"])

    def facet(self, node: Any, name: str, size: int) -> list[tuple[str, int]]:
        from trawl.query import field_named, to_es

        field = field_named(name)
        aggs = {
            "f": {"terms": {"field": field.es, "size": size, "order": [{"_count": "desc"}, {"_key": "asc"}]}}
        }
        answer = self.client.search(index=self.index, query=to_es(node), size=0, aggs=aggs).body
        return [(str(b["key"]), int(b["doc_count"])) for b in answer["aggregations"]["f"]["buckets"]]


@hookimpl
def trawl_register_stores() -> dict[str, type[ElasticsearchStore]]:
    return {"elasticsearch": ElasticsearchStore}


__all__ = [
    "ElasticsearchStore",
    "ElasticsearchSearcher",
    "connect",
    "parse_uri",
    "replay_dead_letters",
    "split_url",
    "url_id",
]
