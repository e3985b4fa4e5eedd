"""The progress line says why it is slow, check_only says what failed, counts read right.

Before: a source waiting out its budget repeated ``0 captures/s``; ``check_only``
reported a source whose counting request failed as "0 requests, 0 s"; counters
read "1 requests", "1 errors".
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import CrawlResult, crawl_args, run_scrapy
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.otx import FakeOtxServer, OtxUrl, server_error

NO_KEYS = {"OTX_API_KEY": "", "OTX_API_KEYS": ""}


def lines_with(result: CrawlResult, text: str) -> list[str]:
    return [line for line in result.stderr.splitlines() if text in line]


def test_waiting_on_the_budget_is_said(workdir: Path) -> None:
    captures = [make_capture(f"http://example.com/p{p}", "20200101000000") for p in range(6)]
    with FakeCdxServer(captures, lines_per_page=1) as srv:
        settings = {
            "WAYBACK_BASE_URL": srv.base_url,
            "RATE_LIMITS_ENABLED": True,
            "RATE_LIMITS": '{"wayback": "3/2s"}',
            "SOURCE_CONCURRENCY": '{"wayback": 1}',
            "PROGRESS_INTERVAL": 0.2,
        }
        result = run_scrapy(workdir, *crawl_args("wayback", "example.com", settings, "-a", "filters=false"))
    assert result.returncode == 0, result.stderr[-3000:]
    progress = lines_with(result, "wayback: pages ")
    waiting = [line for line in progress if "| waiting on rate limit (3/2s) until " in line]
    assert waiting, "\n".join(progress)
    assert all(re.search(r"waiting on rate limit \(3/2s\) until \d\d:\d\d:\d\d \|", line) for line in waiting)
    assert not any("0 captures/s" in line for line in waiting)  # said instead of a rate of 0


def test_check_only_says_unknown_with_the_cause_for_a_failed_source(workdir: Path) -> None:
    captures = [make_capture("http://example.com/a", "20200101000000")]
    urls = [OtxUrl("https://example.com/otx", "2021-01-01T00:00:00")]
    with FakeCdxServer(captures) as wayback, FakeOtxServer(urls=urls) as otx:
        otx.fail_pages = {1: [server_error(503)] * 2}  # the first try and its one retry
        settings = {
            "WAYBACK_BASE_URL": wayback.base_url,
            "OTX_BASE_URL": otx.base_url,
            "RETRY_TIMES": 1,
            "RETRY_BACKOFF_BASE": 0.01,
        }
        check = ("-a", "check_only=true")
        both = crawl_args("all", "example.com", settings, "-a", "sources=wayback,otx", *check)
        table = run_scrapy(workdir / "all", *both, env=NO_KEYS)
        otx.fail_pages = {1: [server_error(503)] * 2}
        one = run_scrapy(
            workdir / "one",
            *crawl_args("otx", "example.com", settings, *check),
            env=NO_KEYS,
        )
    rows = {line.split()[0]: line for line in table.stdout.splitlines()[2:] if line.strip()}
    assert "unknown (HTTP 503)" in rows["otx"], table.stdout
    assert " 0 s " not in rows["otx"]
    assert rows["wayback"].split()[1] == "1"  # a source that could count still says its number
    assert lines_with(one, "otx: check only: the number of requests is unknown (HTTP 503)")


def test_counts_follow_plural_rules(workdir: Path) -> None:
    with FakeCdxServer([], blocked=True, latency=0.6) as srv:
        settings = {"WAYBACK_BASE_URL": srv.base_url, "RETRY_TIMES": 0, "PROGRESS_INTERVAL": 0.2}
        result = run_scrapy(workdir, *crawl_args("wayback", "example.com", settings))
    assert result.returncode == 1
    progress = lines_with(result, "wayback: pages ")
    assert progress and "| 1 request |" in progress[0], "\n".join(progress)
    summary = lines_with(result, "wayback: blocked (finished)")
    assert summary, result.stderr[-2000:]
    assert ": 1 request, 0 pages, 0 URLs seen," in summary[0]
    assert ", 1 error, " in summary[0] and "requests" not in summary[0] and "errors" not in summary[0]


def test_pages_walked_past_an_understated_count_raise_the_count(workdir: Path) -> None:
    """``showNumPages`` runs behind a growing index: progress said ``pages 7/6``."""
    captures = [make_capture(f"http://example.com/p{p}", "20200101000000") for p in range(6)]
    with FakeCdxServer(captures, lines_per_page=1) as srv:
        srv.num_pages_override = 2  # the count says 2 pages; there are 6
        settings = {"WAYBACK_BASE_URL": srv.base_url, "PROGRESS_INTERVAL": 0.05}
        result = run_scrapy(workdir, *crawl_args("wayback", "example.com", settings, "-a", "filters=false"))
    assert result.returncode == 0, result.stderr[-3000:]
    # the empty page past the end that stops the walk (archive.org answers so) is no page
    assert (result.stat("trawl/pages"), result.stat("trawl/pages_total")) == ("6", "6")
    for line in lines_with(result, "wayback: pages "):
        done, total = re.search(r"pages (\d+)/(\d+|\?)", line).groups()
        assert total == "?" or int(done) <= int(total), line


def test_the_finish_line_and_the_table_give_one_duration(workdir: Path) -> None:
    captures = [make_capture("http://example.com/a", "20200101000000")]
    with FakeCdxServer(captures) as srv:
        settings = {"WAYBACK_BASE_URL": srv.base_url}
        result = run_scrapy(workdir, *crawl_args("all", "example.com", settings, "-a", "sources=wayback"))
    assert result.returncode == 0, result.stderr[-3000:]
    [finish] = lines_with(result, "wayback: complete (finished) in ")
    said = re.search(r" in (\d+\.\d) s:", finish).group(1)
    row = next(line.split() for line in result.stdout.splitlines() if line.startswith("wayback "))
    assert row[-3:] == [said, "s", "complete"], (finish, result.stdout)
