"""``trawl report new``: the URLs first seen in the last crawl, a run or since a date.

Driven as a user drives it: real ``scrapy crawl`` runs against the fake CDX
and OTX servers fill a SQLite store, then ``scrapy report new`` reads it.
The Elasticsearch side runs the same scenario in test_elasticsearch_store.py.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.helpers import processes
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.otx import FakeOtxServer, OtxUrl

FIRST = ["https://example.com/a", "https://example.com/b", "https://sub.example.com/c"]
LATER = ["https://example.com/d", "https://example.com/e"]


def wayback(urls: list[str]) -> FakeCdxServer:
    return FakeCdxServer([make_capture(u, "20200101000000") for u in urls], lines_per_page=2)


def crawl(
    workdir: Path, server: FakeCdxServer, source: str = "wayback", *extra: str, **settings: object
) -> CrawlResult:
    values: dict[str, object] = {"WAYBACK_BASE_URL": server.base_url, "PROGRESS_INTERVAL": 0, **settings}
    args = crawl_args(source, "example.com", values, "-a", "filters=false", *extra)
    if source == "all" and not any(a.startswith("sources=") for a in extra):
        args += ["-a", "sources=wayback,otx"]
    result = run_scrapy(workdir, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def report(workdir: Path, *args: str, status: int = 0) -> CrawlResult:
    result = run_scrapy(workdir, "report", "new", *args)
    assert result.returncode == status, result.stderr[-3000:]
    assert_no_traceback(result)
    return result


def runs(workdir: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(workdir / "trawl.db") as con:
        return con.execute("SELECT run_id, job, source FROM runs ORDER BY run").fetchall()


def test_the_last_crawl_lists_what_it_added_and_a_rerun_says_zero(workdir: Path) -> None:
    with wayback(FIRST) as server:
        crawl(workdir, server)
        first = report(workdir, "--domain", "example.com")
        assert first.stdout.splitlines() == sorted(FIRST)
        assert first.stderr.startswith("trawl: 3 new URLs for example.com in the last crawl (job ")
        server.set_captures([make_capture(u, "20210101000000") for u in FIRST + LATER])
        crawl(workdir, server)
        second = report(workdir, "--domain", "example.com")
        assert second.stdout.splitlines() == LATER
        crawl(workdir, server)
    third = report(workdir, "--domain", "example.com")
    assert third.stdout == ""
    assert third.stderr.startswith("trawl: 0 new URLs for example.com in the last crawl (job ")
    assert len(third.stderr.splitlines()) == 1


def test_crawl_all_is_one_job_and_since_a_run_or_a_date(workdir: Path) -> None:
    otx_urls = [
        OtxUrl("https://example.com/a", "2021-01-01T00:00:00"),
        OtxUrl("https://example.com/otx", "2021-01-01T00:00:00"),
    ]
    with wayback(FIRST) as server, FakeOtxServer(urls=otx_urls) as otx:
        crawl(workdir, server, "all", OTX_BASE_URL=otx.base_url)
        server.set_captures([make_capture(u, "20210101000000") for u in FIRST + LATER])
        crawl(workdir, server, "all", OTX_BASE_URL=otx.base_url)
    recorded = runs(workdir)
    assert len(recorded) == 4
    jobs = [job for _, job, _ in recorded]
    assert jobs[0] == jobs[1] != jobs[2] == jobs[3]  # one job per crawl all, two sources each

    last = report(workdir, "--domain", "example.com", "-o", "new.jsonl")
    rows = [json.loads(line) for line in (workdir / "new.jsonl").read_text().splitlines()]
    assert [r["url"] for r in rows] == LATER
    assert {r["source"] for r in rows} == {"wayback"}
    assert {r["run_id"] for r in rows} == {recorded[2][0] if recorded[2][2] == "wayback" else recorded[3][0]}
    assert list(rows[0]) == [
        "url", "host", "source", "run_id", "sources",
        "first_seen", "last_seen", "captures", "statuses", "mimes",
    ]  # fmt: skip
    assert rows[0]["sources"] == ["wayback"] and rows[0]["first_seen"] == "20210101000000"
    assert "otx, wayback" in last.stderr and "written to new.jsonl" in last.stderr

    # The first job by its id: every URL of either source.
    first = report(workdir, "--domain", "example.com", "--since", jobs[0], "-o", "first.csv")
    table = list(csv.DictReader(io.StringIO((workdir / "first.csv").read_text())))
    by_url = {row["url"]: row for row in table}
    assert sorted(by_url) == sorted({*FIRST, "https://example.com/otx"})
    assert by_url["https://example.com/otx"]["source"] == "otx"
    assert by_url["https://example.com/a"]["sources"] == "otx|wayback"  # provenance as stored now
    assert first.stderr.startswith("trawl: 4 new URLs for example.com in run ")

    # A date before everything: every URL; one after everything: none.
    everything = report(workdir, "--domain", "example.com", "--since", "2000-01-01", "--format", "txt")
    assert len(everything.stdout.splitlines()) == 6
    nothing = report(workdir, "--domain", "example.com", "--since", "2999-01-01T00:00Z", "-o", "none.txt")
    assert (workdir / "none.txt").read_text() == ""
    assert nothing.stderr.startswith("trawl: 0 new URLs for example.com since 2999-01-01T00:00Z")

    # A subdomain's report reads the domain's runs and keeps to the subdomain's URLs.
    sub = report(workdir, "--domain", "sub.example.com", "--since", jobs[0])
    assert sub.stdout.splitlines() == ["https://sub.example.com/c"]
    assert report(workdir, "--domain", "sub.example.com").stdout == ""


def test_a_report_file_with_nothing_new_is_replaced_not_kept(workdir: Path) -> None:
    with wayback(FIRST) as server:
        crawl(workdir, server)
        report(workdir, "--domain", "example.com", "-o", "new.txt")
        assert (workdir / "new.txt").read_text().splitlines() == sorted(FIRST)
        crawl(workdir, server)
    report(workdir, "--domain", "example.com", "-o", "new.txt", "-o", "new.csv")
    assert (workdir / "new.txt").read_text() == ""
    assert (workdir / "new.csv").read_text().splitlines()[0].startswith("url,host,source,run_id")
    assert not list(workdir.glob(".*.part"))


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--domain", "example.com", "--since", "2026-13-45"], 2, "--since '2026-13-45' is not a real date"),
        (
            ["--domain", "example.com", "--since", "no such run!"],
            2,
            "--since takes last, a run id or an ISO date",
        ),
        (
            ["--domain", "example.com", "--since", "nosuchrun"],
            2,
            "--since nosuchrun: no run or job of that id",
        ),
        (["--domain", "other.org"], 1, "the store has no run for other.org"),
        (["--domain", "example.com", "-o", "new.xml"], 2, "new.xml: a report is written as txt, jsonl, csv"),
        ([], 2, "give the domain: trawl report new --domain example.com"),
        (["--domain", "example.com", "-s", "STORE_URI="], 2, "no store to report on"),
    ],
)
def test_bad_input_is_one_line(workdir: Path, args: list[str], status: int, message: str) -> None:
    with wayback(FIRST) as server:
        crawl(workdir, server)
    result = run_scrapy(workdir, "report", "new", *args)
    assert result.returncode == status, result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr
    assert result.stderr.startswith(f"trawl: error: {message}"), result.stderr


# --- -a new_only=true: a crawl exports only the URLs it added to the store -----------------


@pytest.mark.parametrize("source", ["wayback", "all"])
def test_new_only_exports_what_the_run_added(workdir: Path, source: str) -> None:
    extra = ("-a", "sources=wayback") if source == "all" else ()
    new_only = (*extra, "-a", "new_only=true")
    with wayback(FIRST) as server:
        crawl(workdir, server, source, *new_only, "-o", "appended.txt")
        server.set_captures([make_capture(u, "20210101000000") for u in FIRST + LATER])
        crawl(workdir, server, source, *new_only, "-O", "second.jsonl")
        crawl(workdir, server, source, *new_only, "-o", "appended.txt")
        third = crawl(workdir, server, source, *new_only, "-O", "second.jsonl")
    assert sorted((workdir / "appended.txt").read_text().splitlines()) == sorted(FIRST)  # nothing new added
    rows = [json.loads(line) for line in (workdir / "second.jsonl").read_text().splitlines()]
    assert sorted(r["url"] for r in rows) == LATER and all(r["new"] for r in rows)
    # The last run added nothing: -O keeps the file it had (an export is never emptied), and says so.
    assert "second.jsonl kept as it was: this run exported no URL" in third.stderr


def test_new_only_without_a_store_is_refused(workdir: Path) -> None:
    result = run_scrapy(
        workdir,
        *crawl_args(
            "wayback", "example.com", {"STORE_URI": "", "TRAWL_LOG_ALL": "False"}, "-a", "new_only=true"
        ),
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "trawl: error: -a new_only=true exports the URLs the store did not know: it needs a store (STORE_URI)"
    )


@pytest.mark.parametrize("args", [[], ["foo"], ["foo", "bar"]])
def test_a_wrong_report_name_is_the_usage_and_one_line(tmp_path: Path, args: list[str]) -> None:
    result = processes.run(
        [sys.executable, "-m", "trawl.cli", "report", *args], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("Usage\n=====\n  trawl report new --domain DOMAIN"), result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("trawl: error:")]
    assert lines == ["trawl: error: give the report to make: trawl report new --domain example.com"], lines
    assert "failed" not in result.stderr
