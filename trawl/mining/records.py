"""The record kinds mining stores: ``endpoint``, ``secret`` and ``mined``.

Declared like every kind (:mod:`trawl.records.kinds`: ``KEY`` and ``MERGE``), so
they travel the same spiders -> hooks -> stores path as URLs and the response
index, and any store that keeps keyed kinds keeps them without code of its own.

* ``endpoint``: one use of a URL in one file (``digest``), keyed by the file, the
  URL, the method and how it is used; the parameter names as comma-joined sorted
  text (a store keeps flat columns); ``first_seen``/``last_seen``: the earliest and
  latest capture timestamps of the captures that share the file's digest.
* ``secret``: a match of a secret pattern in a file, stored in full (the user asked
  with ``-a secrets=true``); the logs only ever show :func:`mask` of it.
* ``mined``: one row per file digest mined (with its captures' span), so a rerun mines nothing twice; its
  ``params`` (names not tied to one endpoint: JSON keys, input names) feed
  ``trawl params``. ``secrets`` (``max``) says whether secrets were looked for,
  so a later ``-a secrets=true`` run mines the files mined without them again.

``method`` is part of the key and a key column cannot be null: an unknown method
is stored as ``""`` and shown as ``-`` (a plain link is not a GET: it is unknown).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from trawl.mining.findings import FileFindings
from trawl.records.batches import Batch, UrlBatch

ENDPOINT_SCHEMA = {
    "digest": pl.String,
    "endpoint": pl.String,
    "method": pl.String,
    "how": pl.String,
    "host": pl.String,
    "query": pl.String,
    "body": pl.String,
    "headers": pl.String,
    "line": pl.Int64,
    "path": pl.String,
    "file_url": pl.String,
    "file_host": pl.String,
    "first_seen": pl.String,
    "last_seen": pl.String,
}

SECRET_SCHEMA = {
    "digest": pl.String,
    "rule": pl.String,
    "value": pl.String,
    "line": pl.Int64,
    "path": pl.String,
    "file_url": pl.String,
    "file_host": pl.String,
    "first_seen": pl.String,
    "last_seen": pl.String,
}

MINED_SCHEMA = {
    "digest": pl.String,
    "reader": pl.String,
    "endpoints": pl.Int64,
    "secrets": pl.Boolean,
    "params": pl.String,
    "path": pl.String,
    "file_host": pl.String,
    "first_seen": pl.String,
    "last_seen": pl.String,
}

_SPAN = {"first_seen": "min", "last_seen": "max"}


class EndpointBatch(Batch):
    """Endpoints mined from stored responses, one row per (file, URL, method, use)."""

    __slots__ = ()
    EXPORTED = False  # a responses run's -o is its index; `trawl endpoints` lists these
    kind = "endpoint"
    SCHEMA = ENDPOINT_SCHEMA
    KEY = ("digest", "endpoint", "method", "how")
    MERGE = {**_SPAN, "line": "min", "file_url": "first", "path": "first"}


class SecretBatch(Batch):
    """Secrets found in stored responses (``-a secrets=true``), stored in full."""

    __slots__ = ()
    EXPORTED = False
    kind = "secret"
    SCHEMA = SECRET_SCHEMA
    KEY = ("digest", "rule", "value")
    MERGE = {**_SPAN, "line": "min", "file_url": "first", "path": "first"}


class MinedBatch(Batch):
    """Which file digests were mined (and with secrets or not): a rerun mines nothing twice."""

    __slots__ = ()
    EXPORTED = False
    kind = "mined"
    SCHEMA = MINED_SCHEMA
    KEY = ("digest",)
    #: The span is that of the captures known when the file was mined, widened since
    #: (:mod:`trawl.mining.spans`): what a later capture of the same digest is compared with.
    MERGE = {"secrets": "max", **_SPAN}


@dataclass(frozen=True, slots=True)
class MinedFile:
    """One stored file to mine: its digest, where it is, which URL it was and its captures' span."""

    digest: str
    path: str
    url: str
    host: str
    mime: str | None
    first_seen: str | None
    last_seen: str | None


class MinedUrlBatch(UrlBatch):
    """The in-scope URLs mining found: stored like any URLs, not in a responses run's ``-o``."""

    __slots__ = ()
    EXPORTED = False


def joined(names: Iterable[str]) -> str:
    """Parameter names as stored: sorted, unique, comma-joined (``""`` for none)."""
    return ",".join(sorted({n for n in names if n}))


def split(text: str | None) -> list[str]:
    """The stored comma-joined names back as a list."""
    return [n for n in (text or "").split(",") if n]


def mask(value: str) -> str:
    """A secret as a log line may show it: its first 4 characters, the rest starred (at most 8 stars)."""
    shown = value[:4] if len(value) > 8 else ""
    return shown + "*" * min(8, max(4, len(value) - len(shown)))


def endpoint_rows(file: MinedFile, findings: FileFindings) -> list[dict[str, object]]:
    """The ``endpoint`` rows of one mined file."""
    from urllib.parse import urlsplit

    rows = []
    for found in findings.endpoints:
        try:
            host = (urlsplit(found.url).hostname or "").lower()
        except ValueError:
            host = ""
        rows.append(
            {
                "digest": file.digest,
                "endpoint": found.url,
                "method": (found.method or "").upper(),
                "how": found.how,
                "host": host or None,
                "query": joined(found.query),
                "body": joined(found.body),
                "headers": joined(found.headers),
                "line": found.line,
                "path": file.path,
                "file_url": file.url,
                "file_host": file.host,
                "first_seen": file.first_seen,
                "last_seen": file.last_seen,
            }
        )
    return rows


def secret_rows(file: MinedFile, findings: FileFindings) -> list[dict[str, object]]:
    """The ``secret`` rows of one mined file (values in full: for the store only)."""
    return [
        {
            "digest": file.digest,
            "rule": found.rule,
            "value": found.value,
            "line": found.line,
            "path": file.path,
            "file_url": file.url,
            "file_host": file.host,
            "first_seen": file.first_seen,
            "last_seen": file.last_seen,
        }
        for found in findings.secrets
    ]


def mined_row(file: MinedFile, findings: FileFindings | None, secrets: bool) -> dict[str, object]:
    """The ``mined`` row of one file (``findings`` None: it could not be read; mined, nothing found)."""
    return {
        "digest": file.digest,
        "reader": findings.reader if findings is not None else "unreadable",
        "endpoints": len(findings.endpoints) if findings is not None else 0,
        "secrets": secrets,
        "params": joined(findings.params) if findings is not None else "",
        "path": file.path,
        "file_host": file.host,
        "first_seen": file.first_seen,
        "last_seen": file.last_seen,
    }


def frame(schema: dict[str, object], rows: list[dict[str, object]]) -> pl.DataFrame:
    """Rows as a frame of ``schema`` (an empty one when there are none)."""
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)
