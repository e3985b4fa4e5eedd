"""``trawl crawl crates -a history=DAYS``: version downloads older than the dump's 90 days, from the archive.

The archive is served by the local crates.io (tests/servers/crates_api.py,
``/archive/version-downloads/YYYY-MM-DD.csv``); the days are those before the
90 the dump holds, counted from today (UTC). What a user sees: the rows stored
and in Parquet (equal to the CSVs written here), the requests the server
logged (one a second through the gate, and none for a day stored before), and
one line per day that is missing, cut short or malformed.
"""

from __future__ import annotations

import gzip
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.servers.crates_api import FakeCrate, FakeCratesApi, FakeVersion

ARCHIVE_SQL = (
    "SELECT version_id, date, downloads, mode FROM version_download_archive_records ORDER BY date, version_id"
)
DAYS_SQL = "SELECT date, rows, downloads FROM version_download_archive_day_records ORDER BY date"


def days(count: int) -> list[str]:
    """The days ``-a history=count`` asks for today, oldest first (the 91st day back is the newest)."""
    newest = datetime.now(UTC).date() - timedelta(days=91)
    return [(newest - timedelta(days=n)).isoformat() for n in range(count - 1, -1, -1)]


def day_rows(day: str, seed: int) -> list[tuple[int, str, int]]:
    return [(100 + seed * 10 + n, day, seed * 1000 + n * 7) for n in range(3)]


def csv(columns: list[str], rows: list[tuple[int, str, int]]) -> bytes:
    lines = [",".join(columns)]
    for version_id, day, downloads in rows:
        values = {"version_id": version_id, "date": day, "downloads": downloads, "extra": "a, b"}
        lines.append(",".join(f'"{values[c]}"' if c == "extra" else str(values[c]) for c in columns))
    return ("\n".join(lines) + "\n").encode()


def server() -> FakeCratesApi:
    version = FakeVersion(31, "0.1.0", "2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z")
    tiny = FakeCrate(3, "tiny", "2020-01-01T00:00:00Z", "2020-01-02T00:00:00Z", versions=[version])
    return FakeCratesApi([tiny])


def crawl(workdir: Path, api: FakeCratesApi, *extra: str) -> CrawlResult:
    settings = {
        "CRATES_BASE_URL": api.base_url,
        "CRATES_ARCHIVE_BASE_URL": api.archive_url,
        "CRATES_USER_AGENT": "trawl-tests (tests@example.org)",
        "STORE_URI": "sqlite:///x.db",
        "CRATES_PARQUET_DIR": "pq",
    }
    result = run_scrapy(
        workdir, *crawl_args("crates", None, settings, "-a", "mode=api", "-a", "crates=tiny", *extra)
    )
    assert_no_traceback(result)
    return result


def stored(workdir: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(workdir / "x.db") as con:
        return con.execute(sql).fetchall()


def archive_requests(api: FakeCratesApi) -> list[str]:
    return [r.path.rsplit("/", 1)[-1] for r in api.requests if r.path.startswith("/archive/")]


def test_history_stores_the_archived_days_once_through_the_gate(workdir: Path) -> None:
    d0, d1, d2, d3 = days(4)
    expected = day_rows(d0, 1) + day_rows(d2, 2) + day_rows(d3, 3)
    with server() as api:
        api.archive = {
            d0: csv(["date", "downloads", "version_id"], day_rows(d0, 1)),
            # d1 is not in the archive: a 404
            d2: gzip.compress(csv(["version_id", "extra", "downloads", "date"], day_rows(d2, 2))),
            d3: csv(["version_id", "downloads"], day_rows(d3, 3)),  # no date column: the file's day
        }
        first = crawl(workdir, api, "-a", "history=4", "-s", "RATE_LIMITS_ENABLED=True")
        assert first.returncode == 0, first.stderr[-3000:]
        assert archive_requests(api) == [f"{d}.csv" for d in (d0, d1, d2, d3)]
        gaps = [b.time - a.time for a, b in zip(api.requests, api.requests[1:], strict=False)]
        assert min(gaps) >= 1.0, gaps  # the source's budget: one request a second
        assert (
            f"history: the archive of {d1}: not in the archive (HTTP 404 from http://127.0.0.1:"
            in first.stderr
        )
        assert stored(workdir, ARCHIVE_SQL) == [(*row, "history") for row in expected]
        assert stored(workdir, DAYS_SQL) == [
            (d, 3, sum(n for _, _, n in day_rows(d, s))) for d, s in ((d0, 1), (d2, 2), (d3, 3))
        ]
        parquet = pl.read_parquet(
            workdir / "pq" / "version_downloads_archive" / "*" / "*.parquet", hive_partitioning=True
        )
        assert sorted(parquet.select("version_id", "date", "downloads").rows()) == sorted(expected)
        assert sorted(set(parquet.get_column("day").cast(pl.String).to_list())) == [d0, d2, d3]

        api.requests.clear()
        second = crawl(workdir, api, "-a", "history=4")
        assert second.returncode == 0, second.stderr[-3000:]
        assert archive_requests(api) == [f"{d1}.csv"]  # only the day not stored
        assert "history: 4 days from" in second.stderr and "3 held already, 1 to fetch" in second.stderr
    assert stored(workdir, ARCHIVE_SQL) == [(*row, "history") for row in expected]


def test_a_day_cut_short_or_malformed_is_one_line_and_not_stored(workdir: Path) -> None:
    d0, d1, d2 = days(3)
    whole = csv(["version_id", "downloads", "date"], day_rows(d0, 1))
    bad = csv(["version_id", "downloads", "date"], day_rows(d1, 2)).replace(b"2000", b"2x00")
    with server() as api:
        api.archive = {
            d0: whole[: len(whole) - 4],
            d1: bad,
            d2: csv(["version_id", "downloads", "date"], day_rows(d2, 3)),
        }
        result = crawl(workdir, api, "-a", "history=3", "-s", "RATE_LIMITS_ENABLED=False")
    assert result.returncode == 1, result.stderr[-3000:]
    assert len(result.errors) == 2, result.errors
    assert f"history: the archive of {d0} (http://127.0.0.1:" in result.errors[0]
    assert f"/archive/version-downloads/{d0}.csv): the file is cut short" in result.errors[0]
    assert f"history: the archive of {d1} (http://127.0.0.1:" in result.errors[1]
    assert f"row 1 ('{100 + 20},2x00,{d1}') is not a version id, a count and this day" in result.errors[1]
    assert stored(workdir, "SELECT DISTINCT date FROM version_download_archive_records") == [(d2,)]
    assert stored(workdir, "SELECT date FROM version_download_archive_day_records") == [(d2,)]


def test_a_bad_history_argument_is_one_line(workdir: Path) -> None:
    with server() as api:
        result = crawl(workdir, api, "-a", "history=a year")
        assert api.requests == []
    assert result.returncode == 2
    assert "-a history= expects a whole number, got 'a year'" in result.stderr
