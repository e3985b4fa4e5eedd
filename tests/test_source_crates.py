"""``trawl crawl crates``: the crates.io db-dump into the store, through the URL sources' pipeline.

The dump is generated here (tests/servers/crates_dump.py) with the real layout
and PostgreSQL's CSV conventions, and the cases that break naive loaders: columns
in no schema order with an unknown one inserted mid-row (read by header name), a
description of more than 131,072 bytes over many lines with quotes and commas,
``{a,b}`` arrays, ``t``/``f``, NULL as an unquoted empty field beside ``""``, and a
timestamp with PostgreSQL's ``+00``. The tables and the expected rows
(tests/helpers/crates_tables.py) are written from the same dicts, not from the reader.
"""

from __future__ import annotations

import io
import random
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.helpers import processes
from tests.helpers.crates_tables import (
    CRATE_SQL,
    DEPENDENCIES,
    DEPENDENCY_COLUMNS,
    DEPENDENCY_SQL,
    EXPECTED_CRATES,
    EXPECTED_DEPENDENCIES,
    EXPECTED_OTHERS,
    EXPECTED_VERSIONS,
    TABLES,
    VERSION_COLUMNS,
    VERSION_SQL,
    VERSIONS,
    many_versions,
)
from tests.servers.crates_dump import FakeCratesDumpServer, make_dump
from trawl.sources.crates.blocks import record_blocks
from trawl.sources.crates.tables import json_array


def crawl_crates(workdir: Path, url: str, *extra: str) -> CrawlResult:
    settings = {"CRATES_DUMP_URL": url, "STORE_URI": "sqlite:///x.db"}
    return run_scrapy(workdir, *crawl_args("crates", None, settings, *extra))


def rows(workdir: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(workdir / "x.db") as con:
        return con.execute(sql).fetchall()


def test_every_table_is_stored_row_for_row_and_a_rerun_of_the_same_dump_is_skipped(workdir: Path) -> None:
    with FakeCratesDumpServer(make_dump(TABLES)) as server:
        first = crawl_crates(workdir, server.dump_url)
        assert_no_traceback(first)
        assert first.returncode == 0, first.stderr[-3000:]
        assert [(r.method, r.path) for r in server.requests] == [("GET", "/db-dump.tar.gz")]
        assert rows(workdir, CRATE_SQL) == EXPECTED_CRATES
        assert rows(workdir, VERSION_SQL) == EXPECTED_VERSIONS
        assert rows(workdir, DEPENDENCY_SQL) == EXPECTED_DEPENDENCIES
        for sql, expected in EXPECTED_OTHERS.values():
            assert rows(workdir, sql) == expected, sql
        assert "read the db-dump 2026-09-01-020003 (14 tables, 30 rows, exported 2026-09-01T02:00:03Z)" in (
            first.stderr
        )

        second = crawl_crates(workdir, server.dump_url)
        assert_no_traceback(second)
        assert second.returncode == 0, second.stderr[-3000:]
    assert (
        "crates: skipped the db-dump 2026-09-01-020003 (exported 2026-09-01T02:00:03Z): not newer than"
        " the one held (exported 2026-09-01T02:00:03Z)" in second.stderr
    )
    assert "read the db-dump" not in second.stderr
    assert rows(workdir, CRATE_SQL) == EXPECTED_CRATES
    assert rows(workdir, VERSION_SQL) == EXPECTED_VERSIONS
    assert rows(workdir, DEPENDENCY_SQL) == EXPECTED_DEPENDENCIES
    for table in ("crate_records", "version_records", "dependency_records"):
        assert rows(workdir, f"SELECT DISTINCT first_run, last_run FROM {table}") == [(1, 1)]
    # Provenance: a row the dump wrote says so; the bulk load's scratch file is gone with the run.
    for table in ("crate_records", "version_records", "dependency_records", "version_download_records"):
        assert rows(workdir, f"SELECT DISTINCT mode FROM {table}") == [("dump",)], table
    assert list(workdir.glob("x.db-load-*")) == []  # x.db-load-<pid>@<host>, the loading process's
    assert rows(workdir, "SELECT run, source, domain FROM runs ORDER BY run") == [
        (1, "crates", None),
        (2, "crates", None),
    ]


def test_a_truncated_archive_is_one_error_line(workdir: Path) -> None:
    dump = make_dump(TABLES)
    with FakeCratesDumpServer(dump[: len(dump) * 2 // 3]) as server:
        result = crawl_crates(workdir, server.dump_url)
    assert_no_traceback(result)
    assert result.returncode == 1
    assert len(result.errors) == 1, result.errors
    assert "crates: the db-dump http://127.0.0.1:" in result.errors[0]
    assert "the archive is cut short or corrupt" in result.errors[0]


def test_not_a_dump_is_one_error_line(workdir: Path) -> None:
    with FakeCratesDumpServer(b"\x1f\x8b not really gzip") as server:
        result = crawl_crates(workdir, server.dump_url)
    assert_no_traceback(result)
    assert result.returncode == 1
    assert len(result.errors) == 1 and "cut short or corrupt" in result.errors[0], result.errors


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("-a", "crates=serde"), "-a crates= is an argument of -a mode=api or incremental, not of dump"),
        (("-a", "mode=zip"), "must be one of dump, api, incremental, got 'zip'"),
        (("-a", "filters=x"), "unknown argument for the crates source: -a filters="),
    ],
)
def test_bad_arguments_are_one_line_and_send_nothing(workdir: Path, arguments: tuple, message: str) -> None:
    with FakeCratesDumpServer(make_dump(TABLES)) as server:
        result = crawl_crates(workdir, server.dump_url, *arguments)
        assert server.requests == []
    assert_no_traceback(result)
    assert result.returncode == 2
    assert message in result.stderr


def test_a_bad_dump_url_is_one_line(workdir: Path) -> None:
    result = crawl_crates(workdir, "ftp://example.com/db-dump.tar.gz")
    assert_no_traceback(result)
    assert result.returncode == 2
    assert "CRATES_DUMP_URL must be an http(s) URL" in result.stderr


def test_blocks_hold_whole_records_whatever_the_block_size() -> None:
    """Quoted line breaks and escaped quotes never cut a record, at any block size."""
    header, body = b"a,b,c\n", make_dump_table_body()
    whole = pl.read_csv(io.BytesIO(header + body), infer_schema=False)
    sizes = [1, 2, 3, 7, 64, 1000, 1 << 20, *random.Random(7).sample(range(4, 5000), 20)]
    for size in sizes:
        blocks = list(record_blocks(io.BytesIO(header + body), size))
        assert all(h == header for h, _ in blocks)
        assert pl.concat([pl.read_csv(io.BytesIO(h + b), infer_schema=False) for h, b in blocks]).equals(
            whole
        )


def test_feature_lists_are_the_same_json_whether_they_repeat_or_not() -> None:
    """A column of repeated lists is respelled once per distinct list: each row still gets its own."""
    spelled = {
        "{}": "[]",
        "{derive,std}": '["derive","std"]',
        '{"a b",c}': '["a b","c"]',
        '{"x\\\\y"}': '["x\\\\y"]',
        None: None,
    }
    literals = list(spelled)
    for rows in (literals * 40, literals):  # mostly repeats (mapped), then all distinct (row by row)
        shuffled = random.Random(5).sample(rows, len(rows))
        frame = pl.DataFrame({"features": shuffled}, schema={"features": pl.String})
        assert json_array("features", frame).to_list() == [spelled[text] for text in shuffled]


def make_dump_table_body() -> bytes:
    rng = random.Random(3)
    lines = []
    for i in range(300):
        text = "".join(rng.choice(['"', "\n", ",", "x", "y", " "]) for _ in range(rng.randrange(0, 40)))
        lines.append(f'{i},"{text.replace(chr(34), chr(34) * 2)}",{rng.choice(["t", "f", ""])}')
    return ("\n".join(lines) + "\n").encode()


def test_big_tables_come_in_batches_of_crates_batch_rows(workdir: Path) -> None:
    """2,500 versions in batches of 1,000, each its own ledger page; every row stored once."""
    versions = [
        {"id": n, "crate_id": 1 + n % 3, "num": f"0.{n}.0", "downloads": n, "yanked": n % 7 == 0}
        for n in range(1, 2501)
    ]
    tables = {**TABLES, "versions": (VERSION_COLUMNS, versions)}
    with FakeCratesDumpServer(make_dump(tables)) as server:
        result = crawl_crates(workdir, server.dump_url, "-s", "CRATES_BATCH_ROWS=1000")
    assert result.returncode == 0, result.stderr[-3000:]
    assert rows(workdir, "SELECT count(*), sum(downloads), sum(yanked) FROM version_records") == [
        (2500, sum(range(1, 2501)), sum(1 for n in range(1, 2501) if n % 7 == 0))
    ]
    pages = rows(workdir, "SELECT page, rows FROM pages WHERE page LIKE '%/versions#%' ORDER BY page")
    assert pages == [
        ("2026-09-01-020003/versions#1", 1000),
        ("2026-09-01-020003/versions#2", 1000),
        ("2026-09-01-020003/versions#3", 500),
    ]


def test_crawl_all_runs_crates_only_when_named() -> None:
    """``crawl all -a domain=`` is about a domain: the 1.7 GiB dump is not part of it."""
    from scrapy.utils.project import get_project_settings

    from trawl.run.crawl_all import check_all
    from trawl.sources.loader import PluginSpiderLoader

    settings = get_project_settings()
    loader = PluginSpiderLoader(settings)
    assert "crates" in loader.list()
    names, _, _ = check_all(loader, settings, {"domain": "example.com"})
    assert "crates" not in names and "wayback" in names
    names, _, _ = check_all(loader, settings, {"sources": "crates"})
    assert names == ["crates"]


@pytest.mark.parametrize(
    ("path", "body", "tables", "message"),
    [
        ("/gone.tar.gz", None, None, "HTTP 404 from http://127.0.0.1:"),
        ("/db-dump.tar.gz", b"", None, "the answer is empty"),
        ("/db-dump.tar.gz", b"<!DOCTYPE html><html><body>Maintenance</body></html>", None,
         "sent an HTML page instead of a tar.gz"),
        ("/db-dump.tar.gz", None, {"versions": (["id", "crate_id", "created_at"], [{"id": 1}])},
         "versions.csv has no column num (columns: id, crate_id, created_at)"),
        ("/db-dump.tar.gz", None, {"dependencies": (DEPENDENCY_COLUMNS, [{**DEPENDENCIES[0], "kind": 7}])},
         "dependencies.csv: kind '7' is not 0, 1 or 2"),
    ],
)  # fmt: skip
def test_what_cannot_be_read_is_one_error_line_naming_it(
    workdir: Path, path: str, body: bytes | None, tables: dict | None, message: str
) -> None:
    dump = body if body is not None else make_dump(tables or TABLES)
    with FakeCratesDumpServer(dump) as server:
        result = crawl_crates(workdir, server.base_url + path)
    assert_no_traceback(result)
    assert result.returncode == 1
    assert len(result.errors) == 1, result.errors
    assert message in result.errors[0]


#: Runs scrapy and writes the process's own peak RSS (VmHWM: this program's, not the forked
#: parent's pages that ``ru_maxrss`` would count, the test process holding the 300 MB dump).
PEAK_RSS_WRAPPER = """
import atexit, re, runpy, sys
def hwm():
    status = open("/proc/self/status").read()
    open("peak_rss_kb", "w").write(re.search(r"VmHWM:\\s+(\\d+)", status).group(1))
atexit.register(hwm)
sys.argv = ["scrapy", *sys.argv[1:]]
runpy.run_module("scrapy", run_name="__main__")
"""


def peak_rss_mb(workdir: Path, *args: str) -> tuple[int, float]:
    """Exit status and peak RSS (MB) of one crawl in a process of its own."""
    import os
    import sys

    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
    with (workdir / "crawl.log").open("w") as log:
        status = processes.run(
            [sys.executable, "-c", PEAK_RSS_WRAPPER, *args], cwd=workdir, env=env, stdout=log, stderr=log
        ).returncode
    return status, int((workdir / "peak_rss_kb").read_text()) / 1024


def test_the_dump_is_streamed_never_whole_in_memory(workdir: Path) -> None:
    """A 300 MB member (incompressible, skipped unread) passes through without the process holding it."""
    import os

    extra = {"export.sql": os.urandom(300 << 20)}
    with FakeCratesDumpServer(make_dump(TABLES, extra=extra, compresslevel=0)) as server:
        args = crawl_args("crates", None, {"CRATES_DUMP_URL": server.dump_url, "STORE_URI": "sqlite:///x.db"})
        status, peak = peak_rss_mb(workdir, *args)
    assert status == 0, (workdir / "crawl.log").read_text()[-3000:]
    assert rows(workdir, CRATE_SQL) == EXPECTED_CRATES
    assert peak < 300, f"peak RSS {peak:.0f} MB for a 300 MB dump"


def test_a_streamed_dump_over_the_size_limit_is_one_error_line(workdir: Path) -> None:
    big = make_dump(TABLES, extra={"export.sql": b"x" * 400_000}, compresslevel=0)
    with FakeCratesDumpServer(big) as server:
        result = crawl_crates(workdir, server.dump_url, "-s", 'SOURCE_DOWNLOAD_MAXSIZE={"crates": 200000}')
    assert_no_traceback(result)
    assert result.returncode == 1
    assert len(result.errors) == 1, result.errors
    assert "over the size limit" in result.errors[0]


def parquet_rows(root: Path, table: str) -> pl.DataFrame:
    return pl.read_parquet(root / table / "*" / "*.parquet", hive_partitioning=True)


def test_the_parquet_layer_holds_every_table_partitioned_by_dump_date(workdir: Path) -> None:
    """Each table a dataset (hive partition ``dump_date=``), read back by polars (and pyarrow, DuckDB
    when installed) with exactly the generated rows; without a store, too."""
    root = workdir / "raw"
    with FakeCratesDumpServer(make_dump(TABLES)) as server:
        result = run_scrapy(
            workdir,
            *crawl_args(
                "crates",
                None,
                {"CRATES_DUMP_URL": server.dump_url, "CRATES_PARQUET_DIR": root, "STORE_URI": ""},
            ),
        )
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    datasets = sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
    assert datasets == sorted(t for t in [*TABLES, "crates_dump"] if t != "metadata")
    assert not list(root.glob(".loading/*"))
    versions = parquet_rows(root, "versions").sort("id")
    assert versions.get_column("dump_date").cast(pl.String).unique().to_list() == ["2026-09-01"]
    assert versions.drop("dump_date").rows() == [
        tuple(bool(v) if i == 6 else v for i, v in enumerate(row)) for row in EXPECTED_VERSIONS
    ]
    dependencies = parquet_rows(root, "dependencies").sort("id").drop("dump_date")
    assert dependencies.rows() == [
        tuple(bool(v) if i in (4, 5) else v for i, v in enumerate(row)) for row in EXPECTED_DEPENDENCIES
    ]
    crates = parquet_rows(root, "crates").sort("id").drop("dump_date")
    assert crates.drop("downloads", "default_version_id").rows() == [row[:8] for row in EXPECTED_CRATES]
    downloads = parquet_rows(root, "crate_downloads").sort("id").select("id", "downloads")
    assert downloads.rows() == [(row[0], row[8]) for row in EXPECTED_CRATES]
    pairs = {"version_downloads": "version_download", "crate_owners": "crate_owner", "users": "user"}
    pairs |= {"deleted_crates": "deleted_crate", "keywords": "keyword", "teams": "team"}
    for table, kind in pairs.items():
        sql, expected = EXPECTED_OTHERS[kind]
        columns = sql.removeprefix("SELECT ").split(" FROM ")[0].split(", ")
        assert sorted(parquet_rows(root, table).select(columns).rows()) == sorted(expected), table
    dumps = parquet_rows(root, "crates_dump").drop("dump_date").rows()
    assert dumps == EXPECTED_OTHERS["crates_dump"][1]
    try:
        import pyarrow.dataset as ds
    except ImportError:
        pass
    else:
        assert ds.dataset(root / "versions", partitioning="hive").to_table().num_rows == len(VERSIONS)


def test_kill_9_mid_load_leaves_the_previous_snapshot_and_a_rerun_completes(workdir: Path) -> None:
    """The first dump loaded; the second, bigger, killed (``kill -9``) once part of it was
    written: the store and the Parquet layer still give the first dump, whole; the rerun
    loads the second, whole, and the rows the second dump lacks are gone."""
    import os
    import signal
    import subprocess
    import sys
    import time

    root = workdir / "raw"
    settings = {"STORE_URI": "sqlite:///x.db", "CRATES_PARQUET_DIR": root, "CRATES_BATCH_ROWS": 1000}
    newer = {**TABLES, "versions": many_versions(150_000), "keywords": (TABLES["keywords"][0], [])}
    with FakeCratesDumpServer(make_dump(TABLES)) as server:
        first = run_scrapy(
            workdir, *crawl_args("crates", None, {**settings, "CRATES_DUMP_URL": server.dump_url})
        )
        assert first.returncode == 0, first.stderr[-3000:]
        server.dump = make_dump(newer, snapshot="2026-09-02-020001", timestamp="2026-09-02T02:00:01Z")
        args = crawl_args("crates", None, {**settings, "CRATES_DUMP_URL": server.dump_url})
        env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
        with (workdir / "killed.log").open("w") as log:
            proc = subprocess.Popen([sys.executable, "-m", "scrapy", *args], cwd=workdir, env=env, stderr=log)
            deadline = time.monotonic() + 120
            staged = 0
            while time.monotonic() < deadline and proc.poll() is None:
                with sqlite3.connect(workdir / "x.db", timeout=30) as con:
                    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
                    if "version_records_next" in names:
                        staged = con.execute("SELECT count(*) FROM version_records_next").fetchone()[0]
                if staged >= 5000:
                    os.kill(proc.pid, signal.SIGKILL)
                    break
                time.sleep(0.05)  # polling for a state the crawl reaches, not waiting for time to pass
            proc.wait()
        assert 5000 <= staged < 150_000, f"killed with {staged} versions staged"
        assert proc.returncode == -signal.SIGKILL
        # The first snapshot, whole, in the store and in Parquet.
        assert rows(workdir, VERSION_SQL) == EXPECTED_VERSIONS
        assert rows(workdir, CRATE_SQL) == EXPECTED_CRATES
        assert rows(workdir, EXPECTED_OTHERS["keyword"][0]) == EXPECTED_OTHERS["keyword"][1]
        assert rows(workdir, "SELECT snapshot FROM crates_dump_records") == [("2026-09-01-020003",)]
        assert sorted(p.name for p in (root / "versions").iterdir()) == ["dump_date=2026-09-01"]
        assert parquet_rows(root, "versions").height == len(VERSIONS)

        rerun = run_scrapy(workdir, *args)
    assert_no_traceback(rerun)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert rows(workdir, "SELECT count(*), min(id), max(id) FROM version_records") == [
        (150_000, 1000, 150_999)
    ]
    assert rows(workdir, "SELECT count(*) FROM keyword_records") == [(0,)]
    assert rows(workdir, "SELECT snapshot FROM crates_dump_records ORDER BY snapshot") == [
        ("2026-09-01-020003",),
        ("2026-09-02-020001",),
    ]
    assert rows(workdir, "SELECT name FROM sqlite_master WHERE name LIKE '%_next'") == []
    assert sorted(p.name for p in (root / "versions").iterdir()) == [
        "dump_date=2026-09-01",
        "dump_date=2026-09-02",
    ]
    latest = parquet_rows(root, "versions").filter(pl.col("dump_date").cast(pl.String) == "2026-09-02")
    assert latest.height == 150_000


def test_the_zip_variant_gives_the_same_rows(workdir: Path) -> None:
    """``CRATES_DUMP_URL`` ending in ``.zip``: read member by member from the stream."""
    with FakeCratesDumpServer(make_dump(TABLES, as_zip=True)) as server:
        result = crawl_crates(workdir, server.zip_url)
        assert [(r.method, r.path) for r in server.requests] == [("GET", "/db-dump.zip")]
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert rows(workdir, CRATE_SQL) == EXPECTED_CRATES
    assert rows(workdir, VERSION_SQL) == EXPECTED_VERSIONS
    assert rows(workdir, DEPENDENCY_SQL) == EXPECTED_DEPENDENCIES
    for sql, expected in EXPECTED_OTHERS.values():
        assert rows(workdir, sql) == expected, sql


def test_a_truncated_zip_is_one_error_line(workdir: Path) -> None:
    dump = make_dump(TABLES, as_zip=True)
    with FakeCratesDumpServer(dump[: len(dump) // 2]) as server:
        result = crawl_crates(workdir, server.zip_url)
    assert_no_traceback(result)
    assert result.returncode == 1
    assert len(result.errors) == 1 and "the archive is cut short or corrupt" in result.errors[0], (
        result.errors
    )
    assert rows(workdir, "SELECT name FROM sqlite_master WHERE name = 'crates_dump_records'") == []
