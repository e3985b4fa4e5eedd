"""crates.io API answers as the dump's record kinds: the same columns, met by the same ids.

The API names a crate by its name only (its ``id`` is the name): the integer
id the dump's tables key crates by is not in any answer. Versions and
dependencies carry their own integer ids, but refer to crates by name. So a
crate's id comes from the store (a db-dump loaded before: the usual first run,
after which the API modes top it up), and a crate the store does not know gets
a **stand-in id**: negative, so it can never be a real one, and derived from
the name (the same in every run, so a second API run meets the same row). A
later dump load writes such a crate under its real id beside the stand-in row;
versions and dependencies, keyed by their own real ids, are corrected by it.

One answer's rows are made in Python (an answer is one crate: tens of rows,
a few thousand for a crate with many versions), then handed on as polars
frames of the kinds' schemas, like the dump's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson
import polars as pl

from trawl.sources.crates.records import CrateBatch, DependencyBatch, VersionBatch, VersionDownloadBatch


class AnswerError(ValueError):
    """A JSON answer without what crates.io always sends: the message says what is missing."""


def stand_in_id(name: str) -> int:
    """A crate's id when the store does not know it: negative (real ids are positive), from the name."""
    digest = hashlib.blake2b(name.encode(), digest_size=7).digest()
    return -(int.from_bytes(digest, "big") + 1)


def crate_id(ids: Mapping[str, int], name: str) -> int:
    return ids.get(name) or stand_in_id(name)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _object(data: Any, key: str, what: str) -> dict[str, Any]:
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, dict):
        raise AnswerError(f"{what}: no {key!r} object in the answer")
    return value


def _list(data: Any, key: str, what: str) -> list[Any]:
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, list):
        raise AnswerError(f"{what}: no {key!r} list in the answer")
    return value


def listed_crates(data: Any) -> tuple[list[tuple[str, str | None]], str | None]:
    """A listing page: ``(name, updated_at)`` of each crate, and ``meta.next_page`` (``None``: the last)."""
    rows = _list(data, "crates", "the crate listing")
    listed: list[tuple[str, str | None]] = []
    for row in rows:
        name = _text(row.get("name") if isinstance(row, dict) else None)
        if not name:
            raise AnswerError("the crate listing: a crate without a name")
        listed.append((name, _text(row.get("updated_at"))))
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    return listed, _text(meta.get("next_page")) or None


def crate_frames(data: Any, ids: Mapping[str, int], mode: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``/api/v1/crates/{name}``: the crate's row and its versions' rows."""
    crate = _object(data, "crate", "the crate")
    name = _text(crate.get("name"))
    if not name:
        raise AnswerError("the crate: no name in the answer")
    own_id = crate_id(ids, name)
    versions = _list(data, "versions", f"crate {name}")
    rows = []
    default_id = None
    for version in versions:
        if not isinstance(version, dict) or _int(version.get("id")) is None or not _text(version.get("num")):
            raise AnswerError(f"crate {name}: a version without an id or a number")
        if version["num"] == crate.get("default_version"):
            default_id = version["id"]
        rows.append(
            {
                "id": version["id"],
                "crate_id": own_id,
                "num": version["num"],
                "created_at": _text(version.get("created_at")),
                "updated_at": _text(version.get("updated_at")),
                "downloads": _int(version.get("downloads")),
                "yanked": _bool(version.get("yanked")),
                "license": _text(version.get("license")),
                "crate_size": _int(version.get("crate_size")),
                "rust_version": _text(version.get("rust_version")),
                "mode": mode,
            }
        )
    crate_row = {
        "id": own_id,
        "name": name,
        "created_at": _text(crate.get("created_at")),
        "updated_at": _text(crate.get("updated_at")),
        "description": _text(crate.get("description")),
        "homepage": _text(crate.get("homepage")),
        "documentation": _text(crate.get("documentation")),
        "repository": _text(crate.get("repository")),
        "downloads": _int(crate.get("downloads")),
        "default_version_id": default_id,
        "mode": mode,
    }
    return (
        pl.DataFrame([crate_row], schema=CrateBatch.SCHEMA, orient="row"),
        pl.DataFrame(rows, schema=VersionBatch.SCHEMA, orient="row"),
    )


def download_frame(data: Any, name: str, mode: str) -> pl.DataFrame:
    """``/downloads``: one row per version and day (``meta.extra_downloads``, the versions no
    longer listed one by one, has no version to key by and is left out)."""
    rows = []
    for entry in _list(data, "version_downloads", f"the downloads of crate {name}"):
        version, day = (
            (_int(entry.get("version")), _text(entry.get("date")))
            if isinstance(entry, dict)
            else (None, None)
        )
        if version is None or not day:
            raise AnswerError(f"the downloads of crate {name}: an entry without a version or a date")
        rows.append(
            {"version_id": version, "date": day, "downloads": _int(entry.get("downloads")), "mode": mode}
        )
    return pl.DataFrame(rows, schema=VersionDownloadBatch.SCHEMA, orient="row")


def dependency_frame(data: Any, ids: Mapping[str, int], where: str, mode: str) -> pl.DataFrame:
    """``/{version}/dependencies``: ``crate_id`` is the depended-on crate's *name* there."""
    rows = []
    for entry in _list(data, "dependencies", f"the dependencies of {where}"):
        if not isinstance(entry, dict) or _int(entry.get("id")) is None or not _text(entry.get("crate_id")):
            raise AnswerError(f"the dependencies of {where}: an entry without an id or a crate")
        features = entry.get("features")
        rows.append(
            {
                "id": entry["id"],
                "version_id": _int(entry.get("version_id")),
                "crate_id": crate_id(ids, entry["crate_id"]),
                "req": _text(entry.get("req")),
                "optional": _bool(entry.get("optional")),
                "default_features": _bool(entry.get("default_features")),
                "features": orjson.dumps(features).decode() if isinstance(features, list) else None,
                "target": _text(entry.get("target")),
                "kind": _text(entry.get("kind")),
                "explicit_name": _text(entry.get("explicit_name")),
                "mode": mode,
            }
        )
    return pl.DataFrame(rows, schema=DependencyBatch.SCHEMA, orient="row")
