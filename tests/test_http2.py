"""HTTP/2 for the probe and the live crawl: what the record says, what the servers saw.

The site (tests/servers/h2site.py) is Twisted's web server in a process of its
own, offering ``h2`` through ALPN on TLS with a certificate made at start; its
log says each connection, the protocol ALPN chose and each request with the
protocol it came by and the connection (the client's port) that carried it.
Beside it: the same site offering only ``http/1.1``, a TLS server without ALPN
at all (Python's ``ssl``, tests/servers/website.py) and a forward proxy that
tunnels ``CONNECT`` (tests/servers/proxy.py). Servers are shared per module;
each test reads the log lines that came after its mark.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import assert_no_traceback, run_scrapy
    from tests.helpers.polling import wait_for
    from tests.servers.h2site import BIG_PAGE, EVIL, H2Site
    from tests.servers.proxy import FakeProxy
    from tests.servers.website import TlsSite
except ImportError:
    from conftest import assert_no_traceback, run_scrapy  # type: ignore[no-redef]
    from helpers.polling import wait_for  # type: ignore[no-redef]
    from servers.h2site import BIG_PAGE, EVIL, H2Site  # type: ignore[no-redef]
    from servers.proxy import FakeProxy  # type: ignore[no-redef]
    from servers.website import TlsSite  # type: ignore[no-redef]

PAGES = 40
#: The probe's question to each origin for a path that cannot exist.
RANDOM_PATH = re.compile(r"/[0-9a-f]{24}")


@pytest.fixture(scope="module")
def h2() -> Iterator[H2Site]:
    with H2Site(pages=PAGES) as site:
        yield site


@pytest.fixture(scope="module")
def h1() -> Iterator[H2Site]:
    with H2Site(pages=PAGES, alpn="http/1.1") as site:
        yield site


@pytest.fixture(scope="module")
def no_alpn() -> Iterator[TlsSite]:
    with TlsSite() as site:
        yield site


def records(db: Path) -> dict[str, dict]:
    with sqlite3.connect(db) as con:
        con.row_factory = sqlite3.Row
        return {row["url"]: dict(row) for row in con.execute("SELECT * FROM probe_records")}


def probe(tmp_path: Path, urls: list[str], *settings: str, env: dict | None = None) -> dict[str, dict]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "urls.txt").write_text("\n".join(urls) + "\n")
    result = run_scrapy(
        tmp_path,
        "crawl", "probe", "-a", "list=urls.txt", "-a", "allow_private=true",
        "-s", f"STORE_URI=sqlite:///{tmp_path / 'trawl.db'}", *settings,
        env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    assert not result.errors, result.errors
    return records(tmp_path / "trawl.db")


def test_the_probe_records_http2_where_offered_and_http11_elsewhere(
    h2: H2Site, h1: H2Site, no_alpn: TlsSite, tmp_path: Path
) -> None:
    marks = h2.mark(), h1.mark()
    two, one, old = h2.origins[0], h1.origins[0], f"https://127.0.0.1:{no_alpn.bound_port}"
    found = probe(tmp_path, [f"{two}/", f"{two}/p/1", f"{two}/p/2", f"{one}/", f"{one}/p/1", f"{old}/"])
    assert {url: (r["status"], r["protocol"]) for url, r in found.items()} == {
        f"{two}/": (200, "HTTP/2"),
        f"{two}/p/1": (200, "HTTP/2"),
        f"{two}/p/2": (200, "HTTP/2"),
        f"{one}/": (200, "HTTP/1.1"),
        f"{one}/p/1": (200, "HTTP/1.1"),
        f"{old}/": (200, "HTTP/1.1"),
    }
    assert (found[f"{two}/p/1"]["title"], found[f"{old}/"]["title"]) == ("Page 1", "Secure home")
    assert found[f"{two}/"]["tls_subject"] == found[f"{one}/"]["tls_subject"]  # the certificate, read alike
    # The HTTP/2 site: everything (random path, favicon, three pages) as streams of one connection.
    asked = h2.since(marks[0], "request")
    assert {row["protocol"] for row in asked} == {"HTTP/2"}
    paths = sorted(row["path"] for row in asked)
    assert [p for p in paths if not RANDOM_PATH.fullmatch(p)] == ["/", "/favicon.ico", "/p/1", "/p/2"]
    assert len(asked) == 5 and len({row["peer"] for row in asked}) == 1
    # The HTTP/1.1-only site: one connection dropped after its handshake (no request on it), then
    # every request once over HTTP/1.1.
    asked = h1.since(marks[1], "request")
    assert {row["protocol"] for row in asked} == {"HTTP/1.1"}
    assert Counter(row["path"] for row in asked if row["path"] in ("/", "/p/1", "/favicon.ico")) == {
        "/": 1, "/p/1": 1, "/favicon.ico": 1,
    }  # fmt: skip
    assert len(asked) == 4
    connections = {row["peer"] for row in h1.since(marks[1], "connection")}
    assert len(connections - {row["peer"] for row in asked}) == 1


def test_bounds_decoding_and_redirect_scope_hold_over_http2(h2: H2Site, tmp_path: Path) -> None:
    mark = h2.mark()
    site = h2.origins[0]
    found = probe(tmp_path, [f"{site}/big", f"{site}/bomb", f"{site}/away", f"{site}/moved"])
    big, bomb, away, moved = (found[f"{site}/{path}"] for path in ("big", "bomb", "away", "moved"))
    assert {r["protocol"] for r in found.values()} == {"HTTP/2"}
    assert (big["status"], big["truncated"], big["title"]) == (200, 1, "Big")
    assert big["content_length"] == len(BIG_PAGE)  # its Content-Length: the whole page
    # 16 MiB of zeros behind 16 KB of gzip: inflated to PROBE_MAX_BYTES and cut there, the status kept.
    assert (bomb["status"], bomb["truncated"], bomb["error"]) == (200, 1, None)
    assert (away["status"], away["error"]) == (302, f"redirect out of scope, not followed: {EVIL}")
    assert (moved["status"], moved["final_url"], moved["title"]) == (200, f"{site}/p/1", "Page 1")
    assert json.loads(moved["redirects"]) == [[301, f"{site}/moved"]]
    assert {row["protocol"] for row in h2.since(mark, "request")} == {"HTTP/2"}


def test_the_live_crawl_fetches_every_page_as_streams_of_one_connection(h2: H2Site, tmp_path: Path) -> None:
    mark = h2.mark()
    port = h2.ports[0]
    result = run_scrapy(
        tmp_path,
        "crawl", "live", "-a", f"domain=127.0.0.1:{port}", "-a", "allow_private=true", "-o", "live.txt",
        "-s", "LIVE_PATTERN_CAP=1000", "-s", "LIVE_HOST_CONCURRENCY=4",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    fetched = h2.since(mark, "request")
    secure = [row for row in fetched if row["protocol"] == "HTTP/2"]
    pages = {f"/p/{n}" for n in range(PAGES)}
    assert pages | {"/"} <= {row["path"] for row in secure}
    assert all(count == 1 for count in Counter(row["path"] for row in secure).values())
    # The plain-http seed's 301s came over HTTP/1.1; every https request over one HTTP/2 connection.
    plain = {row["path"] for row in fetched if row["protocol"] == "HTTP/1.1"}
    assert plain <= {"/", "/robots.txt", "/sitemap.xml"}
    assert len({row["peer"] for row in secure}) == 1
    assert len(h2.since(mark, "tls")) == 1
    # The bomb linked from the home page: failed at LIVE_MAX_BYTES, said once, as over HTTP/1.1.
    assert result.stderr.count("answer over the size limit of 8 MiB (LIVE_MAX_BYTES)") == 1
    assert {f"https://127.0.0.1:{port}{path}" for path in pages} <= set(result.lines("live.txt"))
    assert result.stat("trawl/http2/connections") == "1"


def test_a_proxied_probe_goes_by_http11_through_the_proxy(h2: H2Site, tmp_path: Path) -> None:
    mark = h2.mark()
    site = h2.origins[0]
    with FakeProxy() as proxy:
        found = probe(tmp_path, [f"{site}/", f"{site}/p/3"], "-s", f"PROXY_LIST={proxy.url}")
        tunnels = [row.url for row in proxy.requests]
    assert {url: (r["status"], r["protocol"]) for url, r in found.items()} == {
        f"{site}/": (200, "HTTP/1.1"),
        f"{site}/p/3": (200, "HTTP/1.1"),
    }
    assert tunnels and set(tunnels) == {f"CONNECT 127.0.0.1:{h2.ports[0]}"}
    asked = h2.since(mark, "request")
    assert len(asked) == 4 and {row["protocol"] for row in asked} == {"HTTP/1.1"}


def test_the_proxy_environment_variables_keep_the_live_crawl_on_http11(h2: H2Site, tmp_path: Path) -> None:
    mark = h2.mark()
    with FakeProxy() as proxy:
        # https only: the plain-http seed goes direct and gets its 301 (this proxy's GET follows redirects).
        env = {"https_proxy": proxy.url, "no_proxy": ""}
        result = run_scrapy(
            tmp_path,
            "crawl", "live", "-a", f"domain=127.0.0.1:{h2.ports[0]}", "-a", "allow_private=true",
            "-a", "depth=1", env=env,
        )  # fmt: skip
        tunnels = {row.url for row in proxy.requests if row.url.startswith("CONNECT")}
    assert result.returncode == 0, result.stderr[-3000:]
    assert tunnels == {f"CONNECT 127.0.0.1:{h2.ports[0]}"}
    fetched = h2.since(mark, "request")
    assert {"/", "/p/0", "/p/9"} <= {row["path"] for row in fetched}
    assert {row["protocol"] for row in fetched} == {"HTTP/1.1"}
    assert result.stat("trawl/http2/connections") is None


def test_http2_enabled_false_keeps_every_request_on_http11(h2: H2Site, tmp_path: Path) -> None:
    mark = h2.mark()
    site = h2.origins[0]
    found = probe(tmp_path, [f"{site}/p/4"], "-s", "HTTP2_ENABLED=False")
    assert (found[f"{site}/p/4"]["status"], found[f"{site}/p/4"]["protocol"]) == (200, "HTTP/1.1")
    assert {row["protocol"] for row in h2.since(mark, "request")} == {"HTTP/1.1"}


def test_a_bad_http2_enabled_is_one_error_line(tmp_path: Path) -> None:
    result = run_scrapy(tmp_path, "crawl", "probe", "-a", "list=-", "-s", "HTTP2_ENABLED=maybe")
    assert result.returncode == 2
    assert "trawl: error: HTTP2_ENABLED must be True or False" in result.stderr
    assert_no_traceback(result)


def test_certificate_verification_refuses_the_same_over_both_protocols(h2: H2Site, tmp_path: Path) -> None:
    """The self-signed certificate: accepted by default (the first test), refused with
    DOWNLOAD_VERIFY_CERTIFICATES on, in the same words with HTTP/2 on and off, before any request."""
    mark = h2.mark()
    url = f"{h2.origins[0]}/p/5"
    errors = []
    for on in (True, False):
        found = probe(
            tmp_path / str(on), [url], "-s", "DOWNLOAD_VERIFY_CERTIFICATES=True", "-s", f"HTTP2_ENABLED={on}",
            "-s", "RETRY_ENABLED=False",
        )  # fmt: skip
        assert (found[url]["status"], found[url]["verdict"]) == (None, "dead")
        errors.append(found[url]["error"])
    assert "certificate verify failed" in errors[0]
    assert errors[0] == errors[1]
    assert h2.since(mark, "request") == []


def test_an_unreachable_https_origin_fails_at_once_with_its_connection_error(tmp_path: Path) -> None:
    """Scrapy's HTTP/2 pool never answered the requests waiting for a connection that failed:
    they waited for the whole timeout (20 s), and so did every later request to that origin."""
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]  # closed once the block ends: nothing listens there
    urls = [f"https://127.0.0.1:{port}/", f"https://127.0.0.1:{port}/p/1"]
    found = probe(tmp_path, urls, "-s", "RETRY_ENABLED=False")
    assert [(r["status"], r["verdict"]) for r in found.values()] == [(None, "dead"), (None, "dead")]
    assert all("Connection was refused" in r["error"] for r in found.values()), found


def test_a_stopped_probe_gives_up_its_http2_streams_and_ends(h2: H2Site, tmp_path: Path) -> None:
    """Ctrl-C with a request on the wire that is never answered: given up after the stop's grace
    (3 s), not held for the 20 s timeout, and no traceback."""
    mark = h2.mark()
    (tmp_path / "urls.txt").write_text(f"{h2.origins[0]}/hang\n")
    args = [
        sys.executable, "-m", "scrapy", "crawl", "probe", "-a", "list=urls.txt", "-a", "allow_private=true",
        "-s", f"STORE_URI=sqlite:///{tmp_path / 'trawl.db'}", "-s", "AUTOTHROTTLE_ENABLED=False",
    ]  # fmt: skip
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
    env.pop("SCRAPY_PROJECT", None)
    with subprocess.Popen(args, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True) as proc:
        try:
            hanging = wait_for(lambda: any(r["path"] == "/hang" for r in h2.since(mark, "request")), 60)
            assert hanging and proc.poll() is None
            proc.send_signal(signal.SIGINT)
            stopped = time.monotonic()
            _, stderr = proc.communicate(timeout=30)
            took = time.monotonic() - stopped
        finally:
            if proc.poll() is None:
                proc.kill()
    assert "Traceback" not in stderr, stderr[-3000:]
    assert took < 15, stderr[-3000:]
    assert "partial (shutdown)" in stderr
    assert {row["protocol"] for row in h2.since(mark, "request")} == {"HTTP/2"}


def test_a_graceful_goaway_sends_the_unanswered_streams_again_at_once(tmp_path: Path) -> None:
    """As nginx ends a connection after ``keepalive_requests``: every page once, no retry, no error."""
    with H2Site(pages=PAGES, goaway_after=7) as site:
        port = site.ports[0]
        result = run_scrapy(
            tmp_path,
            "crawl", "live", "-a", f"domain=127.0.0.1:{port}", "-a", "allow_private=true", "-o", "live.txt",
            "-s", "LIVE_PATTERN_CAP=1000", "-s", "LIVE_HOST_CONCURRENCY=4",
        )  # fmt: skip
        answered = [row for row in site.requests() if row["protocol"] == "HTTP/2"]
        goaways = site.events("goaway")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    assert not result.errors, result.errors
    assert len(goaways) >= 5
    pages = {f"/p/{n}" for n in range(PAGES)}
    assert pages | {"/"} <= {row["path"] for row in answered}
    assert all(count == 1 for count in Counter(row["path"] for row in answered).values())
    assert {f"https://127.0.0.1:{port}{path}" for path in pages} <= set(result.lines("live.txt"))
    assert result.stat("retry/count") is None
    assert int(result.stat("trawl/http2/connections")) == len(goaways) + 1
