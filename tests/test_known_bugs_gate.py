"""Two bugs a user hit, each shown the way the user saw it.

* A source whose own ``default_download_timeout`` is above the bound of
  ``DOWNLOAD_TIMEOUT`` (an hour) made ``trawl crawl`` print a traceback from
  inside the reactor and exit 0, instead of one ``trawl: error:`` line and 2.
* ``-s PROGRESS_INTERVAL=-1`` (progress off) made a single-source crawl that
  logged an ERROR exit 0, where the same crawl with progress on exits 1: the
  outcome was only ever decided by the progress extension.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import ROOT, assert_no_traceback, crawl_args, run_scrapy
from tests.helpers.politeness import crawl, dataset
from tests.servers.ia_cdx import FakeCdxServer, service_unavailable

#: A plugin module (``TRAWL_PLUGINS``) with one source whose timeout is above the bound.
SLOW_SOURCE = """
import pluggy
from trawl.sources.cdx.wayback import WaybackSpider

hookimpl = pluggy.HookimplMarker("trawl")


class SlowCdxSpider(WaybackSpider):
    name = "slowcdx"
    default_download_timeout = 7200


@hookimpl
def trawl_register_sources():
    return {SlowCdxSpider.name: SlowCdxSpider}
"""


def test_a_source_default_timeout_above_the_bound_is_one_line(workdir: Path, tmp_path: Path) -> None:
    (tmp_path / "slow_cdx_plugin.py").write_text(SLOW_SOURCE)
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    with FakeCdxServer(dataset(1, 2), lines_per_page=10) as server:
        settings = {"WAYBACK_BASE_URL": server.base_url, "TRAWL_PLUGINS": '{"slow_cdx_plugin": true}'}
        for args in (
            crawl_args("slowcdx", "example.com", settings),
            crawl_args("all", "example.com", settings, "-a", "sources=slowcdx"),
        ):
            result = run_scrapy(workdir, *args, env=env)
            assert_no_traceback(result)
            errors = [line for line in result.stderr.splitlines() if line.startswith("trawl: error:")]
            assert result.returncode == 2, result.stderr[-3000:]
            assert len(errors) == 1, result.stderr[-3000:]
            assert "DOWNLOAD_TIMEOUT must be at most 3600 seconds" in errors[0]
            assert "slowcdx" in errors[0] and "default_download_timeout" in errors[0]
        assert server.requests == []  # refused before anything was sent
        # The per-source setting overrides the class's default: then the crawl runs.
        fixed = run_scrapy(
            workdir,
            *crawl_args("slowcdx", "example.com", {**settings, "SOURCE_DOWNLOAD_TIMEOUT": '{"slowcdx": 60}'}),
            env=env,
        )
    assert fixed.returncode == 0, fixed.stderr[-3000:]


def test_an_error_makes_the_exit_status_non_zero_with_progress_off(workdir: Path) -> None:
    codes = {}
    for interval in ("10", "-1"):
        with FakeCdxServer(dataset(4, 2), lines_per_page=2) as server:
            server.fail_pages = {1: [service_unavailable()] * 10}
            result = crawl(workdir / interval, server, RETRY_TIMES=1, PROGRESS_INTERVAL=interval)
        assert_no_traceback(result)
        assert any("HTTP 503 for CDX page 1" in line for line in result.errors), result.stderr[-3000:]
        codes[interval] = result.returncode
    assert codes == {"10": 1, "-1": 1}
