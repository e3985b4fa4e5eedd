"""The download questions: ``top``, ``trends``, ``updated``; the growth windows the alerts share.

Downloads per crate and day are the ``version_download`` rows (the dump's last
90 days, the API's ``/downloads``) together with the ``version_download_archive``
rows (the older days ``-a history=`` keeps apart, because each dump load replaces
``version_download`` whole), summed over each crate's versions. A version and
day both kinds hold counts once, the dump's row winning: a window reaching past
the dump's 90 days is answered from the archived days. A window
of ``days`` days ends on the newest day the data has (the day the dump or the
top-up was made, not today: an answer does not drift while the data stands
still); *last* is the sum over that window, *previous* over the ``days`` before
it, a day with no row counting 0. *growth* is last / previous, empty (infinite)
when previous is 0.

``trends --growth F --window D``: the crates whose last window has at least F
times the previous one (``last >= F * previous``) and at least ``min_downloads``
(default 1: a crate with no downloads never trends), fastest growing first.
All of it whole-column polars: one join and one group-by over the rows.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl

from trawl.commands._crates_questions.graph import crate_names, current_versions
from trawl.commands._crates_questions.layers import Layer
from trawl.errors import TrawlUsageError
from trawl.sources.crates.archive import VersionDownloadArchiveBatch
from trawl.sources.crates.records import CrateBatch, VersionBatch, VersionDownloadBatch

TOP_BY = ("downloads", "recent", "growth")
_WINDOW_SCHEMA = {"crate_id": pl.Int64, "last": pl.Int64, "previous": pl.Int64}


def version_days(layer: Layer) -> pl.DataFrame:
    """``version_id``, ``date``, ``downloads``: the dump's rows and the archived ones it lacks
    (one row per version and day, the dump's winning: see the module docstring)."""
    columns = ["version_id", "date", "downloads"]
    dump = layer.read(VersionDownloadBatch, columns)
    archived = layer.read(VersionDownloadArchiveBatch, columns)
    if not archived.height:
        return dump
    older = archived.unique(["version_id", "date"], keep="last").join(
        dump.select("version_id", "date"), on=["version_id", "date"], how="anti"
    )
    return pl.concat([dump, older.select(columns)], how="vertical")


def daily(layer: Layer) -> pl.DataFrame:
    """``crate_id``, ``day`` (a date), ``downloads``: each crate's downloads per day."""
    rows = version_days(layer)
    versions = layer.read(VersionBatch, ["id", "crate_id"]).rename({"id": "version_id"})
    return (
        rows.join(versions, on="version_id")
        .with_columns(pl.col("date").str.to_date("%Y-%m-%d", strict=False).alias("day"))
        .filter(pl.col("day").is_not_null())
        .group_by("crate_id", "day")
        .agg(pl.col("downloads").fill_null(0).sum())
    )


def windows(per_day: pl.DataFrame, days: int) -> tuple[pl.DataFrame, date | None]:
    """``crate_id``, ``last``, ``previous`` (see the module docstring) and the day the last window ends."""
    if not per_day.height:
        return pl.DataFrame(schema=_WINDOW_SCHEMA), None
    end = per_day.get_column("day").max()
    assert isinstance(end, date)
    last_start = end - timedelta(days=days - 1)
    previous_start = last_start - timedelta(days=days)
    day = pl.col("day")
    sums = per_day.group_by("crate_id").agg(
        pl.col("downloads").filter(day >= last_start).sum().alias("last"),
        pl.col("downloads").filter((day >= previous_start) & (day < last_start)).sum().alias("previous"),
    )
    return sums.select(_WINDOW_SCHEMA.keys()).cast(_WINDOW_SCHEMA), end  # type: ignore[arg-type]


def _growth() -> pl.Expr:
    previous = pl.col("previous")
    return pl.when(previous > 0).then(pl.col("last") / previous).otherwise(None).alias("growth")


def growing(layer: Layer, factor: float, days: int, min_downloads: int = 1) -> pl.DataFrame:
    """``crate_id``, ``name``, ``previous``, ``last``, ``growth``: crates at least ``factor`` times up."""
    sums, _ = windows(daily(layer), days)
    picked = sums.filter(
        (pl.col("last") >= factor * pl.col("previous")) & (pl.col("last") >= max(min_downloads, 1))
    ).with_columns(_growth())
    named = picked.join(crate_names(layer), on="crate_id", how="left")
    return named.select("crate_id", "name", "previous", "last", "growth").sort(
        ["growth", "last", "name"], descending=[True, True, False], nulls_last=False
    )


def trends(layer: Layer, factor: float, days: int, min_downloads: int = 1) -> pl.DataFrame:
    """``trends``: :func:`growing` as printed (no ids)."""
    return growing(layer, factor, days, min_downloads).drop("crate_id")


def top(layer: Layer, by: str, days: int, limit: int | None) -> pl.DataFrame:
    """``top --by downloads|recent|growth``: all-time downloads, the last ``days`` days' downloads,
    or growth over the ``days`` before (crates with no download in the last window left out)."""
    if by not in TOP_BY:
        raise TrawlUsageError(f"--by takes one of {', '.join(TOP_BY)}, not {by!r}")
    crates = layer.read(CrateBatch, ["id", "name", "downloads"]).rename({"id": "crate_id"})
    sums, _ = windows(daily(layer), days)
    rows = (
        crates.join(sums, on="crate_id", how="left")
        .with_columns(pl.col("last").fill_null(0), pl.col("previous").fill_null(0))
        .with_columns(_growth())
        .join(
            current_versions(layer).select("crate_id", pl.col("num").alias("version")),
            on="crate_id",
            how="left",
        )
    )
    if by == "downloads":
        rows = rows.sort(["downloads", "name"], descending=[True, False], nulls_last=True)
    elif by == "recent":
        rows = rows.sort(["last", "name"], descending=[True, False])
    else:
        rows = rows.filter(pl.col("last") > 0).sort(
            ["growth", "last", "name"], descending=[True, True, False], nulls_last=False
        )
    rows = rows.select("name", "version", "downloads", "last", "previous", "growth")
    return rows.head(limit) if limit is not None else rows


def parse_since(text: str) -> str:
    """``--since``: a date or an ISO 8601 time, as the text ``updated_at`` is compared with."""
    value = text.strip()
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise TrawlUsageError(
            f"--since takes a date (2026-09-01) or an ISO 8601 time, not {text!r}"
        ) from None
    if parsed.tzinfo is not None and parsed.utcoffset():
        raise TrawlUsageError(f"--since: give the time in UTC (with Z or no offset), not {text!r}")
    return parsed.strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0").rstrip(".")


def updated(layer: Layer, since: str) -> pl.DataFrame:
    """``updated --since``: crates whose ``updated_at`` is at or after ``since``, newest first.

    Times are compared as text without their ``Z`` (the store's ``NEWER`` rule): ISO 8601 in UTC
    with or without fractions, a shorter one a prefix of a longer one.
    """
    crates = layer.read(CrateBatch, ["id", "name", "updated_at", "downloads"]).rename({"id": "crate_id"})
    stamp = pl.col("updated_at").str.strip_chars_end("Z")
    picked = crates.filter(stamp >= since)
    versions = current_versions(layer).select("crate_id", pl.col("num").alias("version"))
    return (
        picked.join(versions, on="crate_id", how="left")
        .select("name", "version", "updated_at", "downloads")
        .sort(["updated_at", "name"], descending=[True, False])
    )
