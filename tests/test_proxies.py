"""Proxy rotation: spread over live proxies, rest the banned, never leak credentials."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import assert_no_traceback, crawl_args, run_scrapy
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.proxy import FakeProxy

SECRET = "pr0xy-S3CRET-pass"
URLS = [f"http://example.com/page{i}" for i in range(12)]


def crawl(workdir: Path, server: FakeCdxServer, proxies: list[str], *extra: str, **settings: object):
    merged = {
        "WAYBACK_BASE_URL": server.base_url,
        "PROXY_LIST": json.dumps(proxies),
        "PROXY_BACKOFF_BASE": 0.5,
        "PROXY_BACKOFF_MAX": 1.0,
        **settings,
    }
    return run_scrapy(workdir, *crawl_args("wayback", "example.com", merged, "-a", "filters=false", *extra))


def server() -> FakeCdxServer:
    return FakeCdxServer(
        [make_capture(u, "20200101000000") for u in URLS], lines_per_page=1, gzip_enabled=False
    )


def test_banned_proxies_rest_and_traffic_moves(workdir: Path) -> None:
    with (
        server() as srv,
        FakeProxy("ban") as banned,
        FakeProxy("captcha") as captcha,
        FakeProxy("forward", ("alice", SECRET)) as good,
    ):
        result = crawl(workdir, srv, [banned.url, captcha.url, good.url], "-o", "urls.txt", LOG_LEVEL="DEBUG")
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(result.lines("urls.txt")) == set(URLS)
    assert len(good.requests) >= 14 and all(r.authorized for r in good.requests)
    # each bad proxy was tried, banned and rested: a few requests, not its share of 14+
    assert 1 <= len(banned.requests) <= 4
    assert 1 <= len(captcha.requests) <= 4
    assert "proxy #1 banned (HTTP 403)" in result.stderr
    assert "proxy #2 banned (block page" in result.stderr
    # the password never appears, at DEBUG level either, nor in the store
    assert SECRET not in result.stderr and SECRET not in result.stdout
    assert SECRET.encode() not in (workdir / "trawl.db").read_bytes()


def test_all_proxies_banned_waits_and_reports(workdir: Path) -> None:
    with server() as srv, FakeProxy("ban") as first, FakeProxy("reset") as second:
        result = crawl(
            workdir, srv, [first.url, second.url], PROXY_MAX_TRIES=3, RETRY_TIMES=0, CLOSESPIDER_TIMEOUT=4
        )
    assert "all 2 proxies are resting; waiting until" in result.stderr
    assert result.returncode == 1
    # resting proxies are not hammered: a handful of tries in 4 s, not hundreds
    assert len(first.requests) + len(second.requests) <= 12


def test_socks_proxy_is_refused_in_one_line(workdir: Path) -> None:
    with server() as srv:
        result = crawl(workdir, srv, [f"socks5://bob:{SECRET}@127.0.0.1:1080"])
    assert result.returncode == 2
    assert_no_traceback(result)
    lines = [line for line in result.stderr.splitlines() if line.startswith("trawl: error:")]
    assert len(lines) == 1 and "HTTP-to-SOCKS bridge" in lines[0]
    assert SECRET not in result.stderr


def test_proxy_list_file(workdir: Path, tmp_path: Path) -> None:
    with server() as srv, FakeProxy("forward") as good:
        listing = tmp_path / "proxies.txt"
        listing.write_text(f"# my proxies\n{good.url}  # the only one\n")
        result = crawl(workdir, srv, [], "-o", "urls.txt", PROXY_LIST_FILE=listing)
    assert result.returncode == 0, result.stderr[-2000:]
    assert set(result.lines("urls.txt")) == set(URLS)
    assert len(good.requests) >= 13


def test_empty_proxy_answer_bans_unless_the_source_answers_empty(workdir: Path) -> None:
    from scrapy.http import Response
    from scrapy.utils.test import get_crawler

    from trawl.politeness.proxies import ProxyRotationMiddleware

    crawler = get_crawler(settings_dict={"PROXY_LIST": ["http://127.0.0.1:1"], "PROXY_BAN_STATUSES": [403]})
    middleware = ProxyRotationMiddleware.from_crawler(crawler)

    class Json:
        empty_answers_are_data = False

    class Cdx:
        empty_answers_are_data = True

    empty = Response("http://x/", status=200, body=b"")
    crawler.spider = Json()
    assert middleware._ban_reason(empty) == "empty answer"
    crawler.spider = Cdx()
    assert middleware._ban_reason(empty) is None
