"""Tests of the fake IA CDX server itself (tests/servers/ia_cdx.py), over real HTTP.

Why: every IA spider test and the benchmark trust this server to speak web.archive.org's
dialect; these tests pin it to the recorded samples in /work/shared/api-samples (byte for
byte where a recording exists) and to the CDXServer.java semantics documented in
/work/shared/api-formats.md section a.
"""

from __future__ import annotations

import gzip
import json
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import surt

try:  # pywb installs a top-level ``tests`` package into site-packages that can shadow
    from tests.servers.ia_cdx import (  # ours; fall back to pytest's "prepend" import.
        BLOCKED_SITE_ERROR,
        NO_PAGE,
        Capture,
        FakeCdxServer,
        generate_dataset,
        make_capture,
        rate_limited,
        service_unavailable,
    )
except ImportError:
    from servers.ia_cdx import (  # type: ignore[no-redef]
        BLOCKED_SITE_ERROR,
        NO_PAGE,
        Capture,
        FakeCdxServer,
        generate_dataset,
        make_capture,
        rate_limited,
        service_unavailable,
    )

SAMPLES = Path(__file__).parent / "data"  # byte-identical copies of ../shared/api-samples


class Resp:
    """Status, headers and the *decoded* body of one urllib exchange (errors included)."""

    def __init__(self, status: int, headers: dict[str, str], raw: bytes) -> None:
        self.status = status
        self.headers = headers
        self.raw = raw
        enc = headers.get("content-encoding", "")
        self.body = gzip.decompress(raw) if enc == "gzip" else raw

    def json(self) -> list[list[str]]:
        return json.loads(self.body)


def get(
    srv: FakeCdxServer,
    params: Sequence[tuple[str, str]] | str,
    *,
    gzip_ok: bool = False,
    path: str | None = None,
) -> Resp:
    """GET the endpoint; ``params`` may be a raw (already encoded) query string."""
    query = params if isinstance(params, str) else urllib.parse.urlencode(list(params))
    url = (path and f"http://127.0.0.1:{srv.port}{path}" or srv.endpoint) + "?" + query
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"} if gzip_ok else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            hdrs = {k.lower(): v for k, v in r.headers.items()}
            return Resp(r.status, hdrs, r.read())
    except urllib.error.HTTPError as e:
        hdrs = {k.lower(): v for k, v in e.headers.items()}
        return Resp(e.code, hdrs, e.read())


def _sample_body(name: str, marker: str) -> str:
    return (SAMPLES / name).read_text().split(marker, 1)[1]


def _text_sample_sections() -> list[str]:
    """Bodies of the three recorded resumeKey requests (edgi cassette, 2022)."""
    text = (SAMPLES / "ia_cdx_text_resumekey.txt").read_text()
    bodies = []
    for section in text.split("# ==== GET ")[1:]:
        raw = section.split("# ---- body ----\n", 1)[1]
        bodies.append(raw.rstrip("\n") + "\n" if raw.strip() else "")
    return bodies


def _rows(body: str) -> list[Capture]:
    return [Capture(*line.split(" ")) for line in body.splitlines() if line.count(" ") == 6]


# Small hand-made index used by most tests: 3 URLs of example.com + sub-hosts + decoys.
CAPS = [
    make_capture("http://example.com/", "20091231235959"),
    make_capture("http://example.com/", "20100101000000"),
    make_capture("https://www.example.com/", "20111231235959"),
    make_capture("https://example.com/", "20120101000000", statuscode="301"),
    make_capture("http://example.com/a.html", "20100505050505"),
    make_capture("http://example.com:80/a.html", "20110505050505", "warc/revisit", "-"),
    make_capture("https://example.com/logo.svg", "20110101000000", "image/svg+xml"),
    make_capture("https://example.com/x.js", "20110101000000", "application/javascript"),
    make_capture("https://blog.example.com/post/1", "20130101000000"),
    make_capture("https://blog.example.com/post/1", "20140101000000", statuscode="404"),
    make_capture("https://a.b.example.com/deep", "20150101000000", "text/htmlx"),
    make_capture("https://notexample.com/", "20110101000000"),
    make_capture("https://example.com.evil.net/", "20110101000000"),
]
IN_DOMAIN = [c for c in sorted(CAPS) if not c.urlkey.startswith(("com,notexample", "net,"))]


@pytest.fixture
def srv() -> Iterator[FakeCdxServer]:
    with FakeCdxServer(CAPS, lines_per_page=5) as s:
        yield s


# ---- wire format ----------------------------------------------------------------------


def test_json_body_is_byte_identical_to_recorded_sample() -> None:
    expected = _sample_body("ia_cdx_json_limit10.txt", "# ---- body (verbatim) ----\n")
    rows = json.loads(expected)[1:]
    extra = Capture(*rows[0][:1], "20090101000000", *rows[0][2:])  # sorts last: cut by limit
    with FakeCdxServer([Capture(*r) for r in rows] + [extra]) as s:
        # the recorded request (cdx_toolkit sent page=0 too)
        params = [("url", "commoncrawl.org/*"), ("output", "json"), ("limit", "10")]
        r = get(s, [*params, ("page", "0")], gzip_ok=True)
        assert r.status == 200
        assert r.headers["content-type"] == "application/json"
        assert r.headers["content-encoding"] == "gzip"
        assert r.headers["server"] == "nginx"
        assert r.headers["x-location"] == "cdx"
        assert r.headers["x-ts"] == "200"
        assert r.body.decode() == expected  # exact bytes: compact rows, ",\n", "]]\n"
        assert get(s, params).body == r.body  # unpaged: same answer
        assert len(get(s, params[:2]).json()) == 12  # no limit: header + 11 rows
        assert r.body.endswith(b"]]\n") and b", " not in r.body


def test_make_capture_urlkey_matches_recorded_urlkey() -> None:
    c = make_capture("http://www.commoncrawl.org:80/", "20080328041443")
    assert c.urlkey == "org,commoncrawl)/"
    assert len(c.digest) == 32 and c.digest.isalnum() and c.digest.isupper()


def test_text_output_and_resume_key_match_recorded_sample() -> None:
    bodies = _text_sample_sections()
    caps = _rows(bodies[0]) + _rows(bodies[1])
    base = (
        "url=cnn.com&limit=25&from=20010410000000&to=20010510000000&showResumeKey=true&resolveRevisits=true"
    )
    with FakeCdxServer(caps) as s:
        first = get(s, base)
        assert first.headers["content-type"] == "text/plain;charset=UTF-8"
        assert first.body.decode() == bodies[0]
        # edgi passes the key back URL-encoded once more, exactly as recorded
        key = first.body.decode().rstrip("\n").rsplit("\n", 1)[1]
        second = get(s, base + "&resumeKey=" + urllib.parse.quote(key, safe=""))
        assert second.body.decode() == bodies[1]
        key2 = second.body.decode().rstrip("\n").rsplit("\n", 1)[1]
        third = get(s, base + "&resumeKey=" + urllib.parse.quote(key2, safe=""))
        assert third.status == 200 and third.body == b"" == bodies[2].encode()


def test_empty_results(srv: FakeCdxServer) -> None:
    assert get(srv, [("url", "nothing.org/*"), ("output", "json")]).body == b"[]\n"
    r = get(srv, [("url", "nothing.org/*")])
    assert r.status == 200 and r.body == b""


def test_fl_orders_fields_and_header(srv: FakeCdxServer) -> None:
    r = get(srv, [("url", "example.com/"), ("output", "json"), ("fl", "original,timestamp")])
    data = r.json()
    assert data[0] == ["original", "timestamp"]
    assert data[1] == ["http://example.com/", "20091231235959"]
    assert r.body.startswith(b'[["original","timestamp"],\n["http://example.com/",')
    t = get(srv, [("url", "example.com/"), ("fl", "timestamp")]).body.decode()
    assert t.splitlines() == ["20091231235959", "20100101000000", "20111231235959", "20120101000000"]
    bad = get(srv, [("url", "example.com/"), ("fl", "original,nope")])
    assert bad.status == 400 and bad.headers["content-type"].startswith("text/plain")


def test_json_escaping_only_when_needed() -> None:
    c = make_capture('http://example.com/q?x="1"\\', "20200101000000")
    with FakeCdxServer([c]) as s:
        data = get(s, [("url", "example.com/*"), ("output", "json")]).json()
        assert data[1][2] == c.original


# ---- URL matching ---------------------------------------------------------------------


@pytest.mark.parametrize("url", ["*.example.com/*", "*.example.com"])
def test_domain_match_includes_subhosts_excludes_lookalikes(srv: FakeCdxServer, url: str) -> None:
    rows = get(srv, [("url", url), ("output", "json")]).json()[1:]
    assert [Capture(*r) for r in rows] == IN_DOMAIN


def test_prefix_host_exact_and_explicit_match_type(srv: FakeCdxServer) -> None:
    def keys(params: list[tuple[str, str]]) -> set[str]:
        return {line.split(" ")[0] for line in get(srv, params).body.decode().splitlines()}

    assert keys([("url", "example.com/*")]) == {
        "com,example)/",
        "com,example)/a.html",
        "com,example)/logo.svg",
        "com,example)/x.js",
    }
    assert keys([("url", "example.com/a")]) == set()  # exact
    assert keys([("url", "https://example.com:443/a.html")]) == {"com,example)/a.html"}
    assert keys([("url", "example.com"), ("matchType", "host")]) == keys([("url", "example.com/*")])
    assert keys([("url", "example.com"), ("matchType", "domain")]) == {c.urlkey for c in IN_DOMAIN}
    assert get(srv, [("url", "x.com"), ("matchType", "bogus")]).status == 400
    assert get(srv, [("output", "json")]).status == 400  # url is required


# ---- filters, from/to, collapse, limit ------------------------------------------------


def _origs(srv: FakeCdxServer, *params: tuple[str, str]) -> list[str]:
    rows = get(srv, [("url", "*.example.com/*"), ("output", "json"), *params]).json()
    assert not rows or rows[0][2] == "original"
    return [r[2] for r in rows[1:]]


def test_filter_regex_is_full_match(srv: FakeCdxServer) -> None:
    assert _origs(srv, ("filter", "mimetype:text/htm")) == []  # no partial match
    html = _origs(srv, ("filter", "mimetype:text/html"))
    assert "https://a.b.example.com/deep" not in html  # text/htmlx is not text/html
    assert len(html) == len([c for c in IN_DOMAIN if c.mimetype == "text/html"])
    assert _origs(srv, ("filter", "original:.*\\.js")) == ["https://example.com/x.js"]
    assert _origs(srv, ("filter", "original:\\.js")) == []


def test_filter_negation_and_and(srv: FakeCdxServer) -> None:
    got = _origs(srv, ("filter", "!mimetype:warc/revisit"), ("filter", "!statuscode:[34]..|-"))
    assert len(got) == len(
        [c for c in IN_DOMAIN if c.mimetype != "warc/revisit" and c.statuscode[0] not in "34-"]
    )
    assert "http://example.com:80/a.html" not in got
    assert "https://blog.example.com/post/1" in got  # its 200 capture survives


def test_filter_contains_numeric_field_and_unknown_field(srv: FakeCdxServer) -> None:
    assert _origs(srv, ("filter", "~original:logo")) == ["https://example.com/logo.svg"]
    # "~" comes before "!": contains, inverted
    assert _origs(srv, ("filter", "~!original:example.com/")) == ["http://example.com:80/a.html"]
    assert _origs(srv, ("filter", "3:image/.*")) == ["https://example.com/logo.svg"]
    # unknown field name: the regex is applied to the whole line
    assert _origs(srv, ("filter", "nosuch:.* image/svg\\+xml .*")) == ["https://example.com/logo.svg"]


def test_svg_filter_needs_escaped_plus_sent_as_percent_2b(srv: FakeCdxServer) -> None:
    # urlencode turns "+" into %2B: the server decodes it back to "+"
    svg = ["https://example.com/logo.svg"]
    assert _origs(srv, ("filter", "mimetype:image/svg\\+xml")) == svg
    # Java regex: unescaped "+" is a quantifier, so the literal type does not full-match
    assert _origs(srv, ("filter", "mimetype:image/svg+xml")) == []
    # a raw "+" in the query string is decoded as a space
    raw = "url=*.example.com/*&output=json&filter=mimetype:image/svg%5C+xml"
    assert get(srv, raw).json() == []
    assert srv.requests[-1].params[-1] == ("filter", "mimetype:image/svg\\ xml")
    raw2 = "url=*.example.com/*&output=json&filter=mimetype:image/svg%5C%2Bxml"
    assert [r[2] for r in get(srv, raw2).json()[1:]] == svg
    assert srv.requests[-1].params[-1] == ("filter", "mimetype:image/svg\\+xml")


def test_from_to_are_inclusive_with_prefix_semantics(srv: FakeCdxServer) -> None:
    def stamps(*p: tuple[str, str]) -> list[str]:
        body = get(srv, [("url", "example.com/"), ("fl", "timestamp"), *p]).body.decode()
        return body.split()

    assert stamps(("to", "2011")) == ["20091231235959", "20100101000000", "20111231235959"]
    assert stamps(("from", "20100101")) == ["20100101000000", "20111231235959", "20120101000000"]
    assert stamps(("from", "2010"), ("to", "2011")) == ["20100101000000", "20111231235959"]
    assert stamps(("to", "20091231235959")) == ["20091231235959"]
    assert stamps(("from", "20120101000000")) == ["20120101000000"]


def test_collapse_limit_offset(srv: FakeCdxServer) -> None:
    body = get(srv, [("url", "*.example.com/*"), ("collapse", "urlkey"), ("fl", "urlkey")]).body
    keys = body.decode().split()
    assert keys == sorted({c.urlkey for c in IN_DOMAIN})
    assert get(srv, [("url", "*.example.com"), ("collapse", "")]).body.count(b"\n") == len(
        IN_DOMAIN
    )  # waymore's empty collapse= is ignored
    assert _origs(srv, ("limit", "2")) == [c.original for c in IN_DOMAIN[:2]]
    assert _origs(srv, ("limit", "-2")) == [c.original for c in IN_DOMAIN[-2:]]
    assert _origs(srv, ("offset", "3"), ("limit", "1")) == [IN_DOMAIN[3].original]


# ---- paging ---------------------------------------------------------------------------


def test_paging_partitions_the_index_and_ignores_filters(srv: FakeCdxServer) -> None:
    base = [("url", "*.example.com/*"), ("output", "json")]
    n = int(get(srv, [*base, ("showNumPages", "true")]).body)
    assert n == -(-len(IN_DOMAIN) // 5) == 3
    r = get(srv, [*base, ("showNumPages", "True"), ("filter", "mimetype:nothing")])
    assert r.body == b"3\n" and r.headers["content-type"].startswith("text/plain")
    pages = [get(srv, [*base, ("page", str(p))]).json() for p in range(n)]
    assert all(len(p) == 6 for p in pages[:-1])  # header + 5 lines
    assert [Capture(*row) for p in pages for row in p[1:]] == IN_DOMAIN
    assert get(srv, [*base, ("page", str(n))]).body == b"[]\n"
    assert get(srv, [("url", "*.example.com/*"), ("page", "99")]).body == b""
    # a filter applies inside a page: a page may be empty while a later one is not
    filt = [*base, ("filter", "original:.*blog.*")]
    assert [len(get(srv, [*filt, ("page", str(p))]).json()) for p in range(n)] == [0, 2, 2]
    # pageSize shrinks the page (lines_per_page is per the default 50 blocks)
    assert get(srv, [*base, ("showNumPages", "true"), ("pageSize", "10")]).body == b"11\n"


def test_num_pages_quirk_switches(srv: FakeCdxServer) -> None:
    base = [("url", "*.example.com/*"), ("showNumPages", "true")]
    srv.num_pages_override = 7
    assert get(srv, base).body == b"7\n"
    srv.num_pages_status = 400
    r = get(srv, base)
    assert r.status == 400 and r.headers["content-type"] == "text/plain;charset=UTF-8"
    assert r.body.startswith(b"Sorry, this server is not configured to support paged query")
    ok = get(srv, [("url", "*.example.com/*"), ("page", "0")])  # pages themselves still work
    assert ok.status == 200 and ok.body.count(b"\n") == 5
    assert get(srv, [("url", "nothing.org/*"), ("showNumPages", "true")]).status == 400
    srv.num_pages_status = None
    srv.num_pages_override = None
    assert get(srv, [("url", "nothing.org/*"), ("showNumPages", "true")]).body == b"1\n"


# ---- faults ---------------------------------------------------------------------------


def test_blocked_site(srv: FakeCdxServer) -> None:
    srv.blocked = True
    for params in ([("url", "*.example.com/*")], [("url", "x.org"), ("showNumPages", "true")]):
        r = get(srv, params)
        assert r.status == 403
        assert r.headers["x-archive-wayback-runtime-error"] == BLOCKED_SITE_ERROR
        assert r.headers["content-type"] == "text/plain;charset=UTF-8"
        assert r.body.decode() == BLOCKED_SITE_ERROR
        assert "blocked site error" in r.body.decode().lower()  # what waymore greps for


def test_fail_pages_serve_faults_in_order_then_the_page(srv: FakeCdxServer) -> None:
    srv.fail_pages = {1: [service_unavailable(), rate_limited()], NO_PAGE: [rate_limited()]}
    base = [("url", "*.example.com/*"), ("output", "json")]
    first = get(srv, [*base, ("page", "1")])
    assert first.status == 503 and b"nginx" in first.body
    second = get(srv, [*base, ("page", "1")])
    assert second.status == 429 and second.headers["content-type"] == "text/html"
    assert "retry-after" not in second.headers
    assert get(srv, [*base, ("page", "1")]).json()[1] == list(IN_DOMAIN[5])
    assert get(srv, [*base, ("page", "0")]).status == 200  # other pages unaffected
    assert get(srv, base).status == 429  # NO_PAGE: the unpaged query
    assert get(srv, base).status == 200


def test_html_truncated_and_malformed_pages(srv: FakeCdxServer) -> None:
    base = [("url", "*.example.com/*"), ("output", "json")]
    srv.html_200_pages = {0}
    srv.truncate_pages = {1}
    srv.malformed_json_pages = {2}
    html = get(srv, [*base, ("page", "0")])
    assert html.status == 200 and html.headers["content-type"].startswith("text/html")
    assert html.body.lstrip().startswith(b"<!DOCTYPE html>")
    trunc = get(srv, [*base, ("page", "1")], gzip_ok=True)
    full = json.dumps([list(c) for c in IN_DOMAIN[5:10]], separators=(",", ":"))
    assert trunc.status == 200
    lines = trunc.body.decode().split("\n")
    assert len(lines) == 6 and not lines[-1].endswith("]")  # last row cut mid-way
    assert lines[-1] and IN_DOMAIN[9].urlkey.startswith(lines[-1][2:]) or lines[-1] in full
    with pytest.raises(json.JSONDecodeError):
        json.loads(trunc.body)
    bad = get(srv, [*base, ("page", "2")])
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad.body)
    with pytest.raises(json.JSONDecodeError):  # also fails a line-by-line parser
        json.loads(bad.body.split(b"\n")[1].rstrip(b",]"))
    srv.truncate_pages = set()
    assert len(get(srv, [*base, ("page", "1")]).json()) == 6  # faults are never cached


def test_truncate_connection_mode(srv: FakeCdxServer) -> None:
    srv.truncate_pages = {0}
    srv.truncate_mode = "connection"
    url = srv.endpoint + "?url=*.example.com/*&output=json&page=0"
    with pytest.raises(Exception) as exc:  # http.client.IncompleteRead
        with urllib.request.urlopen(url, timeout=10) as r:
            r.read()
    assert "IncompleteRead" in type(exc.value).__name__ or "Incomplete" in repr(exc.value)


def test_page_status_switch(srv: FakeCdxServer) -> None:
    srv.page_status = 400
    assert get(srv, [("url", "*.example.com/*"), ("page", "0")]).status == 400
    assert get(srv, [("url", "*.example.com/*")]).status == 200


# ---- HTTP details ---------------------------------------------------------------------


def test_gzip_switches(srv: FakeCdxServer) -> None:
    p = [("url", "*.example.com/*"), ("output", "json")]
    gz = get(srv, p, gzip_ok=True)
    assert gz.headers["content-encoding"] == "gzip" and gz.raw[:2] == b"\x1f\x8b"
    plain = get(srv, p)
    assert "content-encoding" not in plain.headers and gz.body == plain.body
    assert "content-encoding" not in get(srv, [*p, ("gzip", "false")], gzip_ok=True).headers
    srv.gzip_enabled = False
    assert "content-encoding" not in get(srv, p, gzip_ok=True).headers


def test_other_paths_are_404(srv: FakeCdxServer) -> None:
    assert srv.base_url == f"http://127.0.0.1:{srv.port}/web.archive.org"
    assert get(srv, "url=x.org", path="/cdx/search/cdx").status == 404
    assert get(srv, "url=x.org", path="/web.archive.org/cdx/search").status == 404
    with FakeCdxServer(CAPS, prefix="") as s:
        assert s.endpoint == f"http://127.0.0.1:{s.port}/cdx/search/cdx"
        assert get(s, [("url", "example.com/")]).status == 200


def test_request_log(srv: FakeCdxServer) -> None:
    srv.clear_requests()
    before = time.monotonic()
    get(srv, "url=*.example.com%2F*&filter=mimetype:image/svg%2Bxml&page=2&output=json")
    get(srv, [("url", "x.org"), ("showNumPages", "true")], gzip_ok=True)
    assert len(srv.requests) == 2
    rec = srv.requests[0]
    assert rec.path == "/web.archive.org/cdx/search/cdx"
    assert rec.params == [
        ("url", "*.example.com/*"),
        ("filter", "mimetype:image/svg+xml"),
        ("page", "2"),
        ("output", "json"),
    ]
    assert rec.raw_query.startswith("url=*.example.com%2F*")
    assert rec.time >= before
    assert srv.requests[1].headers.get("Accept-Encoding") == "gzip"
    assert srv.pages_requested() == [2, None]


def test_prerender_cache_renders_once(srv: FakeCdxServer) -> None:
    p = [("url", "*.example.com/*"), ("output", "json"), ("page", "0")]
    get(srv, p)
    n = srv.render_count
    get(srv, p, gzip_ok=True)
    get(srv, list(reversed(p)))  # parameter order does not matter
    assert srv.render_count == n
    assert srv.prerender_pages([("output", "json"), ("url", "*.example.com/*")]) == 3
    assert srv.render_count == n + 2
    get(srv, [("url", "*.example.com/*"), ("output", "json"), ("page", "2")], gzip_ok=True)
    assert srv.render_count == n + 2


def test_concurrent_keepalive_clients(srv: FakeCdxServer) -> None:
    import http.client
    import threading

    errors: list[BaseException] = []

    def worker() -> None:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
            for p in range(3):
                conn.request("GET", srv.endpoint_path + f"?url=*.example.com/*&page={p}")
                r = conn.getresponse()
                assert r.status == 200 and r.getheader("Connection") == "keep-alive"
                r.read()
            conn.close()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(srv.requests) == 24


# ---- synthetic dataset ----------------------------------------------------------------


def test_generate_dataset_shape_and_urlkeys() -> None:
    caps = generate_dataset(20_000, 8_000, seed=3)
    assert len(caps) == 20_000
    assert len({c.urlkey for c in caps}) == 8_000
    assert caps == sorted(caps, key=lambda c: (c.urlkey, c.timestamp))
    assert generate_dataset(20_000, 8_000, seed=3) == caps  # deterministic
    for c in random.Random(0).sample(caps, 3000):
        assert surt.surt(c.original) == c.urlkey, c
        assert len(c.timestamp) == 14 and len(c.digest) == 32
    origs = [c.original for c in caps]
    assert any(o.startswith("http://") for o in origs)
    assert any(o.startswith("https://") for o in origs)
    assert any(":80/" in o for o in origs) and any(":443/" in o for o in origs)
    assert any("//www.example.com" in o for o in origs)
    assert any("//notexample.com" in o for o in origs)
    assert any("//example.com.evil.net" in o for o in origs)
    assert len({c.urlkey.split(")")[0] for c in caps}) >= 8
    assert {"200", "301", "302", "404", "-"} <= {c.statuscode for c in caps}
    assert {"text/html", "image/svg+xml", "warc/revisit"} <= {c.mimetype for c in caps}
    assert any(a == b for a, b in zip(caps, caps[1:], strict=False))  # exact duplicate lines exist
    with FakeCdxServer(caps, lines_per_page=1000) as s:
        rows = get(s, [("url", "*.example.com/*"), ("output", "json")]).json()[1:]
        assert len(rows) == sum(1 for c in caps if not c.urlkey.startswith(("com,notexample", "net,evil")))
        assert not any("notexample" in r[2] or "evil.net" in r[2] for r in rows)
