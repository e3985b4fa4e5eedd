"""``trawl serve`` as a user starts it, and headless Chromium to drive its pages.

:func:`served` runs ``trawl serve --port 0`` in a folder, waits for its ready
line (which names the port it got) and stops it with SIGTERM, as Ctrl-C would.
:func:`chromium` starts Debian's ``chromium`` through ``chromedriver`` (the
``chromium`` and ``chromium-driver`` packages; .ci/run installs them): no
network of its own (no updates, no sync, no QUIC), a fresh empty profile, and
downloads into a folder the test reads. Without them the browser tests fail,
they do not skip: CI installs them, so a missing browser there is a bug.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: How long ``trawl serve`` may take to print its ready line (imports scrapy and datasette).
START_TIMEOUT = 60
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1280,1600",
)  # fmt: skip


@dataclass
class Served:
    """A running ``trawl serve``: its base URL and every line it wrote to stderr so far."""

    process: subprocess.Popen
    url: str = ""
    lines: list[str] = field(default_factory=list)


def _read_lines(served: Served, ready: threading.Event) -> None:
    assert served.process.stderr is not None
    for line in served.process.stderr:
        served.lines.append(line.rstrip("\n"))
        found = re.search(r" at (http://\S+/) ", line)
        if found and not served.url:
            served.url = found.group(1)
            ready.set()
    ready.set()


@contextmanager
def served(folder: Path, *args: str) -> Iterator[Served]:
    """``trawl serve --port 0 ARGS`` in ``folder`` until the block ends (then SIGTERM)."""
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
    process = subprocess.Popen(
        [sys.executable, "-m", "trawl.cli", "serve", "--port", "0", *args],
        cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    result = Served(process)
    ready = threading.Event()
    reader = threading.Thread(target=_read_lines, args=(result, ready), daemon=True)
    reader.start()
    try:
        ready.wait(START_TIMEOUT)
        if not result.url:
            process.kill()
            raise AssertionError(f"trawl serve did not start (exit {process.wait()}): {result.lines}")
        yield result
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        reader.join(timeout=5)


#: What the fakes hold: (URL, timestamp, mime type, status) for the Wayback Machine; OTX adds its own.
FIRST_CRAWL = [
    ("https://example.com/", "20150301000000", "text/html", "200"),
    ("https://example.com/login.php", "20160401000000", "text/html", "200"),
    ("https://example.com/admin/panel.php", "20170501000000", "text/html", "403"),
    ("https://api.example.com/v1/users?id=1", "20180601000000", "application/json", "200"),
    ("https://api.example.com/v1/users?id=2", "20180602000000", "application/json", "200"),
    ("https://static.example.com/app.js", "20190701000000", "application/javascript", "200"),
    ("https://static.example.com/vendor.js", "20190702000000", "application/javascript", "200"),
    ("https://static.example.com/old.js", "20200801000000", "application/javascript", "404"),
]
LATER_CRAWL = [
    ("https://api.example.com/v2/orders?page=2", "20210901000000", "application/json", "200"),
    ("https://example.com/search?q=shoes", "20211001000000", "text/html", "200"),
]
OTX_URLS = [
    ("https://example.com/login.php", "2016-04-02T00:00:00"),
    ("https://example.com/otx-only", "2022-01-01T00:00:00"),
]


def crawl_fakes(folder: Path, twice: bool = True) -> Path:
    """``trawl crawl all`` (wayback, otx) against the local fakes; ``twice``: a second finds more.

    The store is ``folder/trawl.db``; a second crawl adds :data:`LATER_CRAWL`'s URLs.
    """
    from tests.conftest import crawl_args, run_scrapy
    from tests.servers.ia_cdx import FakeCdxServer, make_capture
    from tests.servers.otx import FakeOtxServer, OtxUrl

    def captures(rows: list[tuple[str, str, str, str]]) -> list:
        return [make_capture(u, t, mimetype=m, statuscode=s) for u, t, m, s in rows]

    otx = [OtxUrl(u, d) for u, d in OTX_URLS]
    with (
        FakeCdxServer(captures(FIRST_CRAWL), lines_per_page=3) as wayback,
        FakeOtxServer(urls=otx) as otx_server,
    ):
        settings = {"WAYBACK_BASE_URL": wayback.base_url, "OTX_BASE_URL": otx_server.base_url}
        args = crawl_args("all", "example.com", settings, "-a", "filters=false", "-a", "sources=wayback,otx")
        for rows in (FIRST_CRAWL, FIRST_CRAWL + LATER_CRAWL)[: 2 if twice else 1]:
            wayback.set_captures(captures(rows))
            result = run_scrapy(folder, *args)
            assert result.returncode == 0, result.stderr[-3000:]
    return folder / "trawl.db"


@contextmanager
def chromium(downloads: Path) -> Iterator[Any]:
    """A headless Chromium under Selenium, downloading into ``downloads``; fails if none is installed."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert binary and driver, "chromium and chromedriver are needed: apt-get install chromium chromium-driver"
    profile = tempfile.mkdtemp(prefix="trawl-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_experimental_option(
        "prefs", {"download.default_directory": str(downloads), "download.prompt_for_download": False}
    )
    browser = webdriver.Chrome(service=Service(driver), options=options)
    try:
        browser.execute_cdp_cmd(
            "Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
        )
        yield browser
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)
