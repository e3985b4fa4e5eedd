"""The benchmark helpers of the fake servers: pre-rendered pages are the live answers, and
the in-flight count sees requests that overlap (bench/bench_sources.py relies on both)."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from typing import Any

from tests.servers.commoncrawl import FakeCommonCrawl, cc_record, collinfo_entry
from tests.servers.inflight import max_in_flight
from tests.servers.otx import FakeOtxServer, make_urls
from tests.servers.urlscan import FakeUrlscanServer, make_result

CRAWL = "CC-MAIN-2025-33"


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def answers(server: Any, urls: list[str], headers: dict[str, str] | None = None) -> list[tuple[int, bytes]]:
    return [get(server.base_url + url, headers) for url in urls]


def test_max_in_flight() -> None:
    assert max_in_flight([]) == 0
    assert max_in_flight([(0.0, 1.0), (1.0, 2.0)]) == 1  # one ends as the other starts
    assert max_in_flight([(0.0, 3.0), (1.0, 2.0), (1.5, 4.0), (3.5, 5.0)]) == 3


def test_otx_prerendered_pages_are_the_live_ones() -> None:
    urls = [f"/api/v1/indicators/domain/example.com/url_list?limit=500&page={p}" for p in (1, 2, 3)]
    with FakeOtxServer(urls=list(make_urls("example.com", 1100))) as otx:
        live = answers(otx, urls)
        assert otx.prerender_pages("domain", "example.com", 500) == 3
        otx.urls = []  # served from the cache from now on
        assert answers(otx, urls) == live


def test_urlscan_prerendered_pages_are_the_live_ones() -> None:
    results = [
        make_result(f"https://example.com/{i}", f"2023-01-{1 + i % 28:02d}T10:00:00.000Z") for i in range(250)
    ]
    with FakeUrlscanServer(results=results) as server:
        first = get(server.base_url + "/api/v1/search/?q=domain:example.com&size=100")
        assert server.prerender_pages("domain:example.com", 100) == 3
        server.results = []
        assert get(server.base_url + "/api/v1/search/?q=domain:example.com&size=100") == first
        after = ",".join(str(v) for v in json.loads(first[1])["results"][-1]["sort"])
        status, body = get(
            server.base_url + f"/api/v1/search/?q=domain:example.com&size=100&search_after={after}"
        )
        assert status == 200 and len(json.loads(body)["results"]) == 100


def test_commoncrawl_prerendered_pages_are_the_live_ones() -> None:
    records = [cc_record(f"https://example.com/p{i}", "20250801000000") for i in range(60)]
    collinfo = [collinfo_entry(CRAWL, "2025-08-01T00:00:00", "2025-08-14T00:00:00")]
    params = [("url", "*.example.com/*"), ("output", "json"), ("fl", "url,timestamp")]
    query = "&".join(f"{k}={v}" for k, v in params)
    urls = [f"/{CRAWL}-index?{query}&page={p}" for p in (0, 1)]
    with FakeCommonCrawl({CRAWL: records}, collinfo=collinfo, lines_per_block=6) as cc:
        live = answers(cc, urls, {"Accept-Encoding": "gzip"})
        assert cc.prerender_pages(CRAWL, params) == 2
        cc.indexes[CRAWL].records = [{}] * len(records)  # a render now would fail
        assert answers(cc, urls, {"Accept-Encoding": "gzip"}) == live


def test_requests_waiting_for_the_latency_are_in_flight_together() -> None:
    with FakeOtxServer(urls=list(make_urls("example.com", 3))) as otx:
        otx.latency = 0.3
        url = otx.base_url + "/api/v1/indicators/domain/example.com/url_list?page=1"
        threads = [threading.Thread(target=get, args=(url,)) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # a span is recorded once its answer went out: the client may have read it first
        deadline = time.monotonic() + 5
        while len(otx.spans) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(otx.spans) == 3
        assert otx.max_in_flight() == 3
