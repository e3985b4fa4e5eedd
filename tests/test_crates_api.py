"""``trawl crawl crates -a mode=api|incremental`` against a local crates.io API (tests/servers/crates_api.py).

What a user sees: the rows stored (equal to the server's data, written here from
the same objects the server serves), the requests the server logged (their
times, their User-Agent, which crates were asked for) and the lines printed.
1 request a second makes each request cost a second: only the test about the
rate keeps crates.io's budget; the others turn the gate off or speed it up.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.helpers.crates_tables import DEPENDENCY_COLUMNS, VERSION_COLUMNS
from tests.servers.crates_api import FakeCrate, FakeCratesApi, FakeVersion
from tests.servers.crates_dump import FakeCratesDumpServer, make_dump
from trawl.sources.crates.apirecords import stand_in_id

AGENT = "trawl-tests (https://example.org/trawl; tests@example.org)"


def crates() -> list[FakeCrate]:
    serde = FakeCrate(
        1,
        "serde",
        "2014-12-05T20:20:39.487502Z",
        "2026-08-30T10:00:00.5Z",
        description="A generic serialization/deserialization framework",
        repository="https://github.com/serde-rs/serde",
        downloads=500_000_000,
        keywords=["serde", "serialization"],
        categories=["encoding"],
        versions=[
            FakeVersion(
                11,
                "1.0.200",
                "2026-08-30T10:00:00Z",
                "2026-08-30T10:00:00Z",
                1000,
                license="MIT OR Apache-2.0",
                crate_size=77000,
                rust_version="1.31",
                dependencies=[
                    {"id": 102, "crate": "tiny", "req": "=0.1.0", "kind": "build", "features": ["a b"]}
                ],
                daily=[("2026-08-29", 40), ("2026-08-30", 60)],
            ),
            FakeVersion(12, "1.0.199", "2026-08-01T10:00:00Z", "2026-08-02T10:00:00Z", 5, yanked=True),
        ],
    )
    tokio = FakeCrate(
        2,
        "tokio",
        "2016-07-01T00:00:00Z",
        "2026-08-31T09:08:07.000001Z",
        description="An event-driven, I/O platform",
        homepage="https://tokio.rs",
        documentation="https://docs.rs/tokio",
        downloads=300,
        versions=[
            FakeVersion(
                21,
                "1.40.0",
                "2026-08-31T09:08:07Z",
                "2026-08-31T09:08:07Z",
                license="MIT",
                dependencies=[
                    {"id": 100, "crate": "serde", "req": "^1.0", "features": ["derive", "std"]},
                    {
                        "id": 101,
                        "crate": "tiny",
                        "req": ">=0.1, <0.3",
                        "kind": "dev",
                        "optional": True,
                        "default_features": False,
                        "target": "cfg(unix)",
                    },
                ],
                daily=[("2026-08-31", 7)],
            )
        ],
    )
    tiny = FakeCrate(
        3,
        "tiny",
        "2020-01-01T00:00:00Z",
        "2020-01-02T00:00:00Z",
        versions=[FakeVersion(31, "0.1.0", "2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z", 2, license="")],
    )
    return [serde, tokio, tiny]


def expected_crates(api: FakeCratesApi, ids: dict[str, int], mode: str = "api") -> list[tuple]:
    rows = []
    for c in api.crates.values():
        default = max((v for v in c.versions if not v.yanked), key=lambda v: v.created_at)
        rows.append(
            (ids.get(c.name, stand_in_id(c.name)), c.name, c.created_at, c.updated_at, c.description)
            + (c.homepage, c.documentation, c.repository, c.downloads, default.id, mode)
        )
    return sorted(rows)


def expected_versions(api: FakeCratesApi, ids: dict[str, int], mode: str = "api") -> list[tuple]:
    return sorted(
        (v.id, ids.get(c.name, stand_in_id(c.name)), v.num, v.created_at, v.updated_at, v.downloads)
        + (int(v.yanked), v.license, v.crate_size, v.rust_version, mode)
        for c in api.crates.values()
        for v in c.versions
    )


def expected_dependencies(api: FakeCratesApi, ids: dict[str, int]) -> list[tuple]:
    rows = []
    for c in api.crates.values():
        for v in c.versions:
            for d in v.dependencies:
                features = "[" + ",".join(f'"{f}"' for f in d.get("features", [])) + "]"
                rows.append(
                    (d["id"], v.id, ids.get(d["crate"], stand_in_id(d["crate"])), d["req"])
                    + (int(d.get("optional", False)), int(d.get("default_features", True)), features)
                    + (d.get("target"), d.get("kind", "normal"), None, "api")
                )
    return sorted(rows)


def expected_downloads(api: FakeCratesApi) -> list[tuple]:
    return sorted(
        (v.id, day, n, "api") for c in api.crates.values() for v in c.versions for day, n in v.daily
    )


CRATE_SQL = (
    "SELECT id, name, created_at, updated_at, description, homepage, documentation, repository,"
    " downloads, default_version_id, mode FROM crate_records ORDER BY id"
)
VERSION_SQL = (
    "SELECT id, crate_id, num, created_at, updated_at, downloads, yanked, license, crate_size,"
    " rust_version, mode FROM version_records ORDER BY id"
)
DEPENDENCY_SQL = (
    "SELECT id, version_id, crate_id, req, optional, default_features, features, target, kind,"
    " explicit_name, mode FROM dependency_records ORDER BY id"
)
DOWNLOAD_SQL = (
    "SELECT version_id, date, downloads, mode FROM version_download_records ORDER BY version_id, date"
)
#: A gate that keeps crates.io's shape (one at a time) at a pace the tests can afford.
FAST_GATE = ("-s", "RATE_LIMITS_ENABLED=True", "-s", 'RATE_LIMITS={"crates": "50/1s"}')


def crawl(workdir: Path, base_url: str, *extra: str, agent: str | None = AGENT) -> CrawlResult:
    settings: dict[str, object] = {"CRATES_BASE_URL": base_url, "STORE_URI": "sqlite:///x.db"}
    if agent is not None:
        settings["CRATES_USER_AGENT"] = agent
    return run_scrapy(workdir, *crawl_args("crates", None, settings, *extra))


def rows(workdir: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(workdir / "x.db") as con:
        return con.execute(sql).fetchall()


def paths(api: FakeCratesApi) -> list[str]:
    return [r.path + (f"?{r.raw_query}" if r.raw_query else "") for r in api.requests]


def test_api_mode_sends_one_request_a_second_with_the_user_agent(workdir: Path) -> None:
    with FakeCratesApi(crates()) as api:
        result = crawl(
            workdir, api.base_url, "-a", "mode=api", "-a", "limit=2", "-s", "RATE_LIMITS_ENABLED=True"
        )
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert paths(api) == [
        "/api/v1/crates?per_page=2&sort=alphabetical",
        "/api/v1/crates/serde",
        "/api/v1/crates/serde/downloads",
        "/api/v1/crates/tiny",
        "/api/v1/crates/tiny/downloads",
    ]
    assert {r.header("User-Agent") for r in api.requests} == {AGENT}
    gaps = [b.time - a.time for a, b in zip(api.requests, api.requests[1:], strict=False)]
    assert min(gaps) >= 1.0, gaps
    assert sorted(r[1] for r in rows(workdir, CRATE_SQL)) == ["serde", "tiny"]


def test_api_mode_stores_the_servers_data_through_seek_pages(workdir: Path) -> None:
    with FakeCratesApi(crates()) as api:
        result = crawl(
            workdir, api.base_url, "-a", "mode=api", "-a", "dependencies=true", "-s", "CRATES_API_PAGE_SIZE=2"
        )
        assert_no_traceback(result)
        assert result.returncode == 0, result.stderr[-3000:]
        listing = [p for p in paths(api) if p.startswith("/api/v1/crates?")]
        assert listing == [
            "/api/v1/crates?per_page=2&sort=alphabetical",
            "/api/v1/crates?per_page=2&sort=alphabetical&seek=Mw",
        ]
        assert "/api/v1/crates/serde/1.0.199/dependencies" in paths(api)
        ids: dict[str, int] = {}  # an empty store: every crate gets its stand-in id
        assert rows(workdir, CRATE_SQL) == expected_crates(api, ids)
        assert rows(workdir, VERSION_SQL) == expected_versions(api, ids)
        assert rows(workdir, DEPENDENCY_SQL) == expected_dependencies(api, ids)
        assert rows(workdir, DOWNLOAD_SQL) == expected_downloads(api)


def load_dump(workdir: Path, api: FakeCratesApi, stamp: dict[str, str] | None = None) -> None:
    """The store as a db-dump load leaves it: the server's crates under their real ids."""
    stamp = stamp or {}
    table = [
        {"id": c.id, "name": c.name, "created_at": c.created_at[:-1].replace("T", " "),
         "updated_at": stamp.get(c.name, c.updated_at)[:-1].replace("T", " "), "description": "from the dump"}
        for c in api.crates.values()
    ]  # fmt: skip
    # The core tables a dump must hold; the versions and dependencies are the API's here.
    dump = make_dump({
        "crates": (["id", "name", "created_at", "updated_at", "description"], table),
        "versions": (VERSION_COLUMNS, []),
        "dependencies": (DEPENDENCY_COLUMNS, []),
    })  # fmt: skip
    with FakeCratesDumpServer(dump) as server:
        result = run_scrapy(
            workdir,
            *crawl_args("crates", None, {"CRATES_DUMP_URL": server.dump_url, "STORE_URI": "sqlite:///x.db"}),
        )
    assert result.returncode == 0, result.stderr[-3000:]


def test_incremental_fetches_only_the_crates_updated_since_the_store(workdir: Path) -> None:
    with FakeCratesApi(crates()) as api:
        load_dump(workdir, api)
        tokio = api.crates["tokio"]
        tokio.updated_at = "2026-09-02T08:00:00Z"
        tokio.versions.append(FakeVersion(22, "1.41.0", "2026-09-02T08:00:00Z", "2026-09-02T08:00:00Z", 1))
        api.crates["zebra"] = FakeCrate(
            9, "zebra", "2026-09-03T00:00:00Z", "2026-09-03T00:00:00Z", versions=[
                FakeVersion(91, "0.1.0", "2026-09-03T00:00:00Z", "2026-09-03T00:00:00Z")]
        )  # fmt: skip
        result = crawl(workdir, api.base_url, "-a", "mode=incremental", "-s", "CRATES_API_PAGE_SIZE=2")
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    details = [p for p in paths(api) if not p.startswith("/api/v1/crates?")]
    assert details == [
        "/api/v1/crates/zebra",
        "/api/v1/crates/zebra/downloads",
        "/api/v1/crates/tokio",
        "/api/v1/crates/tokio/downloads",
    ]
    listing = [p for p in paths(api) if p.startswith("/api/v1/crates?")]
    assert listing[0] == "/api/v1/crates?per_page=2&sort=recent-updates"
    assert len(listing) == 2 and "&seek=" in listing[1]  # page 2 begins with serde: known, the walk stops
    stored = {r[1]: r for r in rows(workdir, CRATE_SQL)}
    assert (
        stored["tokio"][0] == 2
        and stored["tokio"][3] == "2026-09-02T08:00:00Z"
        and stored["tokio"][10] == "incremental"
    )
    assert stored["zebra"][0] == stand_in_id("zebra")  # not in the dump: a stand-in id
    assert stored["serde"][4] == "from the dump" and stored["serde"][10] == "dump"  # untouched
    assert (22, 2, "1.41.0") in [r[:3] for r in rows(workdir, VERSION_SQL)]


def test_an_older_dump_does_not_take_back_what_the_api_wrote(workdir: Path) -> None:
    with FakeCratesApi(crates()) as api:
        load_dump(workdir, api)
        assert crawl(workdir, api.base_url, "-a", "mode=api", "-a", "crates=serde").returncode == 0
        load_dump(workdir, api, stamp={"serde": "2026-08-01T00:00:00Z"})  # an older copy of serde
        ids = {c.name: c.id for c in api.crates.values()}
    serde = [r for r in rows(workdir, CRATE_SQL) if r[1] == "serde"]
    assert serde == [r for r in expected_crates(api, ids) if r[1] == "serde"]


def test_against_crates_io_a_user_agent_without_a_contact_is_refused(workdir: Path) -> None:
    for agent in (None, "my-crawler"):
        result = crawl(
            workdir, "https://crates.io", "-a", "mode=api", "-s", "TRAWL_LOG_ALL=False", agent=agent
        )
        assert_no_traceback(result)
        assert result.returncode == 2
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith(
            "trawl: error: the crates.io API asks crawlers for a User-Agent with a contact"
        ), lines


def test_a_429_waits_for_its_retry_after(workdir: Path) -> None:
    with FakeCratesApi(crates()) as api:
        api.fail_once("/api/v1/crates/tiny", api.throttled("2"))
        result = crawl(workdir, api.base_url, "-a", "mode=api", "-a", "crates=tiny", *FAST_GATE)
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    asked = [r for r in api.requests if r.path == "/api/v1/crates/tiny"]
    assert len(asked) == 2 and asked[1].time - asked[0].time >= 1.9
    assert [r[1] for r in rows(workdir, CRATE_SQL)] == ["tiny"]


def test_a_vanished_crate_is_skipped_with_one_line(workdir: Path) -> None:
    with FakeCratesApi(crates()) as api:
        result = crawl(workdir, api.base_url, "-a", "mode=api", "-a", "crates=tiny,gone,serde")
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if "gone" in line]
    assert len(lines) == 1 and "WARNING" in lines[0], lines
    assert "crate gone: not found (HTTP 404 from http://127.0.0.1:" in lines[0]
    assert "crate `gone` does not exist" in lines[0]
    assert sorted(r[1] for r in rows(workdir, CRATE_SQL)) == ["serde", "tiny"]


def test_an_answer_that_is_not_json_skips_its_crate_whole(workdir: Path) -> None:
    with FakeCratesApi(crates()) as api:
        for _ in range(2):
            api.fail_once("/api/v1/crates/serde/downloads", api.not_json())
        result = crawl(
            workdir, api.base_url, "-a", "mode=api", "-a", "crates=serde,tiny",
            "-s", "RETRY_TIMES=1", "-s", "RETRY_BACKOFF_BASE=0.05",
        )  # fmt: skip
    assert_no_traceback(result)
    assert result.returncode == 1
    assert len(result.errors) == 1, result.errors
    assert "the downloads of crate serde: not JSON (19 bytes from http://127.0.0.1:" in result.errors[0]
    assert [r[1] for r in rows(workdir, CRATE_SQL)] == ["tiny"]
    assert [r[0] for r in rows(workdir, VERSION_SQL)] == [31]  # nothing of serde half-written


def test_a_blocked_crawler_stops_at_the_first_403_in_one_line(workdir: Path) -> None:
    with FakeCratesApi(crates()) as api:
        api.blocked_agents.add(AGENT)
        result = crawl(workdir, api.base_url, "-a", "mode=api")
    assert_no_traceback(result)
    assert result.returncode == 1
    assert len(api.requests) == 1
    assert len(result.errors) == 1, result.errors
    assert (
        "the crate listing (page 1): crates.io refused the crawler (HTTP 403 from http://127.0.0.1:"
        in result.errors[0]
    )
    assert "violation of our API data access policy" in result.errors[0]


def test_a_resumed_run_skips_the_crates_it_stored(workdir: Path) -> None:
    """A run stopped by a 429 that outlasts its retries is taken up again with the same JOBDIR."""
    jobdir = str(workdir / "job")
    with FakeCratesApi(crates()) as api:
        api.fail_once("/api/v1/crates/tiny", api.throttled("0"))
        first = crawl(
            workdir, api.base_url, "-a", "mode=api", "-s", f"JOBDIR={jobdir}", "-s", "RETRY_TIMES=0"
        )
        assert first.returncode == 1, first.stderr[-3000:]
        assert len(first.errors) == 1 and "crate tiny: rate limited (HTTP 429 from" in first.errors[0]
        before = len(api.requests)
        second = crawl(workdir, api.base_url, "-a", "mode=api", "-s", f"JOBDIR={jobdir}")
        assert second.returncode == 0, second.stderr[-3000:]
        again = paths(api)[before:]
    assert "resuming run" in second.stderr
    assert again == [
        "/api/v1/crates?per_page=100&sort=alphabetical",
        "/api/v1/crates/tiny",
        "/api/v1/crates/tiny/downloads",
        "/api/v1/crates/tokio",
        "/api/v1/crates/tokio/downloads",
    ]
    assert sorted(r[1] for r in rows(workdir, CRATE_SQL)) == ["serde", "tiny", "tokio"]
