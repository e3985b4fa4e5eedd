"""``scrapy crawl all``: several sources in one process, isolated, merged in one store."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.helpers.crawl_all import SHARED, crawl_all, otx_server, table, urlscan_server, wayback_server
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.inflight import max_in_flight
from tests.servers.otx import FakeOtxServer, make_urls

OTX_KEY = "OTX-KEY-7f3a9c-SECRET"
URLSCAN_KEY = "URLSCAN-KEY-b41d-SECRET"


def test_one_source_down_the_others_complete(workdir: Path) -> None:
    with wayback_server() as wayback, otx_server() as otx:
        result = crawl_all(
            workdir,
            "-a",
            "sources=wayback,otx,urlscan",
            "-o",
            "urls.txt",
            settings={
                "WAYBACK_BASE_URL": wayback.base_url,
                "OTX_BASE_URL": otx.base_url,
                "URLSCAN_BASE_URL": "http://127.0.0.1:9",
                "RETRY_TIMES": 1,
            },
        )
    assert_no_traceback(result)
    assert result.returncode == 1  # not every selected source completed
    states = {name: row[-1] for name, row in table(result).items()}
    assert states == {"wayback": "complete", "otx": "complete", "urlscan": "failed"}
    assert set(result.lines("urls.txt")) == {
        SHARED,
        "https://example.com/only-wayback",
        "https://a.example.com/x",
        "https://example.com/only-otx",
    }


def test_a_url_from_three_sources_is_one_row(workdir: Path) -> None:
    with wayback_server() as wayback, otx_server() as otx, urlscan_server() as urlscan:
        result = crawl_all(
            workdir,
            "-a",
            "sources=wayback,otx,urlscan",
            "-o",
            "urls.jsonl",
            settings={
                "WAYBACK_BASE_URL": wayback.base_url,
                "OTX_BASE_URL": otx.base_url,
                "URLSCAN_BASE_URL": urlscan.base_url,
            },
        )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = result.stored()
    assert rows[SHARED]["sources"] == "otx,urlscan,wayback"
    assert rows[SHARED]["first_seen"] == "20200101000000"
    assert rows[SHARED]["last_seen"] == "20220506070809"
    records = [json.loads(line) for line in result.lines("urls.jsonl")]
    assert len(records) == len({r["url"] for r in records}) == 5  # each URL once
    shared = next(r for r in records if r["url"] == SHARED)
    assert shared["sources"] == ["otx", "urlscan", "wayback"]
    summary = table(result)
    assert set(summary) == {"wayback", "otx", "urlscan"}
    assert all(row[-1] == "complete" for row in summary.values())


def test_sources_and_exclude(workdir: Path) -> None:
    with wayback_server() as wayback:
        result = crawl_all(
            workdir,
            "-a",
            "exclude=commoncrawl,otx,urlscan,virustotal,intelx,ghostarchive",
            settings={"WAYBACK_BASE_URL": wayback.base_url},
        )
    assert result.returncode == 0, result.stderr[-2000:]
    assert set(table(result)) == {"wayback"}
    unknown = run_scrapy(workdir, "crawl", "all", "-a", "domain=example.com", "-a", "sources=wayback,nope")
    assert unknown.returncode == 2 and "trawl: error: unknown source 'nope'" in unknown.stderr


def test_keys_never_appear_in_a_debug_run(workdir: Path) -> None:
    with wayback_server() as wayback, otx_server() as otx, urlscan_server() as urlscan:
        result = crawl_all(
            workdir,
            "-a",
            "sources=wayback,otx,urlscan",
            "-o",
            "urls.jsonl",
            "-o",
            "urls.csv",
            settings={
                "WAYBACK_BASE_URL": wayback.base_url,
                "OTX_BASE_URL": otx.base_url,
                "URLSCAN_BASE_URL": urlscan.base_url,
                "LOG_LEVEL": "DEBUG",
            },
            env={"OTX_API_KEY": OTX_KEY, "URLSCAN_API_KEY": URLSCAN_KEY},
        )
        assert any(OTX_KEY in str(r.headers) for r in otx.requests)  # the key was used
        assert any(URLSCAN_KEY in str(r.headers) for r in urlscan.requests)
    assert result.returncode == 0, result.stderr[-2000:]
    for key in (OTX_KEY, URLSCAN_KEY):
        assert key not in result.stderr and key not in result.stdout
        for path in workdir.rglob("*"):
            if path.is_file():
                assert key.encode() not in path.read_bytes(), path


def test_check_only_estimates_per_source(workdir: Path) -> None:
    with wayback_server() as wayback, otx_server() as otx:
        result = crawl_all(
            workdir,
            "-a",
            "sources=wayback,otx",
            "-a",
            "check_only=true",
            settings={"WAYBACK_BASE_URL": wayback.base_url, "OTX_BASE_URL": otx.base_url},
        )
        sent = [dict(r.params) for r in wayback.requests]
    assert result.returncode == 0, result.stderr[-2000:]
    assert all("showNumPages" in p for p in sent)  # only the counting request
    summary = table(result)
    assert summary["wayback"][0] == "2" and summary["wayback"][-1] == "complete"
    assert summary["otx"][0] == "1"
    assert summary["wayback"][1:-1] == ["0", "s"]  # 2 requests fit in one window of 60/60s
    assert not (workdir / "trawl.db").exists() or result.stored() == {}


def test_each_source_has_its_own_concurrency_on_one_host(workdir: Path) -> None:
    """Two sources on 127.0.0.1, gates off, servers that take 0.3 s: each source keeps its
    own concurrency in flight (its own crawler, its own download slot), no more
    (trawl.politeness.downloader), and the two together the sum."""
    captures = [make_capture(f"https://example.com/w{i}", "20200101000000") for i in range(8)]
    with (
        FakeCdxServer(captures, lines_per_page=1, latency=0.3) as wayback,
        FakeOtxServer(urls=list(make_urls("example.com", 8)), max_limit=1) as otx,
    ):
        otx.latency = 0.3
        result = crawl_all(
            workdir,
            "-a",
            "sources=wayback,otx",
            settings={
                "WAYBACK_BASE_URL": wayback.base_url,
                "OTX_BASE_URL": otx.base_url,
                "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
                "SOURCE_CONCURRENCY": '{"otx": 3}',
            },
        )
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(wayback.requests) == 10 and len(otx.requests) == 8  # count + 8 pages + past the end
    assert (wayback.max_in_flight(), otx.max_in_flight()) == (2, 3)
    assert max_in_flight(wayback.spans + otx.spans) == 5


def test_estimated_duration_under_the_rate_limit() -> None:
    from trawl.politeness.rates import format_duration

    assert format_duration(max(0, 600 - 60) * 60 / 60) == "9.0 min"  # 600 requests at 60/60s


# --- each source's state from its own errors only -------------------------------------------

#: A plugin that fails the way a bug does: an exception in a hook for one source (Scrapy logs
#: "Error processing ..." naming that source's spider), or an ERROR line naming no spider.
FAULTY_PLUGIN = """
import logging
import os

from trawl import hookimpl


@hookimpl
def trawl_open(context):
    if os.environ.get("FAULTY_ANONYMOUS") == context.source:
        logging.getLogger("some.library").error("an error line that names no source")


@hookimpl
def trawl_filter_batch(batch, context):
    if os.environ.get("FAULTY_SOURCE") == context.source:
        raise RuntimeError(f"plugin bug on {context.source}")
    return None
"""


def faulty_plugin(workdir: Path, **env: str) -> dict[str, str]:
    """The plugin module in a directory of its own; the environment that loads it."""
    module_dir = workdir.parent / "faulty"
    module_dir.mkdir(exist_ok=True)
    (module_dir / "faulty_plugin.py").write_text(FAULTY_PLUGIN, encoding="utf-8")
    return {"PYTHONPATH": str(module_dir), **env}


def test_one_source_errors_the_others_stay_complete(workdir: Path) -> None:
    from tests.servers.otx import make_urls, server_error

    urls = list(make_urls("example.com", 700))  # two OTX pages of 500
    with (
        wayback_server() as wayback,
        FakeOtxServer(urls=urls, fail_pages={2: [server_error(502)] * 5}) as otx,
        urlscan_server() as urlscan,
    ):
        result = crawl_all(
            workdir,
            "-a",
            "sources=wayback,otx,urlscan",
            settings={
                "WAYBACK_BASE_URL": wayback.base_url,
                "OTX_BASE_URL": otx.base_url,
                "URLSCAN_BASE_URL": urlscan.base_url,
                "RETRY_TIMES": 1,
                "RETRY_BACKOFF_BASE": 0.01,
            },
        )
        assert otx.pages_requested().count(2) == 2  # asked, retried once, given up
    assert_no_traceback(result)
    assert result.returncode == 1
    assert any("HTTP 502" in line and "page 2" in line for line in result.errors), result.errors
    summary = table(result)
    states = {name: row[-1] for name, row in summary.items()}
    assert states == {"wayback": "complete", "otx": "partial", "urlscan": "complete"}
    errors = {name: row[4] for name, row in summary.items()}
    assert errors == {"wayback": "0", "otx": "1", "urlscan": "0"}


def crawl_with_faulty_plugin(workdir: Path, **env: str) -> CrawlResult:
    """``crawl all`` over wayback and otx with the faulty plugin loaded."""
    with wayback_server() as wayback, otx_server() as otx:
        return crawl_all(
            workdir,
            "-a",
            "sources=wayback,otx",
            settings={
                "WAYBACK_BASE_URL": wayback.base_url,
                "OTX_BASE_URL": otx.base_url,
                "TRAWL_PLUGINS": '{"faulty_plugin": true}',
            },
            env=faulty_plugin(workdir, **env),
        )


def test_an_exception_in_one_source_is_that_sources_error(workdir: Path) -> None:
    result = crawl_with_faulty_plugin(workdir, FAULTY_SOURCE="otx")
    assert result.returncode == 1
    assert any("plugin bug on otx" in line for line in result.stderr.splitlines())
    states = {name: row[-1] for name, row in table(result).items()}
    assert states == {"wayback": "complete", "otx": "partial"}


def test_an_error_line_of_no_source_fails_the_run_not_a_source(workdir: Path) -> None:
    result = crawl_with_faulty_plugin(workdir, FAULTY_ANONYMOUS="otx")
    assert result.returncode == 1  # an error was shown: the run is not a success
    states = {name: row[-1] for name, row in table(result).items()}
    assert states == {"wayback": "complete", "otx": "complete"}  # but it is no source's
    assert (
        "trawl: 1 ERROR line came from no particular source, first: "
        "some.library: an error line that names no source"
    ) in result.stderr


def test_a_single_source_still_counts_any_error_line(workdir: Path) -> None:
    """``scrapy crawl X`` runs one crawler: every ERROR line in the process is its own."""
    with wayback_server() as wayback:
        settings = {"WAYBACK_BASE_URL": wayback.base_url, "TRAWL_PLUGINS": '{"faulty_plugin": true}'}
        raised = run_scrapy(
            workdir,
            *crawl_args("wayback", "example.com", settings),
            env=faulty_plugin(workdir, FAULTY_SOURCE="wayback"),
        )
        anonymous = run_scrapy(
            workdir,
            *crawl_args("wayback", "example.com", settings),
            env=faulty_plugin(workdir, FAULTY_ANONYMOUS="wayback"),
        )
    assert raised.returncode == 1
    assert "plugin bug on wayback" in raised.stderr
    assert "wayback: partial" in raised.stderr
    assert anonymous.returncode == 1
    assert "wayback: partial" in anonymous.stderr
