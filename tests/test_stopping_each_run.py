"""Ctrl-C, SIGTERM and ``kill -9`` in the middle of a responses download and of a live crawl, then a rerun.

docs/stopping.md promises, for every kind of run: the first signal ends the run
within seconds with exit status 1 and ``partial (shutdown)``, and the same
command with the same ``JOBDIR`` goes on under the same run and ends with what
one uninterrupted run would have stored, nothing twice. What is checked is what
a user sees: exit status, lines printed, files and rows stored, requests the
fake servers logged.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import TEST_DEFAULTS, assert_no_traceback, crawl_args, run_scrapy
from tests.servers.ia_replay import FakeReplayServer
from tests.servers.website import HostProxy, TlsSite, Website

DEADLINE = 60.0  # seconds; a ceiling for polling, never a wait
EXIT_WITHIN = 10.0  # seconds from the signal to the process's exit
FILES = 60
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]
IDS = ["ctrl-c", "sigterm", "kill-9"]


def rows(db: Path, sql: str) -> list[tuple]:
    """What a reader sees now (the crawl may be writing); nothing before the table exists."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
            return con.execute(sql).fetchall()
    except sqlite3.OperationalError:
        return []


def stop_when(args: list[str], workdir: Path, ready, sig: signal.Signals) -> tuple[int, float, str]:
    """Start ``scrapy *args``, send ``sig`` once ``ready()`` holds: (exit status, seconds to exit, stderr)."""
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
    env.pop("SCRAPY_PROJECT", None)
    given = " ".join(args)
    args = [*args, *(a for k, v in TEST_DEFAULTS.items() if f"{k}=" not in given for a in ("-s", f"{k}={v}"))]
    err = workdir / "stopped.err"
    with err.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "scrapy", *args],
            cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sink,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + DEADLINE
            while not ready():
                assert proc.poll() is None, err.read_text()[-3000:]
                assert time.monotonic() < deadline, "the run never got going"
                time.sleep(0.02)
            sent = time.monotonic()
            proc.send_signal(sig)
            status = proc.wait(timeout=30)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
    return status, took, err.read_text()


def check_stopped(sig: signal.Signals, status: int, took: float, stderr: str) -> None:
    assert took < EXIT_WITHIN, took
    if sig == signal.SIGKILL:
        assert status == -signal.SIGKILL
        return
    assert status == 1, stderr[-3000:]
    assert "Traceback" not in stderr
    assert "partial (shutdown)" in stderr


# --- responses --------------------------------------------------------------------------------


def body(i: int) -> bytes:
    return f"var api{i} = '/api/v1/item{i}';\n".encode()


@pytest.fixture
def replay() -> Iterator[FakeReplayServer]:
    with FakeReplayServer(latency=0.1) as server:  # 0.1 s an answer: a signal lands mid-run
        for i in range(FILES):
            server.archive(f"https://example.com/s/{i:03d}.js", "20210101000000", body(i))
        yield server


@pytest.mark.parametrize("sig", SIGNALS, ids=IDS)
def test_a_stopped_responses_run_resumes_and_stores_each_file_once(
    replay: FakeReplayServer, workdir: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    given = {"WAYBACK_BASE_URL": replay.base_url}
    urls = run_scrapy(workdir, *crawl_args("wayback", "example.com", given, "-a", "filters=false"))
    assert urls.returncode == 0, urls.stderr[-3000:]
    settings = {
        "WAYBACK_BASE_URL": replay.base_url,
        "FILES_STORE": workdir / "files",
        "JOBDIR": tmp_path / "job",
        "SOURCE_CONCURRENCY": '{"responses": 2}',
        "MINING_BATCH_FILES": 1,  # findings handed over all the time: a stop lands with some in flight
        "AUTOTHROTTLE_ENABLED": "False",
    }
    args = crawl_args("responses", "example.com", settings)
    db = workdir / "trawl.db"

    def some_stored() -> bool:
        return len(rows(db, "SELECT url FROM response_records")) >= 5

    status, took, stderr = stop_when(args, workdir, some_stored, sig)
    check_stopped(sig, status, took, stderr)
    before = {url for (url,) in rows(db, "SELECT url FROM response_records")}
    assert 0 < len(before) < FILES  # stopped in the middle
    first = list(replay.replays)

    replay.replays.clear()
    rerun = run_scrapy(workdir, *args)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert_no_traceback(rerun)
    assert "resuming run" in rerun.stderr
    second = [url for _, url in replay.replays]
    assert not before & set(second)  # nothing stored before the stop is downloaded again
    assert len(second) == len(set(second))
    every = {f"https://example.com/s/{i:03d}.js" for i in range(FILES)}
    assert {url for _, url in first} | set(second) == every
    stored = rows(db, "SELECT url, COUNT(*) FROM response_records GROUP BY url")
    assert len(stored) == FILES and {n for _, n in stored} == {1}
    files = sorted(p.read_bytes() for p in (workdir / "files").rglob("*.js"))
    assert files == sorted(body(i) for i in range(FILES))


# --- live -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site() -> Iterator[SimpleNamespace]:
    with Website() as web, TlsSite() as tls, HostProxy(web._httpd.server_address[1], tls.bound_port) as proxy:
        yield SimpleNamespace(web=web, tls=tls, proxy=proxy)


def live_args(site: SimpleNamespace, workdir: Path, jobdir: Path | None, *extra: str) -> list[str]:
    args = [
        "crawl", "live", "-a", "domain=example.com", "-a", "depth=10",
        "-s", f"PROXY_LIST={site.proxy.url}", "-s", f"STORE_URI=sqlite:///{workdir / 'trawl.db'}",
        "-s", "LIVE_PATTERN_CAP=3", *extra,
    ]  # fmt: skip
    return [*args, "-s", f"JOBDIR={jobdir}"] if jobdir else args


def pages(site: SimpleNamespace) -> list[tuple[str, str]]:
    """Pages the site was asked: robots.txt and the per-origin random path aside."""
    asked = [*site.web.seen, *(("secure.example.com", path) for path in site.tls.seen)]
    return [(h, p) for h, p in asked if p != "/robots.txt" and not (len(p) == 25 and p[1:].isalnum())]


def clear(site: SimpleNamespace) -> None:
    site.web.seen.clear()
    site.tls.seen.clear()
    site.proxy.requests.clear()


@pytest.mark.parametrize("sig", SIGNALS, ids=IDS)
def test_a_stopped_live_crawl_resumes_and_fetches_what_one_run_fetches(
    site: SimpleNamespace, tmp_path: Path, sig: signal.Signals
) -> None:
    whole = tmp_path / "whole"
    whole.mkdir()
    clear(site)
    one = run_scrapy(whole, *live_args(site, whole, None))
    assert one.returncode == 0, one.stderr[-3000:]
    expected = set(pages(site))
    expected_links = {u for (u,) in rows(whole / "trawl.db", "SELECT url FROM link_records")}

    workdir = tmp_path / "stopped"
    workdir.mkdir()
    slow = ["-s", "RATE_LIMITS_ENABLED=True", "-s", 'RATE_LIMITS={"live": "8/1s"}']
    slow += ["-s", "AUTOTHROTTLE_ENABLED=False"]
    args = live_args(site, workdir, tmp_path / "job", *slow)
    db = workdir / "trawl.db"
    clear(site)

    def some_pages() -> bool:
        return len(pages(site)) >= 6 and bool(rows(db, "SELECT 1 FROM link_records LIMIT 1"))

    status, took, stderr = stop_when(args, workdir, some_pages, sig)
    check_stopped(sig, status, took, stderr)
    first = pages(site)
    assert set(first) < expected  # stopped in the middle

    clear(site)
    rerun = run_scrapy(workdir, *args)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert_no_traceback(rerun)
    assert "resuming run" in rerun.stderr
    second = pages(site)
    assert set(first) | set(second) == expected
    assert not [page for page, n in Counter(second).items() if n > 1]
    assert {u for (u,) in rows(db, "SELECT url FROM link_records")} == expected_links
