"""``trawl crawl probe -s JOBDIR=``: stopped (Ctrl-C or ``kill -9``), then the same command again.

The probe writes each URL it stored into the store's page ledger, in the
records' own transaction; the resumed run (the same run, kept in JOBDIR) skips
those URLs. What a user sees is checked: the requests the site logged across
the two runs, and the probe records stored.
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

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import assert_no_traceback, run_scrapy
    from tests.helpers.probe import seed
    from tests.servers.website import HostProxy, TlsSite, Website
except ImportError:
    from conftest import assert_no_traceback, run_scrapy  # type: ignore[no-redef]
    from helpers.probe import seed  # type: ignore[no-redef]
    from servers.website import HostProxy, TlsSite, Website  # type: ignore[no-redef]

W = "http://www.example.com"
URLS = [f"{W}/p/{i:03d}" for i in range(120)]
DEADLINE = 60.0  # seconds; a ceiling for polling, never a wait


@pytest.fixture(scope="module")
def site() -> Iterator[SimpleNamespace]:
    with Website() as web, TlsSite() as tls, HostProxy(web._httpd.server_address[1], tls.bound_port) as proxy:
        yield SimpleNamespace(web=web, tls=tls, proxy=proxy)


def stored(db: Path) -> list[str]:
    """Probe records a reader sees now (the crawl may be writing)."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
            return [url for (url,) in con.execute("SELECT url FROM probe_records")]
    except sqlite3.OperationalError:  # no table yet
        return []


def asked(requests: list[str]) -> list[str]:
    """The selected URLs the site was asked (not the per-origin random path and favicon)."""
    return [r.split(" ", 1)[1] for r in requests if r.startswith("GET ") and "/p/" in r]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_stopped_probe_resumes_without_asking_again(
    site: SimpleNamespace, workdir: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    db = workdir / "trawl.db"
    seed(db, URLS)
    args = [
        "crawl", "probe", "-a", "domain=example.com", "-a", "all=true",
        "-s", f"PROXY_LIST={site.proxy.url}", "-s", f"JOBDIR={tmp_path / 'job'}",
        "-s", "PROBE_HOST_CONCURRENCY=1", "-s", "SOURCE_CONCURRENCY={\"probe\": 1}",
        "-s", "AUTOTHROTTLE_ENABLED=False", "-s", "PROGRESS_INTERVAL=0",
    ]  # fmt: skip
    site.proxy.requests.clear()
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
    env.pop("SCRAPY_PROJECT", None)
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
        while len(stored(db)) < 10:
            assert proc.poll() is None, "the probe ended before it was stopped"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(stop)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    first = asked(site.proxy.requests)
    kept = set(stored(db))
    assert kept and len(kept) < len(URLS)  # stopped in the middle

    site.proxy.requests.clear()
    result = run_scrapy(workdir, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    assert "resuming run" in result.stderr
    second = asked(site.proxy.requests)

    assert not kept & set(second)  # nothing stored in the first run is asked again
    assert len(second) == len(set(second))
    again = Counter(first + second) - Counter(set(first + second))
    # Asked twice: only what was in flight, or answered and not yet stored (the records the
    # probe holds up to BATCH_SECONDS before it hands them over), when the run stopped.
    assert set(again) <= set(first) - kept
    assert set(first + second) == set(URLS)
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT url, COUNT(*) FROM probe_records GROUP BY url").fetchall()
        runs = con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    assert sorted(url for url, _ in rows) == URLS and {n for _, n in rows} == {1}
    assert runs == 2  # the seed's and the probe's, resumed
