"""The crates.io record kinds: declared once, stored by any store (:mod:`trawl.records.kinds`).

The crate, version and dependency kinds are keyed by the dump's integer ``id``,
not by their natural key (crate name; crate and version number), on purpose: the
dump's tables refer to each other by id and come in archive order, not in join
order (``crate_downloads`` comes before ``crates``, ``default_versions`` after).
Keyed by id, each table's rows land on their own as partial records, and the
``last`` merge rule (the newest non-null value wins) joins them in the store,
with no table held in memory for a join. The natural keys are columns (``name``;
``crate_id`` + ``num``), unique in the registry. The other kinds are keyed by what
names a row: ``version_id`` + ``date`` (version downloads), both ids of a join
table, ``crate_id`` + ``owner_id`` + ``owner_kind`` (owners), else the dump's id.

A dump is loaded as one snapshot (:func:`trawl.records.kinds.staged`): its rows
are staged apart and :class:`DumpSnapshotBatch`, written last, makes them the live
records of every kind at once, so a value that became NULL upstream, or a row
deleted upstream, is gone with the next dump (the ``last`` rule joins the partial
records within one snapshot only).

Timestamps are text, ISO 8601 in UTC as the crates.io API writes them
(``2020-01-01T12:11:10.999999Z``), whatever the dump's spelling.

``mode`` is the provenance of a row: which mode of the source wrote it last
(``dump``, ``api``, ``incremental``); ``first_run``/``last_run`` in the store
say which run.
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


def _kind(name: str, doc: str, schema: dict[str, object], key: tuple[str, ...]) -> type[Batch]:
    """A declared kind whose every non-key column takes the newest non-null value (``last``)."""
    return type(
        "".join(part.title() for part in name.split("_")) + "Batch",
        (Batch,),
        {"__slots__": (), "__doc__": doc, "kind": name, "SCHEMA": schema, "KEY": key, "MERGE": {},
         "__module__": __name__},
    )  # fmt: skip


S, N = pl.String, pl.Int64
VersionDownloadBatch = _kind(
    "version_download",
    "Downloads of one version on one day (the dump's last 90 days, the API's ``/downloads``):"
    " version + date is the key; the same day read again replaces the count.",
    {"version_id": N, "date": S, "downloads": N, "mode": S},
    ("version_id", "date"),
)
KeywordBatch = _kind(
    "keyword",
    "Keywords (``keyword`` is unique).",
    {"id": N, "keyword": S, "crates_cnt": N, "created_at": S},
    ("id",),
)
CategoryBatch = _kind(
    "category",
    "Categories (``slug`` is unique; ``path`` its place in the tree).",
    {"id": N, "category": S, "slug": S, "description": S, "path": S, "crates_cnt": N, "created_at": S},
    ("id",),
)
CrateKeywordBatch = _kind(
    "crate_keyword",
    "Which crate has which keyword.",
    {"crate_id": N, "keyword_id": N},
    ("crate_id", "keyword_id"),
)
CrateCategoryBatch = _kind(
    "crate_category", "Which crate is in which category.", {"crate_id": N, "category_id": N},
    ("crate_id", "category_id"),
)  # fmt: skip
CrateOwnerBatch = _kind(
    "crate_owner",
    "Who owns a crate: ``owner_kind`` ``user`` (a row of users) or ``team`` (teams); the dump's 0/1.",
    {"crate_id": N, "owner_id": N, "owner_kind": S, "created_at": S, "created_by": N},
    ("crate_id", "owner_id", "owner_kind"),
)
UserBatch = _kind(
    "user", "Users who own crates (``gh_login`` is their GitHub login).",
    {"id": N, "gh_login": S, "gh_id": N, "name": S, "gh_avatar": S}, ("id",),
)  # fmt: skip
TeamBatch = _kind(
    "team", "GitHub teams that own crates (``login`` like ``github:org:team``).",
    {"id": N, "login": S, "github_id": N, "name": S, "avatar": S, "org_id": N}, ("id",),
)  # fmt: skip
DeletedCrateBatch = _kind(
    "deleted_crate",
    "Crates deleted by their owners: the name may be taken again from ``available_at``.",
    {"id": N, "name": S, "created_at": S, "deleted_at": S, "deleted_by": N, "message": S, "available_at": S},
    ("id",),
)


class DumpSnapshotBatch(Batch):
    """One row per db-dump loaded: what it said of itself (``metadata.json``, ``metadata.csv``),
    and what it held. Written last, in the transaction that makes the dump's rows the live ones
    (:attr:`SWITCHES`), so its newest ``timestamp`` is the snapshot the store holds."""

    __slots__ = ()
    kind = "crates_dump"
    SCHEMA = {
        "snapshot": pl.String,
        "timestamp": pl.String,
        "crates_io_commit": pl.String,
        "total_downloads": pl.Int64,
        "tables": pl.Int64,
        "rows": pl.Int64,
    }
    KEY = ("snapshot",)
    MERGE: dict[str, str] = {}


#: Every kind the crates source yields from the dump, in the order of the dump's tables.
CRATES_KINDS: tuple[type[Batch], ...] = (
    CrateBatch, VersionBatch, DependencyBatch, VersionDownloadBatch, KeywordBatch, CategoryBatch,
    CrateKeywordBatch, CrateCategoryBatch, CrateOwnerBatch, UserBatch, TeamBatch, DeletedCrateBatch,
)  # fmt: skip
DumpSnapshotBatch.SWITCHES = tuple(k.kind for k in CRATES_KINDS)
