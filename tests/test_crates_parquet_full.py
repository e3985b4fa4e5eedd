"""A full disk under ``CRATES_PARQUET_DIR`` during a dump load: one ERROR line naming the folder.

The Parquet layer is a small tmpfs (the tests run as root); where mounting is refused, the
crawl runs under ``ulimit -f`` instead (a file-size limit: the write fails with ``EFBIG``
where a full disk fails with ``ENOSPC``). The first dump fits; the second does not: the run
ends with exit 1, one ERROR line naming the folder, no traceback, and the first dump's
partitions whole, as the store's snapshot.
"""

from __future__ import annotations

import os
import random
import resource
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import TEST_DEFAULTS, CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.helpers import processes
from tests.helpers.crates_tables import EXPECTED_VERSIONS, TABLES, VERSION_SQL, VERSIONS, many_versions
from tests.servers.crates_dump import FakeCratesDumpServer, make_dump

FIRST = "2026-09-01-020003"
SECOND = "2026-09-02-020001"


@contextmanager
def small_disk(folder: Path, size: str = "1m") -> Iterator[bool]:
    """``folder`` as a tmpfs of ``size``; yields False (nothing mounted) where mounting is refused."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        yield False
        return
    try:
        yield True
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def crawl(
    workdir: Path, url: str, root: Path, file_limit: int | None = None, store: bool = True, *extra: str
) -> CrawlResult:
    """One load; ``file_limit``: under ``ulimit -f`` of that many bytes (:func:`crawl_limited`)."""
    settings = {"STORE_URI": "sqlite:///x.db" if store else "", "CRATES_DUMP_URL": url}
    given = {**settings, "CRATES_PARQUET_DIR": root, "CRATES_BATCH_ROWS": 1000}
    args = crawl_args("crates", None, given, *extra)
    if file_limit is None:
        return run_scrapy(workdir, *args)
    return crawl_limited(workdir, args, file_limit)


def crawl_limited(workdir: Path, args: list[str], file_limit: int) -> CrawlResult:
    """``scrapy ARGS`` under ``ulimit -f`` (a plain subprocess: ``preexec_fn`` sets the limit in
    the child before it starts), with the suite's defaults."""
    given_text = " ".join(map(str, args))
    args = [
        *args,
        *(
            a
            for name, value in TEST_DEFAULTS.items()
            if f"{name}=" not in given_text
            for a in ("-s", f"{name}={value}")
        ),
    ]

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
    done = processes.run(
        [sys.executable, "-m", "scrapy", *args], cwd=workdir, env=env, capture_output=True, text=True,
        timeout=120, stdin=subprocess.DEVNULL, preexec_fn=limited,
    )  # fmt: skip
    return CrawlResult(done.returncode, done.stdout, done.stderr, workdir)


def random_versions(count: int) -> tuple[list, list]:
    """``versions`` whose numbers are random text: about 3 MB of Parquet, past the 1 MiB disk."""
    columns, rows = many_versions(count)
    rng = random.Random(25)
    return columns, [{**row, "num": f"{rng.getrandbits(96):024x}"} for row in rows]


def versions_in_parquet(root: Path) -> pl.DataFrame:
    return pl.read_parquet(root / "versions" / "*" / "*.parquet", hive_partitioning=True)


def test_a_full_parquet_folder_is_one_error_line_naming_it_and_the_first_dump_stays_whole(
    workdir: Path, tmp_path: Path
) -> None:
    root = tmp_path / "raw"
    first = make_dump(TABLES)
    second = make_dump(
        {**TABLES, "versions": random_versions(100_000)},
        snapshot=SECOND,
        timestamp="2026-09-02T02:00:01Z",
        compresslevel=1,
    )
    with FakeCratesDumpServer(first) as server, small_disk(root) as mounted:
        loaded = crawl(workdir, server.dump_url, root)
        assert loaded.returncode == 0, loaded.stderr[-3000:]
        server.dump = second
        # The console a user sees (the suite shows Scrapy's INFO lines and stats otherwise).
        quiet = ("-s", "TRAWL_LOG_ALL=False")
        result = crawl(workdir, server.dump_url, root, None if mounted else 1 << 20, True, *quiet)
        assert_no_traceback(result)
        assert result.returncode == 1, result.stderr[-3000:]
        assert len(result.errors) == 1, "\n".join(result.errors)
        [line] = result.errors
        assert str(root) in line, line
        assert ("No space left on device" if mounted else "File too large") in line, line
        assert len(result.stderr.splitlines()) <= 4, result.stderr[-3000:]
        # The first dump's partitions, whole; nothing of the second left behind.
        held = versions_in_parquet(root)
        assert held.get_column("dump_date").cast(pl.String).unique().to_list() == ["2026-09-01"]
        assert sorted(held.get_column("id").to_list()) == sorted(v["id"] for v in VERSIONS)
        assert not [p for p in (root / ".loading").rglob("*") if p.is_file()]
    with sqlite3.connect(workdir / "x.db") as con:
        assert con.execute(VERSION_SQL).fetchall() == EXPECTED_VERSIONS
        assert [r[0] for r in con.execute("SELECT snapshot FROM crates_dump_records")] == [FIRST]


def test_the_file_size_limit_fallback_also_is_one_line(workdir: Path, tmp_path: Path) -> None:
    """Where no tmpfs can be mounted, ``ulimit -f``: the write fails with EFBIG, said the same way."""
    root = tmp_path / "raw"
    second = make_dump({**TABLES, "versions": many_versions(150_000)}, compresslevel=1)
    with FakeCratesDumpServer(second) as server:
        result = crawl(workdir, server.dump_url, root, file_limit=256 << 10, store=False)
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr[-3000:]
    assert len(result.errors) == 1, "\n".join(result.errors)
    assert str(root) in result.errors[0], result.errors[0]
    assert not list(root.glob("versions/*"))


pytestmark = pytest.mark.skipif(os.name != "posix", reason="tmpfs and rlimits are POSIX")


def test_a_full_parquet_folder_during_the_history_backfill_is_one_error_line(
    workdir: Path, tmp_path: Path
) -> None:
    """``-a history=``: a day's Parquet file on a full disk is one ERROR line naming the folder,
    nothing of that day stored, no partial file left."""
    from datetime import UTC, datetime, timedelta

    from tests.servers.crates_api import FakeCrate, FakeCratesApi, FakeVersion

    root = tmp_path / "raw"
    day = (datetime.now(UTC).date() - timedelta(days=91)).isoformat()
    rng = random.Random(8)
    body = "version_id,downloads,date\n" + "".join(
        f"{rng.getrandbits(40)},{rng.getrandbits(40)},{day}\n" for _ in range(60_000)
    )
    version = FakeVersion(31, "0.1.0", "2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z")
    tiny = FakeCrate(3, "tiny", "2020-01-01T00:00:00Z", "2020-01-02T00:00:00Z", versions=[version])
    with FakeCratesApi([tiny]) as api, small_disk(root, "256k") as mounted:
        api.archive = {day: body.encode()}
        settings = {
            "CRATES_BASE_URL": api.base_url,
            "CRATES_ARCHIVE_BASE_URL": api.archive_url,
            "CRATES_USER_AGENT": "trawl-tests (tests@example.org)",
            "STORE_URI": "sqlite:///x.db",
            "CRATES_PARQUET_DIR": root,
        }
        args = crawl_args("crates", None, settings, "-a", "mode=api", "-a", "crates=tiny", "-a", "history=1")
        if mounted:
            result = run_scrapy(workdir, *args)
        else:
            result = crawl_limited(workdir, args, 256 << 10)
        leftovers = [p.name for p in root.rglob("*") if p.is_file()]
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr[-3000:]
    assert len(result.errors) == 1, "\n".join(result.errors)
    assert str(root) in result.errors[0], result.errors[0]
    assert leftovers == []
    with sqlite3.connect(workdir / "x.db") as con:  # the day is not in the ledger: the rerun fetches it
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "version_download_archive_day_records" in tables:
            assert con.execute("SELECT count(*) FROM version_download_archive_day_records").fetchone() == (0,)
