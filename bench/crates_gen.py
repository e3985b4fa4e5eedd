"""A crates.io db-dump of realistic shape, generated with polars (no per-row Python).

Scale 1.0 is 200,000 crates, 2,000,000 versions, 12,000,000
dependencies, 90 days of version downloads for 10% of the versions, with the
real layout (``YYYY-MM-DD-HHMMSS/metadata.json``, ``data/*.csv`` in
alphabetical order) and PostgreSQL's CSV conventions (``t``/``f``, ``{a,b}``,
NULL as an unquoted empty field, multi-line quoted READMEs). Values are
pseudo-random from hashes of the row number, so a scale always gives the
same dump. The CSVs are written to a folder, then packed with ``tar | gzip``
(the tar.gz) or Python's ``zipfile`` (the zip, one deflated member per file).

    python bench/crates_gen.py OUT_DIR [--scale 0.1] [--zip]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import zipfile
from pathlib import Path

import polars as pl

SNAPSHOT = "2026-09-01-020003"
TIMESTAMP = "2026-09-01T02:00:03Z"
COUNTS = {"crates": 200_000, "versions": 2_000_000, "dependencies": 12_000_000}


def _h(seed: int, modulo: int) -> pl.Expr:
    """A pseudo-random whole number in [0, modulo) per row (of the ``n`` column)."""
    return (pl.col("n").hash(seed) % modulo).cast(pl.Int64)


def _ts(seed: int) -> pl.Expr:
    """A timestamp as PostgreSQL writes it: ``2019-03-04 05:06:07.123456``."""
    seconds = pl.lit(1_420_000_000) + _h(seed, 360_000_000)
    return pl.from_epoch(seconds, time_unit="s").dt.strftime("%Y-%m-%d %H:%M:%S") + ".123456"


def _bool(seed: int, percent: int) -> pl.Expr:
    return pl.when(_h(seed, 100) < percent).then(pl.lit("t")).otherwise(pl.lit("f"))


def _rows(count: int) -> pl.DataFrame:
    return pl.DataFrame({"n": pl.int_range(0, count, eager=True)})


def crates(count: int) -> pl.DataFrame:
    readme = (
        pl.lit("# crate ")
        + pl.col("n").cast(pl.String)
        + pl.lit('\n\nA "quoted" line, with commas\n')
        + pl.lit("Lorem ipsum dolor sit amet. ").repeat_by(_h(7, 40)).list.join("")
    )
    return _rows(count).select(
        _ts(1).alias("created_at"),
        (pl.lit("Crate number ") + pl.col("n").cast(pl.String) + ", for things").alias("description"),
        pl.when(_h(2, 3) == 0).then(None).otherwise(pl.lit("https://docs.rs/c")).alias("documentation"),
        pl.when(_h(3, 2) == 0).then(None).otherwise(pl.lit("https://example.com/h")).alias("homepage"),
        (pl.col("n") + 1).alias("id"),
        pl.lit(None, pl.String).alias("max_features"),
        pl.lit(None, pl.String).alias("max_upload_size"),
        (pl.lit("crate-") + pl.col("n").cast(pl.String)).alias("name"),
        pl.when(_h(4, 5) == 0).then(None).otherwise(readme).alias("readme"),
        (pl.lit("https://github.com/o/crate-") + pl.col("n").cast(pl.String)).alias("repository"),
        pl.lit("f").alias("trustpub_only"),
        _ts(5).alias("updated_at"),
    )


def versions(count: int, crates_count: int) -> pl.DataFrame:
    return _rows(count).select(
        pl.when(_h(1, 10) == 0).then(pl.lit('{cli,"x y"}')).otherwise(pl.lit("{}")).alias("bin_names"),
        pl.col("n").hash(2).cast(pl.String).str.pad_start(64, "0").alias("checksum"),
        ((pl.col("n") % crates_count) + 1).alias("crate_id"),
        _h(3, 1_000_000).alias("crate_size"),
        _ts(4).alias("created_at"),
        _h(5, 100_000).alias("downloads"),
        pl.lit("2021").alias("edition"),
        pl.lit('{"default":["std"],"std":[]}').alias("features"),
        _bool(6, 80).alias("has_lib"),
        (pl.col("n") + 1).alias("id"),
        pl.lit("MIT OR Apache-2.0").alias("license"),
        pl.lit(None, pl.String).alias("links"),
        (pl.lit("0.") + (pl.col("n") // crates_count).cast(pl.String) + ".0").alias("num"),
        _h(7, 1000).alias("published_by"),
        pl.when(_h(8, 2) == 0).then(None).otherwise(pl.lit("1.70")).alias("rust_version"),
        _ts(9).alias("updated_at"),
        _bool(10, 3).alias("yanked"),
    )


def dependencies(count: int, versions_count: int, crates_count: int) -> pl.DataFrame:
    return _rows(count).select(
        (_h(1, crates_count) + 1).alias("crate_id"),
        _bool(2, 90).alias("default_features"),
        pl.lit(None, pl.String).alias("explicit_name"),
        pl.when(_h(3, 4) == 0).then(pl.lit("{derive,std}")).otherwise(pl.lit("{}")).alias("features"),
        (pl.col("n") + 1).alias("id"),
        _h(4, 3).alias("kind"),
        _bool(5, 10).alias("optional"),
        pl.lit("^1.0").alias("req"),
        pl.when(_h(6, 20) == 0).then(pl.lit("cfg(unix)")).otherwise(None).alias("target"),
        ((pl.col("n") % versions_count) + 1).alias("version_id"),
    )


def version_downloads(versions_count: int) -> pl.DataFrame:
    chosen = max(1, versions_count // 10)
    days = pl.date_range(pl.date(2026, 6, 3), pl.date(2026, 8, 31), eager=True)
    grid = _rows(chosen * len(days))
    return grid.select(
        pl.col("n").map_batches(lambda n: days.gather(n % len(days)), return_dtype=pl.Date).alias("date"),
        _h(1, 5000).alias("downloads"),
        ((pl.col("n") // len(days)) * 10 + 1).alias("version_id"),
    )


def small_tables(crates_count: int, versions_count: int) -> dict[str, pl.DataFrame]:
    users = max(1, crates_count // 2)
    return {
        "categories": _rows(50).select(
            (pl.lit("Category ") + pl.col("n").cast(pl.String)).alias("category"),
            pl.lit(10).alias("crates_cnt"),
            _ts(1).alias("created_at"),
            pl.lit("About, things").alias("description"),
            (pl.col("n") + 1).alias("id"),
            pl.lit("").alias("path"),
            (pl.lit("cat-") + pl.col("n").cast(pl.String)).alias("slug"),
        ),
        "crate_downloads": _rows(crates_count).select(
            (pl.col("n") + 1).alias("crate_id"), _h(1, 10_000_000).alias("downloads")
        ),
        "crate_owners": _rows(crates_count).select(
            (pl.col("n") + 1).alias("crate_id"),
            _ts(1).alias("created_at"),
            pl.lit(None, pl.Int64).alias("created_by"),
            (_h(2, users) + 1).alias("owner_id"),
            pl.lit(0).alias("owner_kind"),
        ),
        "crates_categories": _rows(crates_count // 2).select(
            (_h(1, 50) + 1).alias("category_id"), (pl.col("n") * 2 + 1).alias("crate_id")
        ),
        "crates_keywords": _rows(crates_count).select(
            (pl.col("n") + 1).alias("crate_id"), (_h(1, 5000) + 1).alias("keyword_id")
        ),
        "default_versions": _rows(crates_count).select(
            (pl.col("n") + 1).alias("crate_id"),
            pl.lit(1).alias("num_versions"),
            (pl.col("n") + 1).alias("version_id"),
        ),
        "deleted_crates": _rows(100).select(
            pl.lit(None, pl.String).alias("available_at"),
            _ts(1).alias("created_at"),
            _ts(2).alias("deleted_at"),
            pl.lit(None, pl.Int64).alias("deleted_by"),
            (pl.col("n") + 1).alias("id"),
            pl.lit("unused").alias("message"),
            (pl.lit("gone-") + pl.col("n").cast(pl.String)).alias("name"),
        ),
        "keywords": _rows(5000).select(
            pl.lit(3).alias("crates_cnt"),
            _ts(1).alias("created_at"),
            (pl.col("n") + 1).alias("id"),
            (pl.lit("kw") + pl.col("n").cast(pl.String)).alias("keyword"),
        ),
        "metadata": pl.DataFrame({"total_downloads": [123_456_789_000]}),
        "teams": _rows(100).select(
            pl.lit(None, pl.String).alias("avatar"),
            (pl.col("n") + 1).alias("github_id"),
            (pl.col("n") + 1).alias("id"),
            (pl.lit("github:org:team") + pl.col("n").cast(pl.String)).alias("login"),
            pl.lit("Team").alias("name"),
            (pl.col("n") + 1).alias("org_id"),
        ),
        "users": _rows(users).select(
            pl.lit("https://avatars.example/u").alias("gh_avatar"),
            (pl.col("n") + 1).alias("gh_id"),
            (pl.lit("user") + pl.col("n").cast(pl.String)).alias("gh_login"),
            (pl.col("n") + 1).alias("id"),
            pl.lit(None, pl.String).alias("name"),
        ),
    }


def write_dump(out: Path, scale: float, as_zip: bool = False) -> Path:
    """The CSVs under ``out/SNAPSHOT/``, then the archive ``out/db-dump.tar.gz`` (or ``.zip``)."""
    n_crates, n_versions, n_deps = (max(10, int(COUNTS[k] * scale)) for k in COUNTS)
    folder = out / SNAPSHOT
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    (folder / "README.md").write_text("# crates.io database dump\n")
    (folder / "metadata.json").write_text(
        json.dumps({"timestamp": TIMESTAMP, "crates_io_commit": "0" * 40}, indent=2)
    )
    tables = {
        "crates": crates(n_crates),
        "versions": versions(n_versions, n_crates),
        "dependencies": dependencies(n_deps, n_versions, n_crates),
        "version_downloads": version_downloads(n_versions),
        **small_tables(n_crates, n_versions),
    }
    for name, frame in tables.items():
        frame.write_csv(data / f"{name}.csv", null_value="", quote_style="necessary")
        del frame
    members = ["README.md", "metadata.json", *(f"data/{n}.csv" for n in sorted(tables))]
    if as_zip:
        archive = out / "db-dump.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
            for member in members:
                z.write(folder / member, f"{SNAPSHOT}/{member}")
        return archive
    archive = out / "db-dump.tar.gz"
    names = [f"{SNAPSHOT}/{m}" for m in members]
    with archive.open("wb") as target:
        tar = subprocess.Popen(["tar", "-C", str(out), "-cf", "-", *names], stdout=subprocess.PIPE)
        subprocess.run(["gzip", "-6"], stdin=tar.stdout, stdout=target, check=True)
        tar.wait()
    return archive


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--zip", action="store_true")
    args = parser.parse_args()
    print(write_dump(args.out, args.scale, args.zip))


if __name__ == "__main__":
    main()
