"""The live crawl and the probe against hostile pages: bounded, and each said once.

Found by bench/hostile_live.py: a 10 MB robots.txt cost a live crawl 235 MB of
RSS (394 MB in all for five requests: its 500,000 rules parsed), and a gzip bomb
answered to the probe inflated to 64 MiB (``DOWNLOAD_MAXSIZE``) to keep 64 KiB
of it, and its record lost the status the server gave. The site is
tests/servers/hostile_site.py (a forward proxy answering every host, logging
every request).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import assert_no_traceback, run_scrapy
    from tests.helpers.probe import seed
    from tests.servers.hostile_site import ROBOTS_LINES, HostileSite, Reply, html
except ImportError:
    from conftest import assert_no_traceback, run_scrapy  # type: ignore[no-redef]
    from helpers.probe import seed  # type: ignore[no-redef]
    from servers.hostile_site import ROBOTS_LINES, HostileSite, Reply, html  # type: ignore[no-redef]

ORG = "example.org"


def test_a_robots_txt_is_read_up_to_500_kib_said_once(tmp_path: Path) -> None:
    """RFC 9309 2.5: a crawler may stop parsing at 500 KiB; the rules past it (here the one
    that disallows ``/about``) are ignored, and the crawl says so in one line."""
    rules = b"".join(b"Disallow: /private/%07d\n" % n for n in range(ROBOTS_LINES))
    with HostileSite() as site:
        site.pages[f"{ORG}/robots.txt"] = Reply(
            200, b"User-agent: *\n" + rules + b"Disallow: /about\n", "text/plain"
        )
        site.pages[f"{ORG}/"] = Reply(200, html("Home", '<a href="/about">about</a>'))
        site.pages[f"{ORG}/about"] = Reply(200, html("About", "<p>about</p>"))
        result = run_scrapy(
            tmp_path, "crawl", "live", "-a", f"domain={ORG}", "-s", f"PROXY_LIST={site.url}",
            "-s", f"STORE_URI=sqlite:///{tmp_path / 'trawl.db'}",
        )  # fmt: skip
        asked = site.asked(ORG)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    assert asked.count("/robots.txt") == 1
    assert "/about" in asked
    said = [line for line in result.stderr.splitlines() if "robots.txt" in line and "500 KiB" in line]
    assert len(said) == 1, said
    assert "WARNING" in said[0] and f"http://{ORG}/robots.txt" in said[0]


def test_a_gzip_bomb_answered_to_the_probe_keeps_its_status_and_first_bytes(tmp_path: Path) -> None:
    with HostileSite() as site:
        site.pages[f"{ORG}/bomb.html"] = Reply(kind="bomb", size=1 << 30)
        seed(tmp_path / "trawl.db", [f"http://{ORG}/bomb.html"])
        result = run_scrapy(
            tmp_path, "crawl", "probe", "-a", f"domain={ORG}", "-s", f"PROXY_LIST={site.url}",
            "-s", f"STORE_URI=sqlite:///{tmp_path / 'trawl.db'}",
        )  # fmt: skip
        asked = site.asked(ORG)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    assert asked.count("/bomb.html") == 1
    with sqlite3.connect(tmp_path / "trawl.db") as con:
        row = con.execute(
            "SELECT status, content_type, truncated, error, verdict FROM probe_records WHERE url = ?",
            (f"http://{ORG}/bomb.html",),
        ).fetchone()
    assert row == (200, "text/html; charset=utf-8", 1, None, "live")
    assert "64 MiB" not in result.stderr
