"""``trawl crawl live`` asks each page once: the start page behind a ``www.`` redirect, robots.txt.

A site under ``example.net`` whose root redirects to ``www.example.net``, as many
real sites do, reached through the tests' forward proxy (``PROXY_LIST``). What is
asserted is the site's own log of requests, and the records stored.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import assert_no_traceback, run_scrapy
    from tests.servers.local import Answer, SeenRequest
    from tests.servers.website import HostProxy, TlsSite, Website
except ImportError:
    from conftest import assert_no_traceback, run_scrapy  # type: ignore[no-redef]
    from servers.local import Answer, SeenRequest  # type: ignore[no-redef]
    from servers.website import HostProxy, TlsSite, Website  # type: ignore[no-redef]

ROOT, WWW = "example.net", "www.example.net"
HTML = {"Content-Type": "text/html; charset=utf-8"}
RANDOM = re.compile(r"^/[0-9a-f]{24}$")
#: Dotted identifiers as a documentation site's JavaScript holds them (module, class, method).
DOTTED = ("optparse.Option.action", "xml.etree.ElementTree.XML", "argparse.Action", "os.path.join")


def page(title: str, body: str) -> bytes:
    return f"<!DOCTYPE html><html><head><title>{title}</title></head><body>{body}</body></html>".encode()


SCRIPT = "".join(f'var n{i} = "{name}"; ' for i, name in enumerate(DOTTED))
APP_JS = (SCRIPT + 'fetch("/api/items"); fetch("/api/chat.postMessage");').encode()
WWW_PAGES: dict[str, Answer] = {
    "/": (200, page("Home", f"""
        <a href="/">home</a> <a href="http://www.example.net/">home again</a>
        <a href="http://example.net/">the bare root</a> <a href="/guide.html#top">guide</a>
        <a href="/robots.txt">robots</a> <script src="/static/app.js"></script>
        <script src="/static/big.js"></script>
        <script>{SCRIPT} fetch("/api/ping");</script>"""), HTML),
    "/guide.html": (200, page("Guide", '<a href="/">home</a> <a href="index.html">index</a>'), HTML),
    "/index.html": (200, page("Index", '<a href="/guide.html">guide</a>'), HTML),
    "/static/app.js": (200, APP_JS, {"Content-Type": "text/javascript"}),
    "/static/big.js": (200, b'fetch("/api/early");' + b"var pad = 1;" * 250_000 + b'fetch("/api/late");',
                       {"Content-Type": "application/javascript"}),
    "/api/early": (200, b"{}", {"Content-Type": "application/json"}),
    "/api/ping": (200, b'{"ok": true}', {"Content-Type": "application/json"}),
    "/api/items": (200, b"[]", {"Content-Type": "application/json"}),
    "/robots.txt": (200, b"User-agent: *\nDisallow: /private/\n", {"Content-Type": "text/plain"}),
}  # fmt: skip


class WwwSite(Website):
    """``example.net`` redirecting its root to ``www.example.net``; a 404 for the rest."""

    def answer(self, request: SeenRequest) -> Answer:
        host = request.headers.get("host", "").split(":")[0].lower()
        with self._lock:
            self.seen.append((host, request.raw_url))
        if host == ROOT and request.raw_url == "/":
            return 301, b"", {"Location": f"http://{WWW}/"}
        if host == WWW and request.raw_url in WWW_PAGES:
            return WWW_PAGES[request.raw_url]
        return 404, page("Not found", f"Nothing at {request.path}."), HTML


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    workdir = tmp_path_factory.mktemp("live-once")
    with WwwSite() as web, HostProxy(web._httpd.server_address[1], 1) as proxy:
        result = run_scrapy(
            workdir, "crawl", "live", "-a", f"domain={ROOT}", "-a", "depth=5",
            "-s", f"PROXY_LIST={proxy.url}", "-s", "LIVE_JS_MAX_BYTES=1000000",
            "-s", f"STORE_URI=sqlite:///{workdir / 'trawl.db'}",
        )  # fmt: skip
        asked = list(web.seen)
    with sqlite3.connect(workdir / "trawl.db") as con:
        stored = {url for (url,) in con.execute("SELECT url FROM urls")}
    yield SimpleNamespace(result=result, asked=asked, stored=stored)


def test_every_page_is_asked_once_the_redirected_start_page_included(crawled: SimpleNamespace) -> None:
    assert crawled.result.returncode == 0, crawled.result.stderr[-3000:]
    assert_no_traceback(crawled.result)
    pages = Counter((host, path) for host, path in crawled.asked if not RANDOM.match(path))
    assert pages[(WWW, "/")] == 1, crawled.asked
    assert pages[(ROOT, "/")] == 1
    linked = {(WWW, "/guide.html"), (WWW, "/index.html"), (WWW, "/static/app.js"), (WWW, "/api/ping")}
    assert linked <= set(pages)
    assert [key for key, n in pages.items() if n > 1] == []


def test_no_path_is_invented_not_even_a_sitemap(crawled: SimpleNamespace) -> None:
    """Every path asked is linked (or robots.txt, or the soft-404 check's random path): /sitemap.xml
    only with -a sitemap=guess, as katana and gospider ask it only when told."""
    assert not [path for _, path in crawled.asked if path == "/sitemap.xml"], crawled.asked


def test_robots_txt_is_asked_once_per_origin_even_when_a_page_links_it(crawled: SimpleNamespace) -> None:
    robots = Counter(host for host, path in crawled.asked if path == "/robots.txt")
    assert robots == Counter({ROOT: 1, WWW: 1}), crawled.asked
    assert f"http://{WWW}/robots.txt" in crawled.stored  # linked: stored, not asked again


def test_dotted_identifiers_in_javascript_are_not_made_paths(crawled: SimpleNamespace) -> None:
    asked = {path for _, path in crawled.asked}
    assert not [name for name in DOTTED if f"/{name}" in asked or f"/static/{name}" in asked], asked
    assert not [url for url in crawled.stored if any(name in url for name in DOTTED)]
    assert (WWW, "/api/items") in crawled.asked  # the script's real endpoints are still followed
    assert (WWW, "/api/chat.postMessage") in crawled.asked  # a dotted API method under a path: kept


def test_a_script_is_mined_up_to_live_js_max_bytes_and_the_log_says_so(crawled: SimpleNamespace) -> None:
    """A 3 MB script: its first megabyte is read (mined in the mining pool), the rest is not."""
    assert (WWW, "/api/early") in crawled.asked
    assert (WWW, "/api/late") not in crawled.asked
    assert "live: 1 scripts mined only up to LIVE_JS_MAX_BYTES" in crawled.result.stderr
    assert "live: 1 scripts over 64 KiB mined in the pool" in crawled.result.stderr


class HttpsRoot(Website):
    """``example.com``'s root over http: a 301 to ``https://secure.example.com/``."""

    def answer(self, request: SeenRequest) -> Answer:
        host = request.headers.get("host", "").split(":")[0].lower()
        with self._lock:
            self.seen.append((host, request.raw_url))
        if host == "example.com" and request.raw_url == "/":
            return 301, b"", {"Location": "https://secure.example.com/"}
        return 404, page("Not found", f"Nothing at {request.path}."), HTML


class HttpsHome(TlsSite):
    """``secure.example.com``: a home linking the bare root over both schemes, as real sites do."""

    def answer(self, request: SeenRequest) -> Answer:
        self.seen.append(request.raw_url)
        if request.raw_url == "/":
            links = '<a href="https://example.com/">home</a> <a href="http://example.com/">home</a>'
            return 200, page("Home", links), HTML
        return 404, page("Not found", "Nothing here."), HTML


def test_a_root_that_redirects_to_https_is_not_asked_again_over_https(tmp_path: Path) -> None:
    with (
        HttpsRoot() as web,
        HttpsHome() as tls,
        HostProxy(web._httpd.server_address[1], tls.bound_port) as proxy,
    ):
        result = run_scrapy(
            tmp_path, "crawl", "live", "-a", "domain=example.com", "-s", f"PROXY_LIST={proxy.url}",
            "-s", f"STORE_URI=sqlite:///{tmp_path / 'trawl.db'}",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        assert web.seen.count(("example.com", "/")) == 1
        assert tls.seen.count("/") == 1
        assert "CONNECT example.com:443" not in proxy.requests  # https://example.com/: the same 301
