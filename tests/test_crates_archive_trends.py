"""``trawl crates trends`` over a window reaching past the dump's 90 days: the archived days answer.

The local crates.io (tests/servers/crates_api.py) serves 95 days of each
version's downloads (the API's ``/downloads``, stored as ``version_download``)
and the per-day archive for the 20 days ``-a history=20`` asks for (the 91st to
110th day back, stored apart as ``version_download_archive``), with other
counts on the 5 days both hold. A 50-day window's previous window reaches the
100th day back, so the answer needs the archived days, and a day both hold
counts the dump's row. The expected answer is brute force over the generated
numbers; the store and the Parquet layer both give it.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import assert_no_traceback, crawl_args, run_scrapy
from tests.servers.crates_api import FakeCrate, FakeCratesApi, FakeVersion

AGENT = "trawl-tests (https://example.org/trawl; tests@example.org)"
DUMP_DAYS = 95  # the API's days: the 1st to the 95th day back (the last 5 overlap the archive)
HISTORY = 20  # -a history=20: the 91st to the 110th day back
WINDOW = 50  # the previous window: the 51st to the 100th day back
FACTOR = 1.5


def dataset(today: date) -> tuple[list[FakeCrate], dict[str, dict[int, int]]]:
    """Six crates, each version with 95 days from the API; the archive's counts per day and version."""
    rng = random.Random(17)
    crates, archive = [], defaultdict(dict)
    for i in range(6):
        versions = []
        for j in range(1 + i % 2):
            version_id = 100 * (i + 1) + j
            daily = []
            for back in range(DUMP_DAYS, 0, -1):
                surge = 3 if i % 3 == 0 and back <= WINDOW else 1
                daily.append(((today - timedelta(days=back)).isoformat(), rng.randint(0, 30) * surge))
            for back in range(91, 91 + HISTORY):
                archive[(today - timedelta(days=back)).isoformat()][version_id] = rng.randint(
                    0, 60
                ) + 1000 * (
                    back <= DUMP_DAYS
                )  # a day the dump holds too: another count, which must not be used
            stamp = "2020-01-01T00:00:00Z"
            versions.append(FakeVersion(version_id, f"0.{j}.0", stamp, stamp, 0, daily=daily))
        crates.append(
            FakeCrate(i + 1, f"c{i}", "2020-01-01T00:00:00Z", "2020-01-02T00:00:00Z", versions=versions)
        )
    return crates, archive


def brute_trends(crates: list[FakeCrate], archive: dict[str, dict[int, int]]) -> list[tuple]:
    counts: dict[tuple[int, date], int] = {}
    for day, per_version in archive.items():
        for version_id, n in per_version.items():
            counts[(version_id, date.fromisoformat(day))] = n
    crate_of = {}
    for c in crates:
        for v in c.versions:
            crate_of[v.id] = c.name
            for day, n in v.daily:
                counts[(v.id, date.fromisoformat(day))] = n  # the dump's row wins
    end = max(day for _, day in counts)
    last_start = end - timedelta(days=WINDOW - 1)
    previous_start = last_start - timedelta(days=WINDOW)
    last: dict[str, int] = defaultdict(int)
    previous: dict[str, int] = defaultdict(int)
    for (version_id, day), n in counts.items():
        if day >= last_start:
            last[crate_of[version_id]] += n
        elif day >= previous_start:
            previous[crate_of[version_id]] += n
    return sorted(
        (name, previous[name], last[name])
        for name in {c.name for c in crates}
        if last[name] >= FACTOR * previous[name] and last[name] >= 1
    )


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple]]:
    workdir = tmp_path_factory.mktemp("crates-archive-trends")
    crates, archive = dataset(datetime.now(UTC).date())
    with FakeCratesApi(crates) as api:
        api.archive = {
            day: (
                "version_id,date,downloads\n" + "".join(f"{v},{day},{n}\n" for v, n in rows.items())
            ).encode()
            for day, rows in archive.items()
        }
        settings = {
            "CRATES_BASE_URL": api.base_url,
            "CRATES_ARCHIVE_BASE_URL": api.archive_url,
            "CRATES_USER_AGENT": AGENT,
            "STORE_URI": "sqlite:///x.db",
            "CRATES_PARQUET_DIR": "pq",
        }
        result = run_scrapy(
            workdir,
            *crawl_args(
                "crates", None, settings, "-a", "mode=api", "-a", f"history={HISTORY}",
                "-s", "RATE_LIMITS_ENABLED=False",
            ),
        )  # fmt: skip
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    # The raw layer's dump datasets, made from the store's tables as the dump loader lays them out.
    with sqlite3.connect(workdir / "x.db") as con:
        for table, kind in {
            "crates": "crate",
            "versions": "version",
            "version_downloads": "version_download",
        }.items():
            frame = pl.read_database(f"SELECT * FROM {kind}_records", con).drop("first_run", "last_run")
            folder = workdir / "pq" / table / "dump_date=2026-09-01"
            folder.mkdir(parents=True)
            frame.write_parquet(folder / "part-000001.parquet")
    return workdir, brute_trends(crates, archive)


@pytest.mark.parametrize("layer", ["store", "parquet"])
def test_trends_past_the_dumps_days_read_the_archived_days(
    crawled: tuple[Path, list[tuple]], layer: str
) -> None:
    workdir, expected = crawled
    result = run_scrapy(
        workdir, "crates", "trends", "--growth", str(FACTOR), "--window", str(WINDOW), "--format", "jsonl",
        "--layer", layer, "-s", "STORE_URI=sqlite:///x.db", "-s", "CRATES_PARQUET_DIR=pq",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    got = sorted((r["name"], r["previous"], r["last"]) for r in map(json.loads, result.stdout.splitlines()))
    assert got == expected
    assert expected and len(expected) < 6  # some crates trend, some do not
