"""``trawl search --collapse``: the patterns of what a query finds, through the real command."""

from __future__ import annotations

import csv
import io
import shutil
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import CrawlResult, run_scrapy
    from tests.helpers.sqlite_store import make_batch, open_store
except ImportError:
    from conftest import CrawlResult, run_scrapy  # type: ignore[no-redef]
    from helpers.sqlite_store import make_batch, open_store  # type: ignore[no-redef]

E = "https://example.com"
URLS = [
    f"{E}/item.php?id=1",
    f"{E}/item.php?id=2",
    f"{E}/item.php?id=3&debug=1",
    f"{E}/users/17/profile",
    f"{E}/users/204/profile",
    f"{E}/users/204/profile?tab=posts",
    f"{E}/blog/2023/05/a-long-post-title-here",
    f"{E}/admin/",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    base = tmp_path_factory.mktemp("collapse")
    db = base / "trawl.db"
    writer = open_store(db, "run-1")
    writer.write_batch(
        make_batch([(url, "20230101000000", "20230101000000", 1, "200", "text/html") for url in URLS])
    )
    writer.close("finished")
    return SimpleNamespace(db=db, workdir=base / "cmd")


def search(store: SimpleNamespace, *args: str) -> CrawlResult:
    return run_scrapy(store.workdir, "search", *args, "-s", f"STORE_URI=sqlite:///{store.db}")


def test_params_lines_are_count_pattern_example(store: SimpleNamespace) -> None:
    result = search(store, "*", "--collapse", "params")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"2  {E}/item.php?id={{}}  {E}/item.php?id=1",
        f"1  {E}/admin/  {E}/admin/",
        f"1  {E}/blog/2023/05/a-long-post-title-here  {E}/blog/2023/05/a-long-post-title-here",
        f"1  {E}/item.php?debug={{}}&id={{}}  {E}/item.php?id=3&debug=1",
        f"1  {E}/users/17/profile  {E}/users/17/profile",
        f"1  {E}/users/204/profile  {E}/users/204/profile",
        f"1  {E}/users/204/profile?tab={{}}  {E}/users/204/profile?tab=posts",
    ]


def test_ids_after_the_query_filters(store: SimpleNamespace) -> None:
    result = search(store, "path:/users/*", "--collapse", "ids")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"2  {E}/users/{{int}}/profile  {E}/users/17/profile",
        f"1  {E}/users/{{int}}/profile?tab=posts  {E}/users/204/profile?tab=posts",
    ]


def test_all_with_jsonl_csv_table_and_limit(store: SimpleNamespace) -> None:
    jsonl = search(store, "*", "--collapse", "all", "--format", "jsonl")
    assert jsonl.returncode == 0, jsonl.stderr
    rows = [orjson.loads(line) for line in jsonl.stdout.splitlines()]
    assert rows[:2] == [
        {"count": 2, "pattern": f"{E}/item.php?id={{}}", "example": f"{E}/item.php?id=1"},
        {"count": 2, "pattern": f"{E}/users/{{int}}/profile", "example": f"{E}/users/17/profile"},
    ]
    assert {r["pattern"] for r in rows[2:]} == {
        f"{E}/admin/",
        f"{E}/blog/{{date}}/a-long-post-title-here",
        f"{E}/item.php?debug={{}}&id={{}}",
        f"{E}/users/{{int}}/profile?tab={{}}",
    }
    assert sum(r["count"] for r in rows) == len(URLS)
    table = list(csv.reader(io.StringIO(search(store, "*", "--collapse", "all", "--format", "csv").stdout)))
    assert table[0] == ["count", "pattern", "example"]
    assert [tuple(row) for row in table[1:]] == [(str(r["count"]), r["pattern"], r["example"]) for r in rows]
    top = search(store, "*", "--collapse", "all", "--format", "table", "--limit", "1").stdout.splitlines()
    assert top[0].split() == ["COUNT", "PATTERN", "EXAMPLE"]
    assert top[2].split() == ["2", f"{E}/item.php?id={{}}", f"{E}/item.php?id=1"]
    assert top[-1] == "1 pattern"
    assert len(top) == 4


def test_nothing_found_prints_nothing(store: SimpleNamespace) -> None:
    result = search(store, "host:nowhere.example", "--collapse", "all")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--collapse", "paths"), "trawl: error: --collapse takes one of params, ids, all, not 'paths'"),
        (("--collapse", "ids", "--count"), "trawl: error: --collapse lists patterns:"),
        (("--collapse", "ids", "--facet", "host"), "trawl: error: --collapse lists patterns:"),
    ],
)
def test_bad_collapse_is_one_line(store: SimpleNamespace, args: tuple[str, ...], message: str) -> None:
    result = search(store, "*", *args)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(message)


@pytest.mark.parametrize("extra", [(), ("--collapse", "ids")], ids=["records", "collapse"])
def test_a_store_that_fails_mid_search_is_one_line(
    store: SimpleNamespace, tmp_path: Path, extra: tuple[str, ...]
) -> None:
    broken = tmp_path / "broken.db"
    shutil.copyfile(store.db, broken)
    with sqlite3.connect(broken) as db:
        db.execute("ALTER TABLE urls DROP COLUMN mimes")  # opens fine, fails on the first row read
    result = run_scrapy(store.workdir, "search", "*", *extra, "--store", f"sqlite:///{broken}")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "trawl: error: the search failed: OperationalError: no such column: mimes\n"
