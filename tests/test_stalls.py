"""A server that accepts the connection and never answers is said, as it happens.

Before: 492 s, four 120 s timeouts, 49 identical progress lines saying "0 errors",
nothing about timeouts until the end. Now the progress line names the requests
outstanding past ``PROGRESS_STALL_AFTER``, every timeout is a WARNING naming the
source and the retry, and each source has a timeout that fits it
(``SOURCE_DOWNLOAD_TIMEOUT``). Timeouts here are short so the tests take seconds.
"""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.helpers.probe import seed
from tests.helpers.sources import crawler_settings, registered_sources
from tests.servers.hostile import HOSTILE_PAGE, HostileServer, example_site
from tests.servers.silent import SilentServer

QUICK = {"RETRY_BACKOFF_BASE": 0.01, "RETRY_BACKOFF_MAX": 0.05, "PROGRESS_INTERVAL": 0.25}


def progress_lines(result: CrawlResult, source: str) -> list[str]:
    return [line for line in result.stderr.splitlines() if f"{source}: pages " in line]


def warnings(result: CrawlResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if "] WARNING:" in line]


def test_a_server_that_never_answers_is_reported_as_it_happens(workdir: Path) -> None:
    settings = {
        **QUICK,
        "SOURCE_DOWNLOAD_TIMEOUT": '{"wayback": 1.5}',
        "PROGRESS_STALL_AFTER": 0.5,
        "RETRY_TIMES": 1,
    }
    started = time.monotonic()
    with SilentServer() as server:
        settings["WAYBACK_BASE_URL"] = server.base_url
        result = run_scrapy(workdir, *crawl_args("wayback", "example.com", settings), timeout=60)
        asked = len(server.requests)
    elapsed = time.monotonic() - started
    host = server.base_url.split("//")[1]
    assert result.returncode == 1
    assert asked == 2  # the count request and its one retry
    said = warnings(result)
    assert any(f"wayback: timeout: no answer for {host} within 1.5 s; retry 1 of 1" in line for line in said)
    assert any(f"wayback: timeout: no answer for {host} within 1.5 s; giving up" in line for line in said)
    lines = progress_lines(result, "wayback")
    stalled = [line for line in lines if re.search(r"\| waiting [01] s on 1 request to 127\.0\.0\.1$", line)]
    assert stalled, "\n".join(lines)
    assert any("| 0 errors | 1 timeout |" in line for line in lines)  # counted as it happened
    assert any("cannot reach" in e for e in result.errors)
    assert elapsed < 30  # two 1.5 s timeouts, not two of DOWNLOAD_TIMEOUT=120


def test_each_source_has_a_timeout_that_fits_it(workdir: Path) -> None:
    """Every registered source, the record sources included, declares a timeout that fits it
    and gets it; the live crawl's and the probe's are seen at work in the tests below."""
    sources = registered_sources()
    timeouts = {name: crawler_settings(cls).getfloat("DOWNLOAD_TIMEOUT") for name, cls in sources.items()}
    assert {name: cls.default_download_timeout for name, cls in sources.items()} == timeouts
    assert timeouts["otx"] < timeouts["wayback"] and timeouts["urlscan"] < timeouts["commoncrawl"]
    assert timeouts["live"] <= 30 and timeouts["probe"] <= 30  # a live page answers in seconds
    assert timeouts["responses"] <= timeouts["wayback"]  # one archived response, not a CDX page
    assert timeouts["crates"] == max(timeouts.values()) == 3600  # one answer: the whole dump
    seed(workdir / "trawl.db", ["http://example.com/a"])  # the URL whose archived responses are asked
    with SilentServer() as wayback, SilentServer() as otx, SilentServer() as crates:
        settings = {
            **QUICK,
            "SOURCE_DOWNLOAD_TIMEOUT": '{"wayback": 3, "otx": 1, "crates": 1, "responses": 1}',
            "RETRY_TIMES": 0,
            "WAYBACK_BASE_URL": wayback.base_url,  # the wayback source's, and the responses' lookups
            "OTX_BASE_URL": otx.base_url,
            "CRATES_DUMP_URL": f"{crates.base_url}/db-dump.tar.gz",
        }
        args = crawl_args("all", "example.com", settings, "-a", "sources=wayback,otx,crates,responses")
        result = run_scrapy(workdir, *args, timeout=60)
    said = warnings(result)
    for source, within in (("otx", 1), ("wayback", 3), ("responses", 1)):
        gave_up = f"within {within} s; giving up"
        assert any(f"{source}: timeout: no answer for" in line and gave_up in line for line in said), said
    # The dump's request is not retried (a retry would restart the archive under its reader): no
    # timeout WARNING, its one ERROR says it.
    dump = re.compile(r"\] ERROR: crates: cannot reach \S+/db-dump\.tar\.gz: .* took longer than 1\.0 s")
    assert any(dump.search(line) for line in result.errors), result.errors
    states = {row.split()[0]: row.split()[-1] for row in result.stdout.splitlines()[2:] if row.strip()}
    assert states == dict.fromkeys(("wayback", "otx", "crates", "responses"), "failed"), result.stdout


def test_download_timeout_on_the_command_line_still_applies_to_every_source(workdir: Path) -> None:
    with SilentServer() as server:
        settings = {**QUICK, "DOWNLOAD_TIMEOUT": 1, "RETRY_TIMES": 0, "WAYBACK_BASE_URL": server.base_url}
        result = run_scrapy(workdir, *crawl_args("wayback", "example.com", settings), timeout=60)
    assert any("wayback: timeout" in line and "within 1 s; giving up" in line for line in warnings(result))


def rows(workdir: Path, table: str) -> dict[str, dict]:
    with sqlite3.connect(workdir / "trawl.db") as con:
        con.row_factory = sqlite3.Row
        return {row["url"]: dict(row) for row in con.execute(f"SELECT * FROM {table}")}


def dribbled(workdir: Path, source: str) -> tuple[CrawlResult, list[str], float]:
    """``trawl crawl SOURCE`` of example.com, its pages through a hostile server (``PROXY_LIST``)
    whose :data:`HOSTILE_PAGE` dribbles 16 bytes every 0.2 s, forever; a timeout of 1 s."""
    settings = {
        **QUICK,
        "SOURCE_DOWNLOAD_TIMEOUT": f'{{"{source}": 1}}',
        "RETRY_TIMES": 3,
        "STORE_URI": "sqlite:///trawl.db",
    }
    started = time.monotonic()
    with HostileServer("dribble", normal=example_site, content_type="text/html") as server:
        settings["PROXY_LIST"] = server.base_url
        result = run_scrapy(workdir, *crawl_args(source, "example.com", settings), timeout=60)
        asked = [line for line in server.requests if HOSTILE_PAGE in line]
    return result, asked, time.monotonic() - started


def assert_named_as_it_happens(result: CrawlResult, source: str) -> None:
    """The two timeouts of the page (its try and its one retry) are WARNINGs naming the page."""
    page = re.escape(f"http://example.com{HOSTILE_PAGE}")
    arriving = r"answer still arriving after 1 s \(\d+ bytes received\); "
    still = rf"\] WARNING: {source}: timeout: {page}: {arriving}"
    said = warnings(result)
    assert [line for line in said if re.search(still + "retry 1 of 1$", line)], said
    assert [line for line in said if re.search(still + "giving up$", line)], said
    assert not any("no answer" in line for line in said)


def test_a_live_page_still_dribbling_at_the_timeout_is_named_and_the_run_ends(workdir: Path) -> None:
    """Before: the live crawl's timeout WARNINGs named the host only (``live: timeout: example.com:
    answer still arriving...``): on a site of a thousand pages, not which one."""
    result, asked, elapsed = dribbled(workdir, "live")
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]  # a page of the target failed, not the run
    assert_named_as_it_happens(result, "live")
    assert len(asked) == 2  # tried twice, not RETRY_TIMES + 1
    page = rows(workdir, "link_records")[f"http://example.com{HOSTILE_PAGE}"]
    assert (page["verdict"], page["status"]) == ("error", None)
    assert rows(workdir, "link_records")["http://example.com/"]["verdict"] == "page"
    assert elapsed < 20


def test_a_probed_url_still_dribbling_at_the_timeout_is_named_and_the_run_ends(workdir: Path) -> None:
    """Before: the probe's timeout WARNINGs named the host only; the URL was in its record alone."""
    seed(workdir / "trawl.db", ["http://example.com/", f"http://example.com{HOSTILE_PAGE}"])
    result, asked, elapsed = dribbled(workdir, "probe")
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_named_as_it_happens(result, "probe")
    assert len(asked) == 2
    record = rows(workdir, "probe_records")[f"http://example.com{HOSTILE_PAGE}"]
    assert record["verdict"] == "dead"
    assert re.fullmatch(r"answer still arriving after 1 s \(\d+ bytes received\)", record["error"])
    assert rows(workdir, "probe_records")["http://example.com/"]["verdict"] == "live"
    assert elapsed < 20
