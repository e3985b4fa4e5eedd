"""A redirect out of scope is recorded, never followed: by the probe, and by the live crawl.

Users run ``trawl crawl probe`` and ``trawl crawl live`` only against hosts they
may test. The site (tests/servers/hostile_site.py) is a forward proxy that
answers every host itself and logs every request, so "never followed" is read
from its log: no request to ``evil.example.net``, none to ``127.0.0.1``. Out of
scope: another domain, and a loopback or private address when the target is a
name; by a ``Location`` header, a ``<meta http-equiv=refresh>``, an unknown
path (the soft-404 check's random path), a sitemap robots.txt names, or the
root the live crawl starts from.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import assert_no_traceback, run_scrapy
    from tests.helpers.probe import seed
    from tests.servers.hostile_site import EVIL, HostileSite, Reply, html, redirect
except ImportError:
    from conftest import assert_no_traceback, run_scrapy  # type: ignore[no-redef]
    from helpers.probe import seed  # type: ignore[no-redef]
    from servers.hostile_site import EVIL, HostileSite, Reply, html, redirect  # type: ignore[no-redef]

ORG = "example.org"
REFRESH = html("Moved", "").replace(
    b"<head>", f'<head><meta http-equiv="refresh" content="0; url=http://{EVIL}/refreshed">'.encode()
)


@pytest.fixture
def site() -> Iterator[HostileSite]:
    with HostileSite() as web:
        local = f"http://127.0.0.1:{web.port}/secret"
        web.pages.update(
            {
                f"{ORG}/": Reply(
                    200, html("Home", '<a href="/redir-ext">x</a> <a href="/redir-local">y</a>')
                ),
                f"{ORG}/robots.txt": Reply(
                    200, f"User-agent: *\nSitemap: http://{EVIL}/map.xml\n".encode(), "text/plain"
                ),
                f"{ORG}/redir-ext": redirect(f"http://{EVIL}/stolen"),
                f"{ORG}/redir-local": redirect(local),
                f"{ORG}/refresh": Reply(200, REFRESH),
                f"{ORG}/about": Reply(200, html("About", "<p>in scope</p>")),
                f"www.{ORG}/in": redirect(f"http://{ORG}/about"),
                f"www.{ORG}/": Reply(200, html("www home", "<p>home</p>")),
                "example.com/": redirect(f"http://{EVIL}/"),
            }
        )
        web.fallback[f"login.{ORG}"] = redirect(f"http://{EVIL}/login")  # every unknown path: away
        web.pages[f"login.{ORG}/"] = Reply(200, html("Login", "<p>login</p>"))
        yield web


def out_of_scope(site: HostileSite) -> list[tuple[str, str]]:
    return [(host, path) for host, path in site.requests if not host.endswith(ORG) and host != "example.com"]


def probe_records(db: Path) -> dict[str, dict]:
    with sqlite3.connect(db) as con:
        con.row_factory = sqlite3.Row
        return {row["url"]: dict(row) for row in con.execute("SELECT * FROM probe_records")}


def test_the_probe_records_a_redirect_out_of_scope_and_does_not_follow_it(
    site: HostileSite, tmp_path: Path
) -> None:
    urls = [
        f"http://{ORG}/redir-ext",
        f"http://{ORG}/redir-local",
        f"http://{ORG}/refresh",
        f"http://www.{ORG}/in",
        f"http://login.{ORG}/",
    ]
    seed(tmp_path / "trawl.db", urls)
    result = run_scrapy(
        tmp_path, "crawl", "probe", "-a", f"domain={ORG}", "-s", f"PROXY_LIST={site.url}",
        "-s", f"STORE_URI=sqlite:///{tmp_path / 'trawl.db'}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    assert out_of_scope(site) == []
    records = probe_records(tmp_path / "trawl.db")
    assert set(records) == set(urls)
    ext = records[f"http://{ORG}/redir-ext"]
    assert (ext["status"], ext["final_url"], json.loads(ext["redirects"])) == (
        302,
        f"http://{ORG}/redir-ext",
        [],
    )
    assert ext["error"] == f"redirect out of scope, not followed: http://{EVIL}/stolen"
    local = records[f"http://{ORG}/redir-local"]
    assert local["status"] == 302
    assert local["error"] == f"redirect out of scope, not followed: http://127.0.0.1:{site.port}/secret"
    refresh = records[f"http://{ORG}/refresh"]
    assert (refresh["status"], refresh["title"]) == (200, "Moved")
    assert refresh["error"] == f"redirect out of scope, not followed: http://{EVIL}/refreshed"
    inside = records[f"http://www.{ORG}/in"]  # a redirect within the domain is followed as before
    assert (inside["status"], inside["final_url"], inside["error"]) == (200, f"http://{ORG}/about", None)
    assert json.loads(inside["redirects"]) == [[302, f"http://www.{ORG}/in"]]
    assert records[f"http://login.{ORG}/"]["status"] == 200


@pytest.mark.parametrize("scope", ["domain", r"regex:example\.org|127\.0\.0\.1"], ids=["domain", "regex"])
def test_the_live_crawl_follows_no_redirect_out_of_scope(
    site: HostileSite, tmp_path: Path, scope: str
) -> None:
    """A regex that matches ``127.0.0.1`` does not bring the loopback address into scope."""
    result = run_scrapy(
        tmp_path, "crawl", "live", "-a", f"domain={ORG}", "-a", f"scope={scope}",
        "-s", f"PROXY_LIST={site.url}", "-s", f"STORE_URI=sqlite:///{tmp_path / 'trawl.db'}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    assert out_of_scope(site) == []
    assert (ORG, "/redir-ext") in site.requests  # it was crawled: its redirect was seen, and refused
    assert f"http://{EVIL}/map.xml" in result.stderr  # listed among the out-of-scope URLs
    listed = [line for line in result.stderr.splitlines() if "live:   " in line]
    assert any(line.endswith("/secret") for line in listed)  # 127.0.0.1:PORT is the proxy's: masked


@pytest.mark.parametrize(
    "scope", ["domain", "host", "rdn", r"regex:^http://example\.com/"], ids=["domain", "host", "rdn", "regex"]
)
def test_the_live_crawls_root_redirected_out_of_scope_stops_there(
    site: HostileSite, tmp_path: Path, scope: str
) -> None:
    result = run_scrapy(
        tmp_path, "crawl", "live", "-a", "domain=example.com", "-a", f"scope={scope}",
        "-s", f"PROXY_LIST={site.url}", "-s", f"STORE_URI=sqlite:///{tmp_path / 'trawl.db'}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert ("example.com", "/") in site.requests
    assert out_of_scope(site) == []
    assert f"http://{EVIL}/" in result.stderr
