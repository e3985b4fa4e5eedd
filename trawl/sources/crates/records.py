"""The crates.io record kinds: declared once, stored by any store (:mod:`trawl.records.kinds`).

Every kind is keyed by the dump's integer ``id``, not by its natural key
(crate name; crate and version number), on purpose: the dump's tables refer to
each other by id and come in tar order, not in join order (``crate_downloads``
and ``default_versions`` come before ``crates`` and ``versions``). Keyed by id,
each table's rows land on their own as partial records, and the ``last`` merge
rule (the newest non-null value wins) joins them in the store, with no table
held in memory for a join. The natural keys are columns (``name``;
``crate_id`` + ``num``), unique in the registry.

The cost of ``last``: a value that becomes NULL upstream (a description
removed) keeps its old value until snapshot switching (a later step) replaces
a whole snapshot.

Timestamps are text, ISO 8601 in UTC as the crates.io API writes them
(``2020-01-01T12:11:10.999999Z``), whatever the dump's spelling.

``mode`` is the provenance of a row: which mode of the source wrote it last
(``api``, ``incremental``; NULL where only a dump wrote it, until the dump
side sets ``dump``); ``first_run``/``last_run`` in the store say which run.
The API modes meet the dump's rows by id: the id a crate has in the store
(a dump loaded before), else a stand-in (:mod:`.apirecords`). Crates and
versions declare ``NEWER = "updated_at"``: a stored row with a newer
``updated_at`` keeps its values when an older copy is written (an old dump
after an API top-up).
"""

from __future__ import annotations

import polars as pl

from trawl.records.batches import Batch


class CrateBatch(Batch):
    """Crates, one per dump id; ``downloads`` and ``default_version_id`` come from their own tables."""

    __slots__ = ()
    kind = "crate"
    SCHEMA = {
        "id": pl.Int64,
        "name": pl.String,
        "created_at": pl.String,
        "updated_at": pl.String,
        "description": pl.String,
        "homepage": pl.String,
        "documentation": pl.String,
        "repository": pl.String,
        "downloads": pl.Int64,
        "default_version_id": pl.Int64,
        "mode": pl.String,
    }
    KEY = ("id",)
    MERGE: dict[str, str] = {}  # every column "last": the newest dump's non-null value
    NEWER = "updated_at"


class VersionBatch(Batch):
    """Versions of every crate: ``crate_id`` + ``num`` is the natural key."""

    __slots__ = ()
    kind = "version"
    SCHEMA = {
        "id": pl.Int64,
        "crate_id": pl.Int64,
        "num": pl.String,
        "created_at": pl.String,
        "updated_at": pl.String,
        "downloads": pl.Int64,
        "yanked": pl.Boolean,
        "license": pl.String,
        "crate_size": pl.Int64,
        "rust_version": pl.String,
        "mode": pl.String,
    }
    KEY = ("id",)
    MERGE: dict[str, str] = {}
    NEWER = "updated_at"


class DependencyBatch(Batch):
    """One dependency of one version: ``version_id`` depends on ``crate_id`` (the depended-on crate).

    ``kind`` is the API's word (``normal``, ``build``, ``dev``; the dump's 0/1/2);
    ``features`` a JSON array of text (SQLite has no list type).
    """

    __slots__ = ()
    kind = "dependency"
    SCHEMA = {
        "id": pl.Int64,
        "version_id": pl.Int64,
        "crate_id": pl.Int64,
        "req": pl.String,
        "optional": pl.Boolean,
        "default_features": pl.Boolean,
        "features": pl.String,
        "target": pl.String,
        "kind": pl.String,
        "explicit_name": pl.String,
        "mode": pl.String,
    }
    KEY = ("id",)
    MERGE: dict[str, str] = {}


class VersionDownloadBatch(Batch):
    """Downloads of one version on one day (the API's ``/downloads``: the last 90 days).

    Keyed by its natural key, ``version_id`` + ``date`` (``YYYY-MM-DD``): the same
    day read again (the day is not over, or a later run) replaces the count.
    """

    __slots__ = ()
    kind = "version_download"
    SCHEMA = {"version_id": pl.Int64, "date": pl.String, "downloads": pl.Int64, "mode": pl.String}
    KEY = ("version_id", "date")
    MERGE: dict[str, str] = {}


#: Every kind the crates source yields.
CRATES_KINDS: tuple[type[Batch], ...] = (CrateBatch, VersionBatch, DependencyBatch, VersionDownloadBatch)
