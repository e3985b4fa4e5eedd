"""The dependency graph's questions: ``deps NAME`` and ``rdeps NAME [--transitive]``.

The graph is that of each crate's *current* version, as crates.io's own
"dependents" page counts it: its default version (``default_version_id``, the
dump's ``default_versions`` or the API's), else its newest version not yanked,
else its newest. A crate depends on another when its current version has a
dependency on it, of the kinds asked for (all three by default: normal, build,
dev). Each answer is a few joins over whole columns (polars); the transitive
closure is a breadth-first walk, one join per level, never a row in Python.

``rdeps --transitive`` gives every crate that reaches NAME, at its shortest
distance (``depth`` 1: depends on NAME itself), with each dependency it has on a
crate of the level before (``requires`` and its ``req``): for a direct dependent
that is NAME and the versions of NAME it requires.
"""

from __future__ import annotations

import polars as pl

from trawl.commands._crates_questions.layers import Layer
from trawl.errors import TrawlUsageError
from trawl.sources.crates.records import CrateBatch, DependencyBatch, VersionBatch

DEPENDENCY_KINDS = ("normal", "build", "dev")


def crate_names(layer: Layer) -> pl.DataFrame:
    """``crate_id``, ``name`` of every stored crate."""
    return layer.read(CrateBatch, ["id", "name"]).rename({"id": "crate_id"})


def crate_id(names: pl.DataFrame, name: str) -> int:
    """The id of crate ``name`` (crates.io names are case-insensitive); a usage error if unknown."""
    found = names.filter(pl.col("name").str.to_lowercase() == name.lower())
    if not found.height:
        raise TrawlUsageError(f"no crate named {name!r} in the store")
    return int(found.get_column("crate_id")[0])


def current_versions(layer: Layer) -> pl.DataFrame:
    """``crate_id``, ``version_id``, ``num``: each crate's current version (see the module docstring)."""
    versions = layer.read(VersionBatch, ["id", "crate_id", "num", "created_at", "yanked"])
    versions = versions.with_columns(pl.col("yanked").fill_null(False))
    newest = (
        versions.sort(["crate_id", "yanked", "created_at", "id"], descending=[False, False, True, True])
        .group_by("crate_id", maintain_order=True)
        .first()
        .select("crate_id", pl.col("id").alias("newest"))
    )
    defaults = (
        layer.read(CrateBatch, ["id", "default_version_id"])
        .join(
            versions.select("id", "crate_id"),
            left_on=["default_version_id", "id"],
            right_on=["id", "crate_id"],
        )
        .select(pl.col("id").alias("crate_id"), pl.col("default_version_id").alias("default"))
    )
    current = newest.join(defaults, on="crate_id", how="left").select(
        "crate_id", pl.coalesce("default", "newest").alias("version_id")
    )
    return current.join(versions.select(pl.col("id").alias("version_id"), "num"), on="version_id", how="left")


def _named(frame: pl.DataFrame, names: pl.DataFrame, column: str, alias: str) -> pl.DataFrame:
    """``frame`` with the name of the crate in ``column`` as ``alias``; ``#ID`` for a crate the
    store has no row of (a dependency on a crate an API run did not fetch)."""
    looked = frame.join(names.rename({"crate_id": column, "name": alias}), on=column, how="left")
    return looked.with_columns(pl.coalesce(alias, pl.lit("#") + pl.col(column).cast(pl.String)).alias(alias))


def edges(layer: Layer, kinds: tuple[str, ...] = DEPENDENCY_KINDS) -> pl.DataFrame:
    """``dependent``, ``dependency`` (crate ids), ``req``, ``kind``, ``optional``, ``target``: the current
    versions' dependencies of these kinds."""
    deps = layer.read(DependencyBatch, ["version_id", "crate_id", "req", "kind", "optional", "target"])
    deps = deps.with_columns(pl.col("kind").fill_null("normal")).filter(pl.col("kind").is_in(list(kinds)))
    current = current_versions(layer).select(pl.col("crate_id").alias("dependent"), "version_id")
    return deps.join(current, on="version_id").select(
        "dependent", pl.col("crate_id").alias("dependency"), "req", "kind", "optional", "target"
    )


def deps(layer: Layer, name: str, version: str | None = None) -> pl.DataFrame:
    """The dependencies of ``name``'s current version (or of version ``version``): one row each."""
    names = crate_names(layer)
    target = crate_id(names, name)
    if version is None:
        chosen = current_versions(layer).filter(pl.col("crate_id") == target)
    else:
        versions = layer.read(VersionBatch, ["id", "crate_id", "num"])
        chosen = versions.filter((pl.col("crate_id") == target) & (pl.col("num") == version)).select(
            pl.col("id").alias("version_id"), "num"
        )
        if not chosen.height:
            raise TrawlUsageError(f"crate {name!r} has no version {version!r} in the store")
    if not chosen.height:
        raise TrawlUsageError(f"crate {name!r} has no versions in the store")
    version_id = int(chosen.get_column("version_id")[0])
    shown = chosen.get_column("num")[0]
    found = layer.read(DependencyBatch, ["version_id", "crate_id", "req", "kind", "optional", "target"])
    found = found.filter(pl.col("version_id") == version_id).with_columns(pl.col("kind").fill_null("normal"))
    return (
        _named(found, names, "crate_id", "name")
        .select("name", "req", "kind", "optional", "target", pl.lit(shown, pl.String).alias("of_version"))
        .sort(["kind", "name", "req"])
    )


def rdeps(
    layer: Layer, name: str, transitive: bool = False, kinds: tuple[str, ...] = DEPENDENCY_KINDS
) -> pl.DataFrame:
    """Crates whose current version depends on ``name`` (and, ``transitive``, on those, ...).

    One row per dependency on a crate of the level before: ``name``, ``req``,
    ``kind``, ``depth``, ``requires`` (see the module docstring).
    """
    names = crate_names(layer)
    target = crate_id(names, name)
    graph = edges(layer, kinds).filter(pl.col("dependent") != pl.col("dependency"))
    seen = pl.DataFrame({"crate_id": [target]}, schema={"crate_id": pl.Int64})
    level = seen
    found = []
    depth = 0
    while level.height:
        depth += 1
        step = graph.join(level, left_on="dependency", right_on="crate_id", how="semi").join(
            seen, left_on="dependent", right_on="crate_id", how="anti"
        )
        found.append(step.with_columns(pl.lit(depth, pl.Int64).alias("depth")))
        level = step.select(pl.col("dependent").alias("crate_id")).unique()
        seen = pl.concat([seen, level])
        if not transitive:
            break
    rows = pl.concat(found)
    rows = _named(_named(rows, names, "dependent", "name"), names, "dependency", "requires")
    return rows.select("name", "req", "kind", "depth", "requires").sort(
        ["depth", "name", "requires", "kind", "req"]
    )
