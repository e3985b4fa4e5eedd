"""Resume with ``-s JOBDIR=``: a killed or partial crawl goes on where it stopped.

The store's page ledger (written in the same transaction as a page's URLs)
says which pages the run stored; the same command again fetches every other
page, and only those.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import assert_no_traceback, crawl_args, run_scrapy
from tests.helpers.resume import (
    DEADLINE,
    LINES_PER_PAGE,
    PAGES,
    committed_rows,
    dataset,
    expected_rows,
    pages_requested,
    query,
    stored_rows,
)
from tests.servers.ia_cdx import FakeCdxServer, service_unavailable


def test_kill_9_then_resume_fetches_only_missing_pages(workdir: Path, tmp_path: Path) -> None:
    caps = dataset()
    expected = expected_rows(caps)
    db = workdir / "trawl.db"
    jobdir = tmp_path / "job"
    with FakeCdxServer(caps, lines_per_page=LINES_PER_PAGE, latency=0.1) as srv:
        concurrency = 3
        # The source gate holds the concurrency (Scrapy 2.19's per-domain limit does
        # not, under asyncio: a slot drains its queue before transfers are counted).
        settings = {
            "WAYBACK_BASE_URL": srv.base_url,
            "RATE_LIMITS_ENABLED": True,
            "RATE_LIMITS": '{"wayback": "1000/1s"}',
            "SOURCE_CONCURRENCY": f'{{"wayback": {concurrency}}}',
            "JOBDIR": jobdir,
            "PROGRESS_INTERVAL": 0,
            # Each page stored as it comes: held small pages (BATCH_COALESCE_SECONDS) are
            # lost at a kill like pages in flight, and would blur the bound checked below.
            "BATCH_COALESCE_ROWS": 0,
        }
        args = crawl_args("wayback", "example.com", settings, "-a", "filters=false")
        args += ["-s", "AUTOTHROTTLE_ENABLED=False"]
        env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
        proc = subprocess.Popen(
            [sys.executable, "-m", "scrapy", *args],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + DEADLINE
            while committed_rows(db) < 150:
                assert proc.poll() is None
                assert time.monotonic() < deadline
                time.sleep(0.01)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert query(db, "PRAGMA integrity_check") == [("ok",)]
        first_run = set(pages_requested(srv))
        ledger = {int(page.split("=")[1]) for (page,) in query(db, "SELECT page FROM pages")}
        assert ledger and ledger < set(range(PAGES))
        in_flight = first_run - ledger  # fetched (or asked for) but not committed at the kill
        assert len(in_flight) <= concurrency + 1, (sorted(first_run), sorted(ledger))

        mark = len(srv.requests)
        srv.latency = 0.0
        result = run_scrapy(workdir, *args)
        assert result.returncode == 0, result.stderr[-3000:]
        assert_no_traceback(result)
        assert "resuming run" in result.stderr
        second_run = pages_requested(srv, mark)

    assert set(second_run) == set(range(PAGES + 1)) - ledger  # every missing page (+ the end check)
    assert len(second_run) == len(set(second_run))
    fetched_twice = first_run & set(second_run)
    assert fetched_twice <= in_flight  # refetched at most the pages in flight at the kill
    assert query(db, "PRAGMA integrity_check") == [("ok",)]
    final = {url: (captures, first, last) for url, captures, first, last in stored_rows(db)}
    assert final == expected  # exact set, no duplicate, true capture counts
    assert query(db, "SELECT COUNT(*) FROM runs") == [(1,)]  # one run, resumed


def test_partial_run_then_resume_fetches_the_given_up_page(workdir: Path, tmp_path: Path) -> None:
    caps = dataset()[: 6 * LINES_PER_PAGE]
    expected = expected_rows(caps)
    jobdir = tmp_path / "job"
    with FakeCdxServer(caps, lines_per_page=LINES_PER_PAGE) as srv:
        srv.fail_pages = {3: [service_unavailable()] * 3}
        settings = {"WAYBACK_BASE_URL": srv.base_url, "JOBDIR": jobdir, "RETRY_TIMES": 1}
        args = crawl_args("wayback", "example.com", settings, "-a", "filters=false")
        partial = run_scrapy(workdir, *args)
        assert partial.returncode == 1
        assert partial.stat("trawl/gave_up") == "1"
        srv.fail_pages = {}
        mark = len(srv.requests)
        resumed = run_scrapy(workdir, *args)
        again = pages_requested(srv, mark)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert sorted(again) == [3]  # only the missing page (the end check is in the ledger)
        assert {u: (c, f, last) for u, c, f, last in stored_rows(workdir / "trawl.db")} == expected

        # A completed job starts afresh next time: a new run, every page again.
        mark = len(srv.requests)
        fresh = run_scrapy(workdir, *args)
        assert "resuming run" not in fresh.stderr
        assert sorted(pages_requested(srv, mark)) == list(range(7))
        assert fresh.stat("trawl/urls_new") == "0"
