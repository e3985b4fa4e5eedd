"""A service that limits harder than trawl's budget does not ban it, or not for long.

Against a server that behaves like the Internet Archive's CDX endpoint (15
requests a minute, 429 without Retry-After, three 429s in a row and the
connection is refused for 120 s), wayback at its default 60/60s was banned,
spent its retries on 72 refused connections and gave up 11 of 40 pages (recall
0.70). Here every duration, the server's and trawl's, is scaled by 0.05
(15 requests per 3 s, a 6 s ban) so that a run takes seconds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.servers.ia_cdx import make_capture
from tests.servers.ia_limits import LimitingCdxServer

SCALE = 0.05
PAGES = 40
CAPTURES = [make_capture(f"http://example.com/p{page:02d}", "20200101000000") for page in range(PAGES)]


def scaled_defaults() -> dict[str, object]:
    """trawl's own defaults for wayback, every duration scaled like the server's."""
    return {
        "RATE_LIMITS_ENABLED": True,
        "RATE_LIMITS": f'{{"wayback": "60/{60 * SCALE:g}s"}}',
        "RETRY_BAN_PAUSE": 120 * SCALE,
        "RETRY_MAX_PAUSE": 3600 * SCALE,
        "RETRY_BACKOFF_BASE": 1 * SCALE,
        "RETRY_BACKOFF_MAX": 60 * SCALE,
        "AUTOTHROTTLE_ENABLED": True,
        "AUTOTHROTTLE_START_DELAY": 1 * SCALE,
        "AUTOTHROTTLE_MAX_DELAY": 60 * SCALE,
        "PROGRESS_INTERVAL": 0.5,
    }


def crawl(workdir: Path, server: LimitingCdxServer, **settings: object) -> CrawlResult:
    merged = {**scaled_defaults(), "WAYBACK_BASE_URL": server.base_url, **settings}
    return run_scrapy(workdir, *crawl_args("wayback", "example.com", merged, "-a", "filters=false"))


def assert_recall_one(result: CrawlResult) -> None:
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(result.stored()) == {c.original for c in CAPTURES}  # recall 1.000


def warnings(result: CrawlResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if "] WARNING:" in line]


def summary(result: CrawlResult) -> str:
    lines = [line for line in result.stderr.splitlines() if "wayback: complete (finished)" in line]
    assert lines, result.stderr[-3000:]
    return lines[0]


def test_the_real_limit_is_learnt_from_429s_without_a_ban(workdir: Path) -> None:
    with LimitingCdxServer(CAPTURES, lines_per_page=1, time_factor=SCALE) as server:
        result = crawl(workdir, server)
        bans = len(server.bans)
    assert_recall_one(result)
    assert bans == 0
    said = warnings(result)
    # cut to what the server served in the window: 15, or 14 when the 15th answer was still on its way
    assert any(re.search(r"HTTP 429 without Retry-After: budget cut to 1[45]/3s", line) for line in said)
    assert re.search(r"; waited \d+ s in \d+ pauses?, finished at 1[45]/3s", summary(result))
    progress = [line for line in result.stderr.splitlines() if "wayback: pages " in line]
    assert any("| paused until " in line and "HTTP 429 without Retry-After" in line for line in progress)


@pytest.mark.parametrize("ban_mode", ["refuse", "reset"])
def test_a_ban_is_sat_out_with_the_pages_kept_pending(workdir: Path, ban_mode: str) -> None:
    # A stricter server, banning at the first 429: the ban is certain, whatever the timing.
    with LimitingCdxServer(
        CAPTURES, lines_per_page=1, time_factor=SCALE, strikes=1, ban_mode=ban_mode
    ) as server:
        result = crawl(workdir, server)
        bans = len(server.bans)
    assert_recall_one(result)
    assert bans == 1
    assert result.stat("trawl/gave_up") is None
    said = warnings(result)
    banned = [line for line in said if "wayback: banned (connection" in line and "no retry spent" in line]
    assert banned, result.stderr[-6000:]
    assert "(1 ban)" in summary(result)
