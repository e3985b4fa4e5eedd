"""Upstream bytes that are not UTF-8: counted per source and said once, never per line.

A CDX line with an invalid byte was stored with ``%EF%BF%BD`` in its URL
without a word. The line is still kept (a URL with one bad byte is still a URL
the archive holds); the source counts such lines (``trawl/undecodable_lines``)
and ends with one WARNING line naming itself and the count.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import assert_no_traceback
from tests.helpers.wayback import crawl
from tests.servers.ia_cdx import FakeCdxServer, make_capture

TEXT = {"Content-Type": "text/plain;charset=UTF-8"}


def line(path: bytes) -> bytes:
    """One CDX line in the ``fl=`` order trawl asks for: original timestamp status mime digest length."""
    return b"http://example.com/" + path + b" 20200101000000 200 text/html DIGEST 1234\n"


def test_lines_that_are_not_utf8_are_counted_and_said_once(workdir: Path) -> None:
    # Two pages, both answered with raw bytes: three lines with invalid UTF-8 between them,
    # one with valid non-ASCII UTF-8 (not counted), and plain ones.
    pages = {
        0: line(b"caf\xe9") + line(b"ok") + line(b"bad\xff\xfe"),
        1: line(b"caf\xc3\xa9-utf8") + line(b"\xc3(broken"),
    }
    placeholders = [make_capture(f"https://example.com/p{i}", "20200101000000") for i in range(4)]
    with FakeCdxServer(placeholders, lines_per_page=2) as server:
        server.fail_pages = {page: [(200, body, TEXT)] for page, body in pages.items()}
        result = crawl(workdir, server, "-a", "filters=false")
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stat("trawl/undecodable_lines") == "3"
    said = [entry for entry in result.stderr.splitlines() if "not UTF-8" in entry]
    assert len(said) == 1, said  # once for the source, not once per line or per page
    assert "] WARNING:" in said[0]
    assert "wayback: 3 upstream lines had bytes that are not UTF-8" in said[0]
    stored = set(result.stored())
    assert "http://example.com/caf%EF%BF%BD" in stored  # kept, as before
    assert "http://example.com/caf%C3%A9-utf8" in stored
    assert "http://example.com/ok" in stored
