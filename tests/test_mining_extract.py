"""The miners on a corpus with known answers (tests/data/mining/), and on hostile input.

Each ``NAME`` in the corpus has ``NAME.expected.json``, written by hand: the file's URL
and MIME type, the reader that must read it, every endpoint (url, how, method, query,
body and header names, the original source for a source map), the parameter names,
the secrets with their lines. The found set must equal the expected set: nothing
missed, nothing extra. The interface's first reader (a regex over quoted strings, kept
here as :func:`placeholder`) must fail the same corpus, file by file.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from trawl.mining import Endpoint, FileFindings, extract_file
from trawl.mining import extract as extract_module
from trawl.mining.resolve import resolve

CORPUS = Path(__file__).parent / "data" / "mining"
CASES = sorted(p.name.removesuffix(".expected.json") for p in CORPUS.glob("*.expected.json"))


def expected_of(name: str) -> dict:
    return json.loads((CORPUS / f"{name}.expected.json").read_text(encoding="utf-8"))


def endpoint_key(endpoint: Endpoint) -> tuple:
    """What the corpus compares: everything but the line (an endpoint's line is where it is first seen)."""
    return (
        endpoint.url,
        endpoint.how,
        endpoint.method,
        tuple(endpoint.query),
        tuple(endpoint.body),
        tuple(endpoint.headers),
        endpoint.source,
    )


def expected_endpoints(expected: dict) -> set[tuple]:
    return {
        (
            e["url"],
            e["how"],
            e.get("method"),
            tuple(e.get("query", ())),
            tuple(e.get("body", ())),
            tuple(e.get("headers", ())),
            e.get("source"),
        )
        for e in expected["endpoints"]
    }


def mine(name: str, extract=extract_file) -> tuple[dict, FileFindings]:
    expected = expected_of(name)
    body = (CORPUS / name).read_bytes()
    return expected, extract(body, expected["url"], expected["mime"], secrets=expected.get("secrets", False))


_PLACEHOLDER = re.compile(
    rb"""["'`]((?:https?:)?//[^"'`\s<>]{3,2000}|/[A-Za-z0-9_\-.~%]+(?:/[^"'`\s<>]*)?)["'`]"""
)


def placeholder(body: bytes, url: str, mime: str | None = None, *, secrets: bool = False) -> FileFindings:
    """The interface's placeholder reader (commit a65ba36), kept to show what the readers add."""
    findings = FileFindings(reader="regex")
    seen: set[str] = set()
    for match in _PLACEHOLDER.finditer(body):
        absolute = urljoin(url, match.group(1).decode("utf-8", "replace"))
        if absolute in seen:
            continue
        seen.add(absolute)
        query = tuple(sorted({p.split("=", 1)[0] for p in urlsplit(absolute).query.split("&") if p}))
        findings.endpoints.append(Endpoint(url=absolute, how="regex", query=query))
    return findings


@pytest.mark.parametrize("name", CASES)
def test_corpus_file_gives_exactly_the_expected_endpoints(name: str) -> None:
    expected, found = mine(name)
    assert found.reader == expected["reader"]
    found_set = {endpoint_key(e) for e in found.endpoints}
    want = expected_endpoints(expected)
    assert (sorted(found_set - want), sorted(want - found_set)) == ([], []), "(extra, missed)"
    assert found.params == set(expected.get("params", ()))
    if "sources" in expected:
        assert [path for path, _ in found.sources] == expected["sources"]


@pytest.mark.parametrize("name", CASES)
def test_corpus_secrets_are_exactly_the_expected_ones(name: str) -> None:
    expected, found = mine(name)
    want = {(s["rule"], s["value"], s["line"]) for s in expected.get("found_secrets", ())}
    assert {(s.rule, s.value, s.line) for s in found.secrets} == want


@pytest.mark.parametrize("name", CASES)
def test_the_placeholder_reader_fails_the_corpus(name: str) -> None:
    expected, found = mine(name, placeholder)
    assert {endpoint_key(e) for e in found.endpoints} != expected_endpoints(expected)


def test_corpus_is_the_size_the_issue_asks_for() -> None:
    assert 10 <= len(CASES) <= 20


def test_secrets_are_looked_for_only_when_asked() -> None:
    body = (CORPUS / "settings.js").read_bytes()
    assert extract_file(body, "https://app.example.com/settings.js", "application/javascript").secrets == []


def test_source_map_secrets_are_attributed_to_the_original_file() -> None:
    original = 'var stripe = "sk_live_QnbfzQWxTeKarnpIiTPub8io";\nfetch("/api/pay");\n'
    body = json.dumps({"version": 3, "sources": ["src/pay.js"], "sourcesContent": [original], "mappings": ""})
    found = extract_file(body.encode(), "https://app.example.com/static/pay.js.map", None, secrets=True)
    assert [(s.rule, s.line, s.source) for s in found.secrets] == [
        ("stripe-secret-key", 1, "https://app.example.com/static/src/pay.js")
    ]
    assert {(e.url, e.source) for e in found.endpoints} >= {
        ("https://app.example.com/api/pay", "https://app.example.com/static/src/pay.js")
    }


@pytest.mark.parametrize(
    ("raw", "resolved"),
    [
        ("https://a.example/x#frag", "https://a.example/x"),
        ("/root?x=1", "https://h.example/root?x=1"),
        ("rel/x.php", "https://h.example/dir/rel/x.php"),
        ("../up.json", "https://h.example/up.json"),
        ("//cdn.example/x.js", "https://cdn.example/x.js"),
        ("EXPR/users", "EXPR/users"),
        ("data:text/html,<a>", None),
        ("javascript:alert(1)", None),
        ("JavaScript:void(0)", None),
        ("mailto:a@b.example", None),
        ("blob:https://h.example/1", None),
        ("#top", None),
        ("", None),
    ],
)
def test_resolution_against_the_file_url(raw: str, resolved: str | None) -> None:
    assert resolve(raw, "https://h.example/dir/file.js") == resolved


def test_a_file_the_parser_cannot_read_goes_to_the_fallback() -> None:
    found = extract_file(
        b"<?php echo '/api/x.php'; ?> ??? }}} ((( ", "https://h.example/a.js", "text/javascript"
    )
    assert found.reader == "regex"
    assert [e.url for e in found.endpoints] == ["https://h.example/api/x.php"]


def test_an_html_page_archived_under_a_js_url_is_read_as_html() -> None:
    found = extract_file(
        b"<!DOCTYPE html><a href='/x'>x</a>", "https://h.example/a.js", "application/javascript"
    )
    assert (found.reader, [e.url for e in found.endpoints]) == ("html", ["https://h.example/x"])


def test_images_are_skipped() -> None:
    assert (
        extract_file(b"\x89PNG\r\n\x1a\n'/api/x'", "https://h.example/a.png", "image/png").reader == "skipped"
    )


def test_size_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    body = b'fetch("/api/a");\n' + b"x;" * 100 + b'fetch("/api/b");\n'
    monkeypatch.setattr(extract_module, "PARSE_MAX_BYTES", 64)
    found = extract_file(body, "https://h.example/a.js", "application/javascript")
    assert (found.reader, found.truncated) == ("regex", False)
    assert {e.url for e in found.endpoints} == {"https://h.example/api/a", "https://h.example/api/b"}
    monkeypatch.setattr(extract_module, "MAX_BYTES", 32)
    found = extract_file(body, "https://h.example/a.js", "application/javascript")
    assert found.truncated
    assert {e.url for e in found.endpoints} == {"https://h.example/api/a"}


# --- hostile input: nothing reaches outside the file, nothing blows up -------------------------------


@pytest.fixture
def dtd_server():
    """A local server that logs every request: an XML file must never make the miner call it."""
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            requests.append(self.path)
            body = b'<!ENTITY leak "https://leak.example.com/from-network">'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", requests
    server.shutdown()
    server.server_close()


def test_xml_external_entities_are_not_read(tmp_path: Path, dtd_server) -> None:
    base, requests = dtd_server
    local = tmp_path / "leak.txt"
    local.write_text("https://leak.example.com/from-file")
    from_file = f"""<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY file SYSTEM "{local.as_uri()}">]>
<r><link>&file;</link><link>https://ok.example.com/kept</link></r>""".encode()
    found = extract_file(from_file, "https://h.example/feed.xml", "application/xml")
    assert (found.reader, [e.url for e in found.endpoints]) == ("xml", ["https://ok.example.com/kept"])
    from_network = f"""<?xml version="1.0"?>
<!DOCTYPE r SYSTEM "{base}/evil.dtd">
<r><link>https://ok.example.com/kept</link></r>""".encode()
    found = extract_file(from_network, "https://h.example/feed.xml", "application/xml")
    assert (found.reader, [e.url for e in found.endpoints]) == ("xml", ["https://ok.example.com/kept"])
    assert requests == []


def test_billion_laughs_is_not_expanded() -> None:
    entities = "".join(f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">' for i in range(1, 10))
    body = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol0 "https://lol.example.com/x ">'
        f"{entities}]><lolz><a>&lol9;</a><b href='https://fine.example.com/y'/></lolz>"
    ).encode()
    found = extract_file(body, "https://h.example/x.xml", "application/xml")
    assert not any("lol.example.com" in e.url for e in found.endpoints)


def test_deep_nesting_is_read_without_recursion() -> None:
    """60,000 levels: tree-sitter's query cursor counts depth in 16 bits (docs/mining.md, limits)."""
    depth = 60_000
    js = b"var a = " + b"[" * depth + b'fetch("/api/deep")' + b"]" * depth + b";"
    assert {
        e.url for e in extract_file(js, "https://h.example/a.js", "application/javascript").endpoints
    } == {"https://h.example/api/deep"}
    concat = b'var u = "/api/" + x' + b' + "" + x' * 20_000 + b";"  # 20,000 nested `+`: one value
    found = extract_file(concat, "https://h.example/a.js", "application/javascript")
    assert [e.url for e in found.endpoints] == ["https://h.example/api/EXPR"]
    json_body = b'{"a":' * depth + b'"/api/deep/json"' + b"}" * depth
    found = extract_file(json_body, "https://h.example/a.json", "application/json")
    assert {e.url for e in found.endpoints} == {"https://h.example/api/deep/json"}
    html_body = b"<div>" * depth + b'<a href="/deep/link">x</a>' + b"</div>" * depth
    found = extract_file(html_body, "https://h.example/", "text/html")
    assert "https://h.example/deep/link" in {e.url for e in found.endpoints}


def test_html_base_href_changes_what_relative_links_resolve_against() -> None:
    body = b'<html><head><base href="https://cdn.example.net/v2/"></head><body><a href="page.html">p</a>'
    found = extract_file(body, "https://h.example/dir/index.html", "text/html")
    assert [e.url for e in found.endpoints] == ["https://cdn.example.net/v2/page.html"]


@pytest.mark.parametrize(
    "mime", ["application/javascript", "text/html", "application/json", "application/xml", None, "text/plain"]
)
def test_garbage_never_raises(mime: str | None) -> None:
    """Archived bytes are anything: every reader either reads them or hands them to the fallback."""
    import random

    rng = random.Random(18)
    pieces = [
        b"<",
        b">",
        b"{",
        b"}",
        b"[",
        b"]",
        b'"',
        b"'",
        b"`",
        b"${",
        b"/api/",
        b"\\",
        b"\x00",
        b"\xff\xfe",
        b"fetch(",
        b")",
        b"<!ENTITY",
        b"<?xml",
        b"<a href=",
        b"http://",
        b"//# sourceMappingURL=",
        b"\n",
        b"&#x",
        b"sources",
        b"mappings",
        b":",
        b",",
        b"+",
        b"EXPR",
    ]
    for _ in range(300):
        body = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        found = extract_file(body, "https://h.example/x", mime, secrets=True)
        assert isinstance(found, FileFindings)
