"""The PostgreSQL store keeps every declared record kind as the SQLite store does.

Against a real PostgreSQL 15 (:mod:`tests.servers.postgres_server`): a kind's
merge rules, ``NEWER`` and ``new``/``repeat`` give the same rows and marks as
SQLite's; a staged snapshot is invisible until its ``SWITCHES`` batch, and a
crashed load leaves the previous one; ``trawl crawl crates`` loads the db-dump
into it, a rerun of the same dump is skipped, and every ``trawl crates``
question answers from it what it answers from SQLite.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl
import psycopg
import pytest
from scrapy.settings import Settings

from tests.conftest import assert_no_traceback, crawl_args, run_scrapy
from tests.helpers.crates_tables import (
    CRATE_SQL,
    DEPENDENCY_SQL,
    EXPECTED_CRATES,
    EXPECTED_DEPENDENCIES,
    EXPECTED_OTHERS,
    EXPECTED_VERSIONS,
    TABLES,
    VERSION_SQL,
)
from tests.helpers.sqlite_store import FakeStats
from tests.servers.crates_dump import FakeCratesDumpServer, make_dump
from tests.servers.postgres_server import PostgresServer
from trawl.pipeline.context import RunContext
from trawl.records.batches import Batch
from trawl.records.kinds import staged
from trawl.stores.contract import CAPABILITIES, missing_capabilities
from trawl.stores.postgresql import PostgresStore
from trawl.stores.sqlite import SqliteStore


class SightingBatch(Batch):
    """A test kind with every merge rule, a boolean, a float and a ``NEWER`` column."""

    __slots__ = ()
    kind = "sighting"
    SCHEMA = {
        "name": pl.String,
        "port": pl.Int64,
        "first": pl.String,
        "last": pl.String,
        "hits": pl.Int64,
        "origin": pl.String,
        "note": pl.String,
        "open": pl.Boolean,
        "score": pl.Float64,
        "updated_at": pl.String,
    }
    KEY = ("name", "port")
    MERGE = {"first": "min", "last": "max", "hits": "sum", "origin": "first"}
    NEWER = ""


class ReleaseBatch(Batch):
    """A test kind whose newer ``updated_at`` keeps the stored row."""

    __slots__ = ()
    kind = "release"
    SCHEMA = {"id": pl.Int64, "num": pl.String, "updated_at": pl.String}
    KEY = ("id",)
    MERGE: dict[str, str] = {}
    NEWER = "updated_at"


class SwitchBatch(Batch):
    __slots__ = ()
    kind = "release_snapshot"
    SCHEMA = {"snapshot": pl.String}
    KEY = ("snapshot",)
    MERGE: dict[str, str] = {}
    SWITCHES = ("release",)


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


@pytest.fixture
def db(pg: PostgresServer) -> str:
    return pg.create_database(f"k_{uuid.uuid4().hex[:12]}")


def opener(store_class: type, uri: str) -> Callable[[str], Any]:
    crawler = SimpleNamespace(settings=Settings({}), stats=FakeStats())

    def open_(run_id: str) -> Any:
        context = RunContext(
            crawler=crawler, spider=SimpleNamespace(name="test"), run_id=run_id, plugins=None, inputs={}
        )  # type: ignore[arg-type]
        store = store_class(uri, context)
        store.open()
        return store

    return open_


def sightings(*rows: tuple) -> SightingBatch:
    return SightingBatch("test", pl.DataFrame(list(rows), schema=SightingBatch.SCHEMA, orient="row"))


def releases(*rows: tuple, kind: type[Batch] = ReleaseBatch) -> Batch:
    return kind("test", pl.DataFrame(list(rows), schema=ReleaseBatch.SCHEMA, orient="row"))


def test_the_store_now_has_the_read_kinds_capability() -> None:
    assert missing_capabilities(PostgresStore, list(CAPABILITIES)) == ["responses"]


def test_merge_rules_newer_and_marks_are_sqlites(db: str, tmp_path: Path) -> None:
    def scenario(open_: Callable[[str], Any], uri: str, store_class: Any) -> list[Any]:
        seen: list[Any] = []
        one, two = open_("run-1"), open_("run-2")
        writes = [
            (one, sightings(("a", 80, "2020", "2021", 2, "x", "n1", True, 0.5, None),
                            ("b", 443, "2019", "2019", 1, None, "", False, None, None),
                            ("a", 80, "2018", "2020", 3, "y", None, None, 1.5, None))),
            (one, sightings(("a", 80, "2022", "2022", 1, "z", "n2", False, None, None))),
            (two, sightings(("a", 80, "2017", "2017", 1, "w", None, None, 2.5, None),
                            ("c", 22, None, None, None, None, "x, \"y\"\nz", True, -1.0, None))),
            (one, releases((1, "1.0", "2026-08-30T10:00:00.5Z"), (2, "2.0", "2026-01-01T00:00:00Z"))),
            (two, releases((1, "0.9", "2026-08-30T10:00:00Z"), (2, "2.1", "2026-01-01T00:00:00.1Z"))),
        ]  # fmt: skip
        for store, batch in writes:
            seen.append((store.write_batch(batch), batch.frame.to_dicts()))
        one.close("finished")
        two.close("finished")
        for kind in (SightingBatch, ReleaseBatch):
            read = store_class.read_stored_kind(uri, kind, list(kind.SCHEMA), None)
            seen.append(read.sort(list(kind.KEY)).to_dicts())
        return seen

    sqlite_uri = f"sqlite:///{tmp_path / 's.db'}"
    on_postgres = scenario(opener(PostgresStore, db), db, PostgresStore)
    on_sqlite = scenario(opener(SqliteStore, sqlite_uri), sqlite_uri, SqliteStore)
    assert on_postgres == on_sqlite
    assert [n for n, _ in on_postgres[:5]] == [2, 0, 1, 2, 0]
    assert on_postgres[5][0] == {
        "name": "a", "port": 80, "first": "2017", "last": "2022", "hits": 7, "origin": "x", "note": "n2",
        "open": False, "score": 2.5, "updated_at": None,
    }  # fmt: skip
    assert on_postgres[5][1]["note"] == "" and on_postgres[5][2]["note"] == 'x, "y"\nz'
    assert [r["repeat"] for r in on_postgres[1][1]] == [True]  # run 1 wrote a:80 before
    assert [(r["num"], r["updated_at"]) for r in on_postgres[6]] == [
        ("1.0", "2026-08-30T10:00:00.5Z"),  # the stored row is newer: it keeps its values
        ("2.1", "2026-01-01T00:00:00.1Z"),
    ]


def test_a_staged_snapshot_switches_whole_and_a_crashed_load_leaves_the_old_one(db: str) -> None:
    open_ = opener(PostgresStore, db)

    def live() -> list[tuple]:
        return [tuple(r.values()) for r in PostgresStore.read_stored_kind(
            db, ReleaseBatch, ["id", "num"], None).sort("id").to_dicts()]  # fmt: skip

    first = open_("run-1")
    first.write_batch(releases((1, "1.0", None), (2, "2.0", None), kind=staged(ReleaseBatch)))
    assert live() == []  # staged: no reader sees it yet
    first.write_batch(SwitchBatch("test", pl.DataFrame({"snapshot": ["s1"]})))
    assert live() == [(1, "1.0"), (2, "2.0")]
    first.close("finished")

    crashed = open_("run-2")  # a load that stops before its switch
    crashed.write_batch(releases((3, "3.0", None), kind=staged(ReleaseBatch)))
    crashed.close("shutdown")
    assert live() == [(1, "1.0"), (2, "2.0")]

    rerun = open_("run-3")  # its leftovers are emptied: the snapshot is this load's rows only
    rerun.write_batch(releases((2, "2.1", None), kind=staged(ReleaseBatch)))
    rerun.write_batch(SwitchBatch("test", pl.DataFrame({"snapshot": ["s2"]})))
    assert live() == [(2, "2.1")]
    rerun.write_batch(releases((4, "4.0", None), kind=staged(ReleaseBatch)))  # the next load stages anew
    rerun.write_batch(SwitchBatch("test", pl.DataFrame({"snapshot": ["s3"]})))
    rerun.close("finished")
    assert live() == [(4, "4.0")]


def pg_rows(uri: str, sql: str) -> list[tuple]:
    with psycopg.connect(uri) as con:
        found = con.execute(sql).fetchall()
    return [tuple(int(v) if isinstance(v, bool) else v for v in row) for row in found]


QUESTIONS = [
    ("top", "--by", "downloads"),
    ("top", "--by", "recent"),
    ("deps", "tokio"),
    ("rdeps", "tiny", "--transitive"),
    ("updated", "--since", "2016-01-01"),
    ("trends", "--growth", "1.1", "--window", "1"),
]


def test_a_dump_loads_into_postgresql_and_the_questions_answer_as_from_sqlite(
    db: str, workdir: Path, tmp_path: Path
) -> None:
    with FakeCratesDumpServer(make_dump(TABLES)) as server:
        on_pg = {"CRATES_DUMP_URL": server.dump_url, "STORE_URI": db}
        first = run_scrapy(workdir, *crawl_args("crates", None, on_pg))
        assert_no_traceback(first)
        assert first.returncode == 0, first.stderr[-3000:]
        again = run_scrapy(workdir, *crawl_args("crates", None, on_pg))
        assert "crates: skipped the db-dump 2026-09-01-020003" in again.stderr
        on_sqlite = {"CRATES_DUMP_URL": server.dump_url, "STORE_URI": "sqlite:///x.db"}
        assert run_scrapy(tmp_path, *crawl_args("crates", None, on_sqlite)).returncode == 0
    assert pg_rows(db, CRATE_SQL) == EXPECTED_CRATES
    assert pg_rows(db, VERSION_SQL) == EXPECTED_VERSIONS
    assert pg_rows(db, DEPENDENCY_SQL) == EXPECTED_DEPENDENCIES
    for sql, expected in EXPECTED_OTHERS.values():
        assert pg_rows(db, sql) == expected, sql
    for question in QUESTIONS:
        from_pg = run_scrapy(workdir, "crates", *question, "--format", "jsonl", "-s", f"STORE_URI={db}")
        from_sqlite = run_scrapy(
            tmp_path, "crates", *question, "--format", "jsonl", "-s", "STORE_URI=sqlite:///x.db"
        )
        assert from_pg.returncode == 0, from_pg.stderr[-2000:]
        assert from_pg.stdout == from_sqlite.stdout, question
        assert from_pg.stdout.strip(), question
