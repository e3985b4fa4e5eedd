"""``trawl crawl crates -a domain=``: the crates' URLs on a domain land in the URL store as source ``crates``.

What a user sees: the exact set of URLs stored (canonical form, source, the
crate's ``updated_at`` as first and last seen, the run and its domain), from
the db-dump (tests/servers/crates_dump.py) and from the API
(tests/servers/crates_api.py), with the neighbours that are not the domain
left out.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.conftest import assert_no_traceback, crawl_args, run_scrapy
from tests.helpers.crates_tables import CRATE_COLUMNS, TABLES
from tests.servers.crates_api import FakeCrate, FakeCratesApi, FakeVersion
from tests.servers.crates_dump import FakeCratesDumpServer, make_dump

URL_SQL = "SELECT url, host, sources, first_seen, last_seen FROM urls ORDER BY url"

DUMP_CRATES = [
    {
        "id": 1,
        "name": "serde",
        "created_at": "2014-12-05 20:20:39",
        "updated_at": "2026-08-30 10:00:00.5",
        "homepage": "https://Example.com/serde/",
        "repository": "https://github.com/serde-rs/serde",
        "documentation": "https://docs.example.com/serde",
    },
    {
        "id": 2,
        "name": "tokio",
        "created_at": "2016-07-01 00:00:00",
        "updated_at": "2026-08-31 09:08:07",
        "homepage": "https://tokio.rs",
        "documentation": "https://notexample.com/tokio",
        "repository": "http://git.example.com:80/tokio",
    },
    {
        "id": 3,
        "name": "tiny",
        "created_at": "2020-01-01 00:00:00",
        "updated_at": "2020-01-02 00:00:00",
        "homepage": "",
        "repository": "https://example.com.evil.net/tiny",
    },
]


def stored(workdir: Path, sql: str = URL_SQL) -> list[tuple]:
    with sqlite3.connect(workdir / "x.db") as con:
        return con.execute(sql).fetchall()


def test_the_dump_puts_the_crates_urls_on_the_domain_and_its_subdomains_in_the_url_store(
    workdir: Path,
) -> None:
    tables = {**TABLES, "crates": (CRATE_COLUMNS, DUMP_CRATES)}
    with FakeCratesDumpServer(make_dump(tables)) as server:
        settings = {"CRATES_DUMP_URL": server.dump_url, "STORE_URI": "sqlite:///x.db"}
        result = run_scrapy(workdir, *crawl_args("crates", None, settings, "-a", "domain=example.com"))
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert stored(workdir) == [
        ("http://git.example.com/tokio", "git.example.com", "crates", "20260831090807", "20260831090807"),
        ("https://docs.example.com/serde", "docs.example.com", "crates", "20260830100000", "20260830100000"),
        ("https://example.com/serde/", "example.com", "crates", "20260830100000", "20260830100000"),
    ]  # fmt: skip
    # The registry's rows are stored as without the bridge, and the run is the domain's.
    assert stored(workdir, "SELECT id, homepage FROM crate_records ORDER BY id") == [
        (1, "https://Example.com/serde/"),
        (2, "https://tokio.rs"),
        (3, ""),
    ]
    assert stored(workdir, "SELECT source, domain FROM runs") == [("crates", "example.com")]


def test_the_api_mode_bridges_too_and_subs_false_keeps_the_domain_only(workdir: Path) -> None:
    def crate(number: int, name: str, **urls: str) -> FakeCrate:
        version = FakeVersion(number * 10, "1.0.0", "2026-08-30T10:00:00Z", "2026-08-30T10:00:00Z")
        return FakeCrate(
            number, name, "2020-01-01T00:00:00Z", "2026-08-30T10:00:00Z", versions=[version], **urls
        )

    crates = [
        crate(1, "alpha", homepage="https://example.com/alpha", documentation="https://docs.example.com/a"),
        crate(2, "beta", repository="https://www.example.com/beta?x=1", homepage="https://other.org/"),
        crate(3, "gamma", documentation="https://docs.rs/gamma"),
    ]
    with FakeCratesApi(crates) as api:
        settings = {"CRATES_BASE_URL": api.base_url, "STORE_URI": "sqlite:///x.db", "CRATES_USER_AGENT": "t"}
        extra = ("-a", "mode=api", "-a", "domain=example.com", "-a", "subs=false")
        gate = ("-s", "RATE_LIMITS_ENABLED=True", "-s", 'RATE_LIMITS={"crates": "50/1s"}')
        result = run_scrapy(workdir, *crawl_args("crates", None, settings, *extra, *gate))
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [(url, sources, first) for url, _, sources, first, _ in stored(workdir)] == [
        ("https://example.com/alpha", "crates", "20260830100000"),
        ("https://www.example.com/beta?x=1", "crates", "20260830100000"),
    ]


def test_subs_without_a_domain_is_one_line(workdir: Path) -> None:
    result = run_scrapy(
        workdir, *crawl_args("crates", None, {"STORE_URI": "sqlite:///x.db"}, "-a", "subs=false")
    )
    assert_no_traceback(result)
    assert result.returncode == 2
    assert "-a subs= scopes -a domain=, which the crates source was not given" in result.stderr
