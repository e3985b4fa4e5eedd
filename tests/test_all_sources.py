"""``scrapy crawl all``: several sources in one process, isolated, merged in one store."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import CrawlResult, assert_no_traceback, run_scrapy
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.inflight import max_in_flight
from tests.servers.otx import FakeOtxServer, OtxUrl, make_urls
from tests.servers.urlscan import FakeUrlscanServer, make_result

SHARED = "https://example.com/shared/page"
OTX_KEY = "OTX-KEY-7f3a9c-SECRET"
URLSCAN_KEY = "URLSCAN-KEY-b41d-SECRET"


def wayback_server() -> FakeCdxServer:
    captures = [
        make_capture(u, "20200101000000")
        for u in (SHARED, "https://example.com/only-wayback", "https://a.example.com/x")
    ]
    return FakeCdxServer(captures, lines_per_page=2)


def otx_server() -> FakeOtxServer:
    return FakeOtxServer(
        urls=[
            OtxUrl(SHARED, "2021-03-04T05:06:07"),
            OtxUrl("https://example.com/only-otx", "2021-01-01T00:00:00"),
        ]
    )


def urlscan_server() -> FakeUrlscanServer:
    return FakeUrlscanServer(
        results=[
            make_result(SHARED, "2022-05-06T07:08:09.000Z"),
            make_result("https://example.com/only-urlscan", "2022-01-01T00:00:00.000Z"),
        ]
    )


def crawl_all(workdir: Path, *args: str, settings: dict[str, object], env: dict | None = None) -> CrawlResult:
    command = ["crawl", "all", "-a", "domain=example.com", "-a", "filters=false", *args]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    return run_scrapy(workdir, *command, env=env)


def table(result: CrawlResult) -> dict[str, list[str]]:
    rows = [line.split() for line in result.stdout.splitlines() if line.strip()]
    return {row[0]: row[1:] for row in rows[2:]}  # skip the header and the rule


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
    (trawl.downloader), and the two together the sum."""
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
    from trawl.ratelimits import format_duration

    assert format_duration(max(0, 600 - 60) * 60 / 60) == "9.0 min"  # 600 requests at 60/60s
