"""A second record kind travels the pipeline URLs travel.

The example plugin in ``tests/plugins/trawl-dns`` registers a ``dns`` source
(no domain: :class:`trawl.sources.base.Source`) that reads a fake passive-DNS
API and yields ``dns`` batches declaring their key (name, type, value) and
merge rule (min first_seen, max last_seen, max count). The same hooks carry
them into the same SQLite store as a URL crawl, into a table of their own; a
rerun merges, and the URL records stay exactly as they were.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.passive_dns import FakePassiveDnsServer
from trawl.records.batches import Batch
from trawl.records.kinds import check_declaration

PLUGIN_DIR = Path(__file__).parent / "plugins" / "trawl-dns"
PLUGIN = {"TRAWL_PLUGINS": '{"trawl_dns": true}'}


def dns_record(name: str, rtype: str, value: str, first: str, last: str, count: int) -> dict:
    return {
        "name": name,
        "type": rtype,
        "value": value,
        "first_seen": first,
        "last_seen": last,
        "count": count,
    }


#: Two pages of two records; the first name as a resolver may spell it, one record out of the zone.
FIRST_STATE = [
    dns_record("WWW.Example.com.", "a", "192.0.2.10", "2021-03-01", "2022-06-30", 12),
    dns_record("mail.example.com", "MX", "10 mx.example.com", "2019-05-01", "2020-01-01", 3),
    dns_record("www.example.com", "A", "192.0.2.10", "2021-01-15", "2021-02-01", 2),  # the first, again
    dns_record("example.net", "A", "198.51.100.7", "2020-01-01", "2020-01-01", 1),
]
#: The upstream later: a sighting earlier and later than before, one new record.
SECOND_STATE = [
    dns_record("www.example.com", "A", "192.0.2.10", "2020-11-30", "2024-01-02", 40),
    dns_record("mail.example.com", "MX", "10 mx.example.com", "2019-06-01", "2019-12-01", 3),
    dns_record("api.example.com", "CNAME", "www.example.com", "2023-09-09", "2023-09-10", 1),
]


def plugin_env() -> dict[str, str]:
    """The plugin module on the path, after (not instead of) the code under test."""
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(PLUGIN_DIR), os.environ.get("PYTHONPATH")]))}


def crawl_dns(workdir: Path, server: FakePassiveDnsServer, *extra: str) -> CrawlResult:
    settings = {"DNS_BASE_URL": server.base_url, **PLUGIN}
    result = run_scrapy(
        workdir, *crawl_args("dns", None, settings, "-a", "zone=example.com", *extra), env=plugin_env()
    )
    assert_no_traceback(result)
    return result


def rows(workdir: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(workdir / "trawl.db") as con:
        return con.execute(sql).fetchall()


URLS_SQL = (
    "SELECT url, host, sources, first_seen, last_seen, captures, statuses, mimes,"
    " first_run, last_run FROM urls"
)
DNS_SQL = (
    "SELECT name, type, value, first_seen, last_seen, count,"
    " first_run, last_run FROM dns_records ORDER BY name"
)


def test_dns_records_and_urls_share_a_store_each_in_its_own_table(workdir: Path) -> None:
    captures = [
        make_capture("http://example.com/", "20200101000000"),
        make_capture("http://example.com/", "20210101000000"),
        make_capture("http://example.com/about", "20200505000000", statuscode="301"),
    ]
    with FakeCdxServer(captures, lines_per_page=10) as cdx:
        settings = {"WAYBACK_BASE_URL": cdx.base_url, **PLUGIN}
        urls = run_scrapy(
            workdir, *crawl_args("wayback", "example.com", settings, "-a", "filters=false"), env=plugin_env()
        )
    assert urls.returncode == 0, urls.stderr[-3000:]
    stored_urls = rows(workdir, URLS_SQL + " ORDER BY url")
    assert stored_urls == [
        ("http://example.com/", "example.com", "wayback", "20200101000000", "20210101000000", 2, "200",
         "text/html", 1, 1),
        ("http://example.com/about", "example.com", "wayback", "20200505000000", "20200505000000", 1, "301",
         "text/html", 1, 1),
    ]  # fmt: skip
    assert urls.stat("trawl/urls_new") == "2"  # the URL plugin still counts URLs

    with FakePassiveDnsServer(FIRST_STATE, per_page=2) as upstream:
        first = crawl_dns(workdir, upstream)
        assert [(r.path, r.params) for r in upstream.requests] == [
            ("/v1/records", {"page": "1"}),
            ("/v1/records", {"page": "2"}),
        ]
        assert first.returncode == 0, first.stderr[-3000:]
        assert rows(workdir, DNS_SQL) == [
            ("mail.example.com", "MX", "10 mx.example.com", "2019-05-01", "2020-01-01", 3, 2, 2),
            # normalized by the plugin's hook, then merged with its second sighting (page 2)
            ("www.example.com", "A", "192.0.2.10", "2021-01-15", "2022-06-30", 12, 2, 2),
        ]
        assert (
            first.stat("trawl/filtered/out_of_zone") == "1"
        )  # the filter read -a zone= from the run context
        assert first.stat("trawl/dns_new") == "2"

        upstream.records = SECOND_STATE
        second = crawl_dns(workdir, upstream)
        assert second.returncode == 0, second.stderr[-3000:]
    assert rows(workdir, DNS_SQL) == [
        ("api.example.com", "CNAME", "www.example.com", "2023-09-09", "2023-09-10", 1, 3, 3),
        ("mail.example.com", "MX", "10 mx.example.com", "2019-05-01", "2020-01-01", 3, 2, 3),
        ("www.example.com", "A", "192.0.2.10", "2020-11-30", "2024-01-02", 40, 2, 3),
    ]
    assert second.stat("trawl/dns_new") == "1"
    # Both runs are recorded (no domain), their pages in the ledger; the URLs are exactly as they were.
    assert rows(workdir, "SELECT run, source, domain FROM runs ORDER BY run") == [
        (1, "wayback", "example.com"),
        (2, "dns", None),
        (3, "dns", None),
    ]
    assert rows(workdir, "SELECT run, page, rows FROM pages WHERE source = 'dns' ORDER BY run, page") == [
        (2, "page=1", 2),
        (2, "page=2", 2),
        (3, "page=1", 2),
        (3, "page=2", 1),
    ]
    assert rows(workdir, URLS_SQL + " ORDER BY url") == stored_urls


def test_a_source_without_a_domain_refuses_one(workdir: Path) -> None:
    with FakePassiveDnsServer(FIRST_STATE) as upstream:
        result = crawl_dns(workdir, upstream, "-a", "domain=example.com")
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("trawl: error:")]
    known = "check_only, limit_requests, zone"  # no API key, no domain: no waymore config.yml to read
    assert errors == [f"trawl: error: unknown argument for the dns source: -a domain= (known: {known})"]
    assert upstream.requests == []


class _BadRule(Batch):
    kind = "bad"
    SCHEMA = {"name": pl.String, "seen": pl.String}
    KEY = ("name",)
    MERGE = {"seen": "median"}


class _KeyNotInSchema(Batch):
    kind = "bad"
    SCHEMA = {"name": pl.String}
    KEY = ("id",)


@pytest.mark.parametrize(
    ("batch_type", "message"),
    [
        (_BadRule, "_BadRule.MERGE['seen'] = 'median': not one of first, last, max, min, sum"),
        (_KeyNotInSchema, "_KeyNotInSchema.KEY names id, not in its SCHEMA"),
    ],
)
def test_a_bad_declaration_is_named(batch_type: type[Batch], message: str) -> None:
    with pytest.raises(ValueError) as error:
        check_declaration(batch_type)
    assert str(error.value) == message
