"""Smoke test: the real pywb server comes up and its CDX API serves our WARC.

Also pins the few dialect facts trawl relies on (see servers/PYWB_DIALECT.md),
so a pywb upgrade that changes them fails here first.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

try:  # pywb ships a top-level ``tests`` package into site-packages that can
    from tests.servers.pywb_server import PywbServer  # shadow ours...
except ImportError:  # ...so fall back to pytest's rootdir-less "prepend" import.
    from servers.pywb_server import PywbServer  # type: ignore[no-redef]


def _cap(url: str, ts: str, status: int = 200, mime: str = "text/html") -> dict[str, Any]:
    return {
        "url": url,
        "timestamp": ts,
        "status": status,
        "mime": mime,
        "body": f"<p>{url}</p>".encode(),
    }


CAPTURES = [
    _cap("http://example.com/", "20200101000000"),
    _cap("http://example.com/", "20200615120000"),
    _cap("http://example.com/a?x=1", "20200102000000"),
    _cap("http://example.com/a?x=2", "20200103000000", 404),
    _cap("http://example.com/logo.svg", "20200104000000", mime="image/svg+xml"),
    _cap("http://example.com/app.js", "20200105000000", mime="application/javascript"),
    _cap("http://example.com/old", "20200106000000", 301),
    _cap("http://www.example.com/", "20210101000000"),
    _cap("http://www.example.com/b", "20210102000000", 404),
    _cap("http://www.example.com/c.svg", "20210103000000", mime="image/svg+xml"),
    _cap("http://www.example.com/d", "20210104000000", 301),
    _cap("http://sub.example.com/", "20220101000000"),
    _cap("http://sub.example.com/x.js", "20220102000000", mime="application/javascript"),
    _cap("http://sub.example.com/gone", "20220103000000", 404),
    _cap("http://sub.example.com/img.svg", "20220104000000", mime="image/svg+xml"),
    _cap("http://sub.example.com/r", "20220105000000", 301),
    _cap("http://notexample.com/", "20230101000000"),
    _cap("http://notexample.com/n.js", "20230102000000", mime="application/javascript"),
    _cap("http://notexample.com/z", "20230103000000", 404),
    _cap("http://notexample.com/p.svg", "20230104000000", 301, "image/svg+xml"),
]
EXAMPLE_DOMAIN = [c for c in CAPTURES if "notexample" not in c["url"]]  # 16


Param = str | list[str]


def get(srv: PywbServer, **params: Param) -> tuple[int, str, str]:
    """GET the CDX endpoint; urlencode() so '+' etc. arrive intact, lists repeat."""
    url = srv.cdx_url + "?" + urllib.parse.urlencode(params, doseq=True)
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


def rows(srv: PywbServer, **params: Param) -> list[dict[str, str]]:
    status, ctype, body = get(srv, output="json", **params)
    assert status == 200, body
    assert ctype == "text/x-ndjson"
    return [json.loads(line) for line in body.splitlines() if line]


@pytest.fixture(scope="module")
def pywb() -> Iterator[PywbServer]:
    with PywbServer(CAPTURES) as srv:
        yield srv


@pytest.fixture(scope="module")
def pywb_zipnum() -> Iterator[PywbServer]:
    # 2 lines/block -> 8 blocks for *.example.com; 3 blocks/page -> 3 pages
    with PywbServer(CAPTURES, zipnum=True, lines_per_block=2, pagesize_blocks=3) as srv:
        yield srv


def test_urls(pywb: PywbServer) -> None:
    assert pywb.base_url.startswith("http://127.0.0.1:")
    assert pywb.base_url.endswith("/" + pywb.collection)
    assert pywb.cdx_url == pywb.base_url + "/cdx"


def test_all_captures_served(pywb: PywbServer) -> None:
    got = rows(pywb, url="*.example.com", fl="url,timestamp,status,mime")
    want = {(c["url"], c["timestamp"], str(c["status"]), c["mime"]) for c in EXAMPLE_DOMAIN}
    assert {(r["url"], r["timestamp"], r["status"], r["mime"]) for r in got} == want
    assert len(got) == len(EXAMPLE_DOMAIN)
    notex = rows(pywb, url="notexample.com/*", fl="url")
    assert len(notex) == 4


def test_prefix_excludes_subdomains_but_not_www(pywb: PywbServer) -> None:
    hosts = {urllib.parse.urlsplit(r["url"]).hostname for r in rows(pywb, url="example.com/*", fl="url")}
    assert hosts == {"example.com", "www.example.com"}  # SURT drops "www."


def test_default_output_is_cdxj(pywb: PywbServer) -> None:
    status, ctype, body = get(pywb, url="example.com/a?x=1")
    assert (status, ctype) == (200, "text/x-cdxj")
    key, ts, js = body.splitlines()[0].split(" ", 2)
    assert (key, ts, json.loads(js)["status"]) == ("com,example)/a?x=1", "20200102000000", "200")


def test_negative_filters(pywb: PywbServer) -> None:
    # repeated filter= params are ANDed; regex '+' must be escaped AND %2B-encoded
    got = rows(
        pywb,
        url="*.example.com",
        fl="url,status,mime",
        allowFuzzy="false",
        filter=["!~status:(404|301|302)", r"!~mime:(image/svg\+xml|text/css)"],
    )
    assert got and all(r["status"] == "200" and r["mime"] != "image/svg+xml" for r in got)
    assert len(got) == 7


def test_empty_filter_result_triggers_fuzzy_unless_disabled(pywb: PywbServer) -> None:
    fuzzy = rows(pywb, url="*.example.com", filter="=status:999", fl="url,status,is_fuzzy")
    assert fuzzy and all(r["is_fuzzy"] == "1" and r["status"] == "200" for r in fuzzy)
    assert rows(pywb, url="*.example.com", filter="=status:999", allowFuzzy="false") == []


def test_plain_index_has_no_paging(pywb: PywbServer) -> None:
    # showNumPages on a plain CDXJ index returns the (unfiltered) rows, not a count
    body = get(pywb, url="*.example.com", showNumPages="true", output="json")[2]
    assert "pages" not in body and len(body.splitlines()) == len(EXAMPLE_DOMAIN)


def test_zipnum_paging(pywb_zipnum: PywbServer) -> None:
    status, ctype, body = get(pywb_zipnum, url="*.example.com", showNumPages="true", output="json")
    assert (status, ctype) == (200, "text/x-ndjson")  # one JSON object, not NDJSON rows
    assert json.loads(body) == {"pages": 3, "pageSize": 3, "blocks": 8}
    pages = [rows(pywb_zipnum, url="*.example.com", fl="url,timestamp", page=str(p)) for p in range(3)]
    assert all(pages)
    seen = [(r["url"], r["timestamp"]) for page in pages for r in page]
    assert sorted(seen) == sorted((c["url"], c["timestamp"]) for c in EXAMPLE_DOMAIN)
    # no page= means page 0 only
    assert rows(pywb_zipnum, url="*.example.com", fl="url,timestamp") == pages[0]
    status, _, body = get(pywb_zipnum, url="*.example.com", page="3")
    assert status == 400 and "Last Page is 2" in body
    body = get(pywb_zipnum, url="*.example.com", showNumPages="true", pageSize="2")[2]
    assert json.loads(body)["pages"] == 4  # pageSize= overrides the default (blocks/page)
