"""The responses source's test archive: a local Wayback Machine with shared digests, a redirect
between captures and a missing memento, and the two crawls every responses test runs."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.servers.ia_replay import FakeReplayServer

APP_OLD = b"var api = '/api/v1/users';\n"
SHARED = b"console.log('shared by app.js and lib.js');\n"
CONFIG = b'{"endpoint": "/graphql"}'
MOVED = b"function moved() { return fetch('/api/v2/moved'); }\n"


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
