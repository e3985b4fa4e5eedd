"""``trawl crawl responses``: archived responses downloaded once each, indexed in the store (issue 18 item 1).

Every test runs trawl as a user does against a local Wayback Machine
(:class:`tests.servers.ia_replay.FakeReplayServer`: CDX and ``id_`` replay on
one base URL) and checks what a user sees: the files in ``FILES_STORE``, the
``response_records`` of the store, the replay requests the server logged.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.servers.ia_replay import FakeReplayServer, content_digest

APP_OLD = b"var api = '/api/v1/users';\n"
SHARED = b"console.log('shared by app.js and lib.js');\n"
CONFIG = b'{"endpoint": "/graphql"}'
MOVED = b"function moved() { return fetch('/api/v2/moved'); }\n"


def files_in(folder: Path) -> dict[str, bytes]:
    """Every regular file under ``folder``: relative path -> bytes."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def index(workdir: Path) -> list[tuple]:
    with sqlite3.connect(workdir / "trawl.db") as con:
        return con.execute(
            "SELECT url, timestamp, host, digest, status, mime, length, path, origin, served"
            " FROM response_records ORDER BY url, timestamp"
        ).fetchall()


def archive() -> FakeReplayServer:
    """The archive of every test: shared digests, a 302 to the nearest capture, a missing memento."""
    server = FakeReplayServer()
    server.archive("https://example.com/app.js", "20200101000000", APP_OLD)
    server.archive("https://example.com/app.js", "20210101000000", SHARED)
    server.archive("https://example.com/lib.js", "20210606000000", SHARED)
    server.archive("https://www.example.com/config.json", "20200505000000", CONFIG, "application/json")
    server.archive("https://example.com/page.html", "20200505000000", b"<html>hi</html>", "text/html")
    # Listed by the CDX at a time the replay redirects from (302 "found capture at") to the real one.
    server.archive("https://example.com/moved.js", "20200202000500", MOVED, in_cdx=False)
    server.listed("https://example.com/moved.js", "20200202000000", MOVED)
    server.redirect("https://example.com/moved.js", "20200202000000", "20200202000500")
    server.listed_without_memento("https://example.com/old.js", "20190101000000")
    return server


def store_urls(workdir: Path, server: FakeReplayServer) -> None:
    """The URL store the responses source reads: a wayback crawl of the same archive."""
    result = run_scrapy(
        workdir,
        *crawl_args("wayback", "example.com", {"WAYBACK_BASE_URL": server.base_url}, "-a", "filters=false"),
    )
    assert result.returncode == 0, result.stderr[-3000:]


def crawl_responses(workdir: Path, server: FakeReplayServer, *extra: str, **settings: object) -> CrawlResult:
    given = {"WAYBACK_BASE_URL": server.base_url, "FILES_STORE": str(workdir / "files"), **settings}
    result = run_scrapy(workdir, *crawl_args("responses", "example.com", given, *extra))
    assert_no_traceback(result)
    return result


def test_each_digest_is_downloaded_once_and_indexed(workdir: Path) -> None:
    with archive() as server:
        store_urls(workdir, server)
        first = crawl_responses(workdir, server, "-a", "query=ext:js OR mime:application/json")
        replays = server.downloads()
    assert first.returncode == 0, first.stderr[-3000:]
    shared = content_digest(SHARED)
    # One download for the digest app.js and lib.js share; the 302 followed to the capture served.
    shared_fetches = [
        r for r in replays if r[1] in ("https://example.com/app.js", "https://example.com/lib.js")
    ]
    assert len(shared_fetches) == 1, replays
    assert sorted(r for r in replays if r not in shared_fetches) == [
        ("20190101000000", "https://example.com/old.js"),
        ("20200202000000", "https://example.com/moved.js"),
        ("20200202000500", "https://example.com/moved.js"),
        ("20200505000000", "https://www.example.com/config.json"),
    ]
    folder = workdir / "files"
    assert files_in(folder) == {
        f"example.com/{shared}.js": SHARED,
        f"example.com/{content_digest(MOVED)}.js": MOVED,
        f"www.example.com/{content_digest(CONFIG)}.json": CONFIG,
    }
    rows = index(workdir)
    # The row whose replay was downloaded says which capture was served; the other shares its file.
    assert sorted(row[-1] or "" for row in rows[:2]) == ["", shared_fetches[0][0]]
    assert [row[:-1] for row in rows[:2]] == [
        ("https://example.com/app.js", "20210101000000", "example.com", shared, "200",
         "application/javascript", len(SHARED), f"example.com/{shared}.js", "wayback"),
        ("https://example.com/lib.js", "20210606000000", "example.com", shared, "200",
         "application/javascript", len(SHARED), f"example.com/{shared}.js", "wayback"),
    ]  # fmt: skip
    assert rows[2:] == [
        ("https://example.com/moved.js", "20200202000000", "example.com", content_digest(MOVED), "200",
         "application/javascript", len(MOVED), f"example.com/{content_digest(MOVED)}.js", "wayback",
         "20200202000500"),
        ("https://example.com/old.js", "20190101000000", "example.com", content_digest(b"gone"),
         "no memento", "application/javascript", None, None, "wayback", None),
        ("https://www.example.com/config.json", "20200505000000", "www.example.com", content_digest(CONFIG),
         "200", "application/json", len(CONFIG), f"www.example.com/{content_digest(CONFIG)}.json", "wayback",
         "20200505000000"),
    ]  # fmt: skip
    assert first.stat("responses/no_memento") == "1"
    assert first.stat("responses/downloaded") == "3"
    assert "1 without a memento (not stored)" in first.stderr
