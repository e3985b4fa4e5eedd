"""``trawl crates top|deps|rdeps|updated|trends`` over a store an API crawl filled (servers/crates_api.py).

The dataset is generated with a known graph and download history (:func:`dataset`);
the expected answers are computed here by brute force over the same objects the
server serves (plain loops, a breadth-first search), never by the code under test.
One crawl fills the store for the module; each test runs the command as a user does.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.servers.crates_api import FakeCrate, FakeCratesApi, FakeVersion
from tests.servers.noida import elasticsearch_url

AGENT = "trawl-tests (https://example.org/trawl; tests@example.org)"
FAST_GATE = ("-s", "RATE_LIMITS_ENABLED=True", "-s", 'RATE_LIMITS={"crates": "100/1s"}')
KINDS = ("normal", "normal", "normal", "build", "dev")
LAST_DAY = date(2026, 8, 31)
DAYS = 30


def _stamp(day: date, hour: int = 10) -> str:
    return f"{day.isoformat()}T{hour:02d}:00:00Z"


def dataset(seed: int = 17, count: int = 14) -> list[FakeCrate]:
    """Crates ``c00``..``c13``: each version depends on some earlier crates (a DAG plus a dev-dependency
    cycle), a yanked newest version here and there, 30 days of downloads with a few crates surging."""
    rng = random.Random(seed)
    crates: list[FakeCrate] = []
    next_dep = 1000
    for i in range(count):
        versions = []
        for j in range(rng.randint(1, 3)):
            created = LAST_DAY - timedelta(days=40 - 10 * j - i)
            deps = []
            earlier = [c.name for c in crates]
            for name in rng.sample(earlier, k=min(len(earlier), rng.randint(0, 3))):
                req = f"^{rng.randint(0, 2)}.{rng.randint(0, 9)}"
                deps.append({"id": next_dep, "crate": name, "req": req, "kind": rng.choice(KINDS)})
                next_dep += 1
            if i == 1 and j == 0:  # a dev-dependency back on a later crate: a cycle through c01
                deps.append({"id": next_dep, "crate": "c05", "req": "*", "kind": "dev"})
                next_dep += 1
            surge = i % 4 == 0
            daily = []
            for d in range(DAYS):
                day = LAST_DAY - timedelta(days=DAYS - 1 - d)
                base = rng.randint(0, 20)
                daily.append((day.isoformat(), base * (5 if surge and d >= DAYS - 7 else 1)))
            stamp, total = _stamp(created), sum(n for _, n in daily)
            versions.append(
                FakeVersion(
                    100 * (i + 1) + j, f"0.{j}.0", stamp, stamp, total, dependencies=deps, daily=daily
                )
            )
        if i % 5 == 3 and len(versions) > 1:
            versions[-1].yanked = True
        updated = max(v.updated_at for v in versions)
        total = rng.randint(0, 10**6)
        crates.append(
            FakeCrate(i + 1, f"c{i:02d}", versions[0].created_at, updated, downloads=total, versions=versions)
        )
    return crates


def current(c: FakeCrate) -> FakeVersion:
    """The rule of the question: the newest version not yanked (the API's default version)."""
    return max((v for v in c.versions if not v.yanked), key=lambda v: v.created_at)


def brute_rdeps(crates: list[FakeCrate], name: str, transitive: bool) -> list[tuple]:
    """BFS over each crate's current version: (name, req, kind, depth, requires), sorted."""
    dependents: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for c in crates:
        for d in current(c).dependencies:
            if d["crate"] != c.name:
                dependents[d["crate"]].append((c.name, d["req"], d.get("kind", "normal")))
    rows, seen, level, depth = [], {name}, {name}, 0
    while level:
        depth += 1
        step = [
            (dep, req, kind, depth, on)
            for on in level
            for dep, req, kind in dependents[on]
            if dep not in seen
        ]
        rows += step
        level = {r[0] for r in step}
        seen |= level
        if not transitive:
            break
    return sorted(rows, key=lambda r: (r[3], r[0], r[4], r[2], r[1]))


def brute_trends(crates: list[FakeCrate], factor: float, window: int) -> list[tuple]:
    per_day: dict[str, dict[date, int]] = defaultdict(lambda: defaultdict(int))
    for c in crates:
        for v in c.versions:
            for day, n in v.daily:
                per_day[c.name][date.fromisoformat(day)] += n
    end = max(day for days in per_day.values() for day in days)
    rows = []
    for name, days in per_day.items():
        last = sum(n for day, n in days.items() if end - timedelta(days=window - 1) <= day <= end)
        before = sum(
            n for day, n in days.items()
            if end - timedelta(days=2 * window - 1) <= day < end - timedelta(days=window - 1)
        )  # fmt: skip
        if last >= factor * before and last >= 1:
            rows.append((name, before, last))
    return sorted(rows)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[FakeCrate]]:
    """The module's store: every crate of :func:`dataset` crawled with ``-a dependencies=true``."""
    workdir = tmp_path_factory.mktemp("crates-questions")
    crates = dataset()
    with FakeCratesApi(dataset()) as api:
        settings = {
            "CRATES_BASE_URL": api.base_url,
            "STORE_URI": "sqlite:///x.db",
            "CRATES_USER_AGENT": AGENT,
        }
        result = run_scrapy(
            workdir,
            *crawl_args("crates", None, settings, "-a", "mode=api", "-a", "dependencies=true", *FAST_GATE),
        )
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir, crates


def ask(workdir: Path, *args: str, fmt: str = "jsonl") -> CrawlResult:
    return run_scrapy(workdir, "crates", *args, "--format", fmt, "-s", "STORE_URI=sqlite:///x.db")


def answer(workdir: Path, *args: str) -> list[dict]:
    result = ask(workdir, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize("transitive", [False, True])
@pytest.mark.parametrize("name", ["c00", "c05"])
def test_rdeps_equal_a_breadth_first_search_over_the_data(
    store: tuple[Path, list[FakeCrate]], name: str, transitive: bool
) -> None:
    workdir, crates = store
    args = ["rdeps", name, *(["--transitive"] if transitive else [])]
    got = [(r["name"], r["req"], r["kind"], r["depth"], r["requires"]) for r in answer(workdir, *args)]
    expected = brute_rdeps(crates, name, transitive)
    assert got == expected
    assert expected, "the dataset gives every asked crate a dependent"
    if transitive:  # the closure reaches further than the direct dependents
        assert max(r[3] for r in got) > 1


@pytest.mark.parametrize(("factor", "window"), [(3.0, 7), (1.5, 5)])
def test_trends_equal_window_sums_over_the_data(
    store: tuple[Path, list[FakeCrate]], factor: float, window: int
) -> None:
    workdir, crates = store
    args = ("trends", "--growth", str(factor), "--window", str(window))
    got = sorted((r["name"], r["previous"], r["last"]) for r in answer(workdir, *args))
    assert got == brute_trends(crates, factor, window)
    assert got


def test_deps_lists_the_current_versions_dependencies(store: tuple[Path, list[FakeCrate]]) -> None:
    workdir, crates = store
    c = next(c for c in crates if len(current(c).dependencies) >= 2)
    got = sorted((r["name"], r["req"], r["kind"]) for r in answer(workdir, "deps", c.name))
    assert got == sorted((d["crate"], d["req"], d["kind"]) for d in current(c).dependencies)


def test_top_and_updated(store: tuple[Path, list[FakeCrate]]) -> None:
    workdir, crates = store
    top = answer(workdir, "top", "--by", "downloads", "--limit", "3")
    assert [r["name"] for r in top] == [
        c.name for c in sorted(crates, key=lambda c: (-c.downloads, c.name))[:3]
    ]
    since = "2026-08-25"
    updated = answer(workdir, "updated", "--since", since)
    expected = sorted((c for c in crates if c.updated_at >= since), key=lambda c: c.updated_at, reverse=True)
    assert [r["name"] for r in updated] == [c.name for c in expected]


def test_the_parquet_layer_gives_the_same_answers(
    store: tuple[Path, list[FakeCrate]], tmp_path: Path
) -> None:
    """Parquet files in the raw layer's layout (as the dump loader writes them), made from the store's
    tables: every question answers the same from both."""
    import sqlite3

    workdir, _ = store
    tables = {"crates": "crate", "versions": "version", "dependencies": "dependency",
              "version_downloads": "version_download"}  # fmt: skip
    with sqlite3.connect(workdir / "x.db") as con:
        for table, kind in tables.items():
            frame = pl.read_database(f"SELECT * FROM {kind}_records", con).drop("first_run", "last_run")
            folder = tmp_path / table / "dump_date=2026-09-01"
            folder.mkdir(parents=True)
            half = frame.height // 2
            frame.head(half).write_parquet(folder / "part-000001.parquet")
            frame.tail(frame.height - half).write_parquet(folder / "part-000002.parquet")
    for question in (
        ["rdeps", "c00", "--transitive"],
        ["trends", "--growth", "2"],
        ["top", "--by", "recent"],
    ):
        from_store = answer(workdir, *question, "--layer", "store")
        from_parquet = answer(workdir, *question, "-s", f"CRATES_PARQUET_DIR={tmp_path}")
        assert from_parquet == from_store and from_store


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["top", "--days", "x"], "--days takes a whole number 1 to 183"),
        (["rdeps", "nosuch"], "no crate named 'nosuch'"),
        (["trends", "--growth", "0.5"], "the growth factor must be a number above 1"),
        (["updated", "--since", "yesterday"], "--since takes a date"),
        (["top", "--transitive"], "--transitive is not an option of top"),
        (["hot"], "ask one of top, deps, rdeps, updated, trends, watch"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    store: tuple[Path, list[FakeCrate]], args: list[str], says: str
) -> None:
    workdir, _ = store
    result = ask(workdir, *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [result.stderr.strip()] and result.stderr.startswith(
        "trawl: error: "
    )
    assert says in result.stderr


def test_a_table_on_request(store: tuple[Path, list[FakeCrate]]) -> None:
    workdir, _ = store
    result = ask(workdir, "rdeps", "c00", fmt="table")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAME", "REQ", "KIND", "DEPTH", "REQUIRES"]
    assert lines[-1].endswith("crates") or lines[-1].endswith("crate")


def test_the_elasticsearch_layer_keeps_each_kind_in_a_strict_index(
    store: tuple[Path, list[FakeCrate]], tmp_path: Path
) -> None:
    """The same crawl into Elasticsearch (noida-db): an index per kind with a strict mapping, the same
    documents as the SQLite store's rows, and the same answers read from it."""
    import sqlite3

    from elasticsearch import Elasticsearch

    workdir, _ = store
    with elasticsearch_url(tmp_path / "noida") as url, FakeCratesApi(dataset()) as api:
        uri = url.replace("http://", "elasticsearch://", 1)
        settings = {"CRATES_BASE_URL": api.base_url, "STORE_URI": uri, "CRATES_USER_AGENT": AGENT,
                    "ELASTICSEARCH_INDEX_PREFIX": "cq"}  # fmt: skip
        extra = ("-a", "mode=api", "-a", "dependencies=true", *FAST_GATE)
        result = run_scrapy(tmp_path, *crawl_args("crates", None, settings, *extra))
        assert_no_traceback(result)
        assert result.returncode == 0, result.stderr[-3000:]
        es = Elasticsearch(url)
        with sqlite3.connect(workdir / "x.db") as con:
            for kind, key in (("crate", "id"), ("version", "id"), ("dependency", "id"),
                              ("version_download", "version_id, date")):  # fmt: skip
                mapping = es.indices.get_mapping(index=f"cq-records-{kind}").body[f"cq-records-{kind}"][
                    "mappings"
                ]
                assert mapping["dynamic"] == "strict"
                columns = [r[1] for r in con.execute(f"PRAGMA table_info({kind}_records)")][:-2]
                rows = con.execute(
                    f"SELECT {', '.join(columns)} FROM {kind}_records ORDER BY {key}"
                ).fetchall()
                hits = es.search(index=f"cq-records-{kind}", size=10_000, sort=[{"trawl_key": "asc"}])[
                    "hits"
                ]["hits"]
                docs = sorted(
                    (tuple(h["_source"].get(c) for c in columns) for h in hits),
                    key=lambda r: tuple(r[columns.index(k.strip())] for k in key.split(",")),
                )
                assert [tuple(int(v) if isinstance(v, bool) else v for v in d) for d in docs] == rows
            props = es.indices.get_mapping(index="cq-records-version").body["cq-records-version"]["mappings"]
            assert props["properties"]["created_at"]["type"] == "date"
            assert props["properties"]["downloads"]["type"] == "long"
            es.close()
        from_es = run_scrapy(tmp_path, "crates", "rdeps", "c00", "--transitive", "--format", "jsonl",
                             "-s", f"STORE_URI={uri}", "-s", "ELASTICSEARCH_INDEX_PREFIX=cq")  # fmt: skip
    assert from_es.returncode == 0, from_es.stderr
    assert [json.loads(line) for line in from_es.stdout.splitlines()] == answer(
        workdir, "rdeps", "c00", "--transitive"
    )
