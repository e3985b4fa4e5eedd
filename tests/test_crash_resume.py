"""``kill -9`` in the middle of a crawl, then the same command again.

The store promises (sqlite_store.py): a killed run loses at most the batch being
written, the file stays intact, and a rerun completes the crawl without duplicating
a URL or inflating a capture count. Two tests hold it to that: a real multi-page
crawl killed once some pages are committed, and a store killed deterministically
*inside* an open transaction whose uncommitted pages already spilled into the WAL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

from tests.helpers import processes

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
    from tests.helpers.resume import (
        DEADLINE,
        LINES_PER_PAGE,
        PAGES,
        committed_rows,
        dataset,
        expected_rows,
        query,
        stored_rows,
    )
    from tests.servers.ia_cdx import FakeCdxServer
except ImportError:
    from conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy  # type: ignore[no-redef]
    from helpers.resume import (  # type: ignore[no-redef]
        DEADLINE,
        LINES_PER_PAGE,
        PAGES,
        committed_rows,
        dataset,
        expected_rows,
        query,
        stored_rows,
    )
    from servers.ia_cdx import FakeCdxServer  # type: ignore[no-redef]

DOMAIN = "example.com"


def stat(result: CrawlResult, name: str) -> str | None:
    value = result.stat(name)
    return None if value is None else value.rstrip("}").strip("'")


def test_kill_9_mid_crawl_then_rerun(workdir: Path, tmp_path: Path) -> None:
    caps = dataset()
    expected = expected_rows(caps)
    db = workdir / "trawl.db"
    with FakeCdxServer(caps, lines_per_page=LINES_PER_PAGE, latency=0.15) as srv:
        # The pages the crawl will fetch (all captures are in scope, no filters).
        pages = [
            Counter(c.original for c in srv.captures[p * LINES_PER_PAGE : (p + 1) * LINES_PER_PAGE])
            for p in range(PAGES)
        ]
        assert sum(len(p) for p in pages) > len(expected)  # some URLs do straddle two pages
        for p, page in enumerate(pages):  # every page has a URL of its own (see below)
            others = set().union(*(q for k, q in enumerate(pages) if k != p))
            assert set(page) - others, p

        settings = {
            "WAYBACK_BASE_URL": srv.base_url,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
            "PROGRESS_INTERVAL": 0,
        }
        args = crawl_args("wayback", DOMAIN, settings, "-a", "filters=false")
        env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
        env.pop("SCRAPY_PROJECT", None)
        log_path = tmp_path / "killed.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "scrapy", *args],
                cwd=workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            deadline = time.monotonic() + DEADLINE
            # A few pages committed (a page holds 16-18 URLs), most still to come.
            while committed_rows(db) < 100:
                assert proc.poll() is None, log_path.read_text()[-3000:]
                assert time.monotonic() < deadline, "the crawl committed nothing in time"
                time.sleep(0.01)
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(timeout=10) == -signal.SIGKILL
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

        # --- what the killed run left ---------------------------------------------------
        assert query(db, "PRAGMA integrity_check") == [("ok",)]
        rows = stored_rows(db)
        urls = [r[0] for r in rows]
        assert len(urls) == len(set(urls))
        assert 100 <= len(urls) < len(expected), "the kill did not land mid-crawl"
        assert set(urls) <= set(expected)
        # One transaction per page: the rows are exactly the union of whole pages, and
        # each count is what those pages hold (a page whose transaction was cut left nothing).
        done = [p for p in pages if set(p) <= set(urls)]
        assert set(urls) == set().union(*done)
        for url, captures, first, last in rows:
            assert captures == sum(p[url] for p in done), url
            assert captures <= expected[url][0], url
            assert expected[url][1] <= first <= last <= expected[url][2], url
        assert query(db, "SELECT run, finished_at, finish_reason FROM runs") == [(1, None, None)]
        killed_count = len(urls)

        # --- the same command again, to the end -------------------------------------------
        srv.latency = 0.0
        result = run_scrapy(workdir, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    assert stat(result, "trawl/outcome") == "complete"
    assert stat(result, "trawl/captures") == str(PAGES * LINES_PER_PAGE)
    assert stat(result, "trawl/urls_unique") == str(len(expected))
    assert stat(result, "trawl/urls_new") == str(len(expected) - killed_count)

    assert query(db, "PRAGMA integrity_check") == [("ok",)]
    assert query(db, "SELECT COUNT(*), COUNT(DISTINCT url) FROM urls") == [(len(expected), len(expected))]
    final = {url: (captures, first, last) for url, captures, first, last in stored_rows(db)}
    assert final == expected  # true counts: the killed run's partial counts do not add up
    assert query(db, "SELECT run, finished_at IS NOT NULL, finish_reason FROM runs ORDER BY run") == [
        (1, 0, None),
        (2, 1, "finished"),
    ]


# A process that dies inside write_batch: after the INSERTs of its second batch,
# before COMMIT, with a 1 MB page cache so that uncommitted pages spill into the WAL.
_DIE_IN_TRANSACTION = textwrap.dedent(
    """
    import os, signal, sys
    from types import SimpleNamespace
    from scrapy.settings import Settings
    from trawl.pipeline.context import RunContext
    from trawl.records.batches import UrlBatch
    from trawl.stores.sqlite import SqliteStore

    def batch(numbers):
        urls = [f"https://example.com/some/longer/path/to/page-{n:06d}.html?q={n}" for n in numbers]
        size = len(urls)
        return UrlBatch.from_columns("wayback", urls, ["example.com"] * size, ["20100101000000"] * size,
                        ["20200101000000"] * size, [2] * size, ["200"] * size, ["text/html"] * size)

    settings = Settings({"SQLITE_SYNCHRONOUS": "NORMAL", "SQLITE_CACHE_MB": 1})
    crawler = SimpleNamespace(settings=settings, stats=SimpleNamespace(get_stats=dict))
    spider = SimpleNamespace(name="wayback")
    inputs = {"target": SimpleNamespace(domain="example.com")}
    context = RunContext(crawler, spider, "killed", None, inputs=inputs)
    store = SqliteStore("sqlite:///" + sys.argv[1], context)
    store.open()
    store.write_batch(batch(range(1000)))

    def die(self, con, *args):
        assert con.in_transaction
        print("dying", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    SqliteStore._read_known = die
    store.write_batch(batch(range(500, 40000)))
    print("survived", flush=True)
    """
)


def test_kill_inside_an_open_transaction(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    proc = processes.run(
        [sys.executable, "-c", _DIE_IN_TRANSACTION, str(db)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert proc.stdout == "dying\n"
    # The uncommitted batch really reached the file: its pages are in the WAL.
    wal = Path(f"{db}-wal")
    assert wal.stat().st_size > 2_000_000

    assert query(db, "PRAGMA integrity_check") == [("ok",)]
    rows = stored_rows(db)
    assert len(rows) == 1000
    assert {r[0] for r in rows} == {
        f"https://example.com/some/longer/path/to/page-{n:06d}.html?q={n}" for n in range(1000)
    }
    assert {r[1:] for r in rows} == {(2, "20100101000000", "20200101000000")}
    assert query(db, "SELECT run, run_id, finished_at FROM runs") == [(1, "killed", None)]
