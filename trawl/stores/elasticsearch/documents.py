"""One document per canonical URL: its ``_id``, its JSON, and the way back to a record.

The provenance and its merge rule are :mod:`trawl.records.provenance`'s, the same for
every store. What only these documents keep is around it in :class:`UrlDocument`:
``run_ids`` (every run that wrote the URL: what ``crawl all -o`` reads back)
and ``added_at`` (when trawl first stored it: the ``@timestamp`` of URLs whose
source gives no capture date).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from trawl.records.batches import UrlRecord
from trawl.records.ecs import param_names, url_fields
from trawl.records.provenance import Provenance


def url_id(url: str) -> str:
    """The document ``_id`` of a canonical URL: hex SHA-256 of its UTF-8 bytes.

    Deterministic, so every writer (a rerun, another source, another worker, a
    reindex) lands on the same document; hashed because an ``_id`` is at most
    512 bytes and URLs are not.
    """
    return hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()


def _status_value(status: str) -> int | str:
    return int(status) if status.isdigit() else status


def _es_time(timestamp: str | None) -> str | None:
    """``YYYYMMDDhhmmss`` (or a prefix of it) -> ISO 8601 for ``@timestamp``; None if unreadable."""
    if not timestamp or not timestamp.isdigit() or len(timestamp) < 4:
        return None
    digits = (timestamp + "0101000000"[max(0, len(timestamp) - 4) :])[:14]
    try:
        parsed = datetime.strptime(digits, "%Y%m%d%H%M%S")
    except ValueError:
        return None
    return parsed.strftime("%Y-%m-%dT%H:%M:%SZ")


def _iso_millis(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class UrlDocument:
    """A URL's :class:`Provenance` with the extras only the Elasticsearch documents keep."""

    provenance: Provenance
    run_ids: list[str]
    added_at: int

    @classmethod
    def contribution(cls, provenance: Provenance, now: int) -> UrlDocument:
        """What one batch of run ``provenance.last_run`` says about a URL."""
        return cls(provenance, [str(provenance.last_run)], now)

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> UrlDocument:
        url = doc.get("url", {})
        trawl = doc.get("trawl", {})
        provenance = Provenance(
            url.get("full", ""),
            url.get("domain", ""),
            sorted(trawl.get("sources") or []),
            trawl.get("first_seen"),
            trawl.get("last_seen"),
            int(trawl.get("captures") or 0),
            sorted({str(s) for s in trawl.get("status_codes") or []}),
            sorted(trawl.get("mime_types") or []),
            dict(trawl.get("source_counts") or {}),
            trawl.get("first_run") or "",
            trawl.get("last_run") or "",
        )
        return cls(provenance, list(trawl.get("run_ids") or []), int(trawl.get("added_at") or 0))

    @property
    def url(self) -> str:
        return self.provenance.url

    @property
    def last_run(self) -> str:
        return str(self.provenance.last_run)

    def merge(self, new: UrlDocument, source: str, run: str) -> UrlDocument:
        """This stored document with a batch's contribution merged in (``self`` unchanged)."""
        run_ids = self.run_ids if run in self.run_ids else [*self.run_ids, run]
        return UrlDocument(
            self.provenance.merge(new.provenance, source, run), list(run_ids), self.added_at or new.added_at
        )

    def doc(self, now: int) -> dict[str, Any]:
        """The document's JSON (``now``: ``updated_at``, and ``added_at`` of a new URL)."""
        p = self.provenance
        url = url_fields(p.url, p.host)
        added_at = self.added_at or now
        trawl: dict[str, Any] = {
            "sources": p.sources,
            "captures": p.captures,
            "status_codes": [_status_value(s) for s in p.statuses],
            "mime_types": p.mimes,
            "run_ids": self.run_ids,
            "first_run": p.first_run,
            "last_run": p.last_run,
            "source_counts": p.counts,
            "added_at": added_at,
            "updated_at": now,
        }
        if p.first_seen:
            trawl["first_seen"] = p.first_seen
        if p.last_seen:
            trawl["last_seen"] = p.last_seen
        params = param_names(url.get("query"))  # type: ignore[arg-type]
        if params:
            trawl["params"] = params
        stamp = _es_time(p.first_seen) or _iso_millis(added_at)
        return {"@timestamp": stamp, "url": url, "trawl": trawl}


#: What reading a URL back needs of its document (``_source`` filtering: the
#: ``url.*`` block and ``source_counts`` stay on the server).
READ_FIELDS = [
    "url.full",
    "url.domain",
    "trawl.sources",
    "trawl.first_seen",
    "trawl.last_seen",
    "trawl.captures",
    "trawl.status_codes",
    "trawl.mime_types",
    "trawl.first_run",
]


def record_from_doc(source: Mapping[str, Any], new: bool = False) -> UrlRecord:
    """The row view of a document (``_source``, full or filtered to :data:`READ_FIELDS`)."""
    url = source.get("url", {})
    trawl = source.get("trawl", {})
    return UrlRecord(
        url.get("full", ""),
        url.get("domain", ""),
        sorted(trawl.get("sources") or []),
        trawl.get("first_seen"),
        trawl.get("last_seen"),
        int(trawl.get("captures") or 0),
        sorted({str(s) for s in trawl.get("status_codes") or []}),
        sorted(trawl.get("mime_types") or []),
        new,
    )
