"""What a refused setting looks like, and the settings a run is checked against.

:func:`refused` asserts a run was refused as a user must see it: one
``trawl: error:`` line, exit status 2, nothing sent to the server, no store
created. ``QUIET`` is trawl's default console, ``SOURCES`` the built-in URL
sources, :func:`trawl_defaults` trawl's settings as a run starts with them.
"""

from __future__ import annotations

from scrapy.settings import Settings

import trawl.settings
from tests.conftest import CrawlResult
from tests.servers.ia_cdx import FakeCdxServer

#: trawl's default console (the suite's run_scrapy keeps Scrapy's INFO lines for its stats dump).
QUIET = {"TRAWL_LOG_ALL": "False"}
SOURCES = ["commoncrawl", "ghostarchive", "intelx", "otx", "urlscan", "virustotal", "wayback"]


def trawl_defaults() -> Settings:
    settings = Settings()
    settings.setmodule(trawl.settings, priority="project")
    return settings


def refused(result: CrawlResult, server: FakeCdxServer, start: str) -> None:
    """One line, exit status 2, nothing sent, nothing created."""
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.splitlines() == [result.stderr.strip()], result.stderr[-3000:]
    assert result.stderr.startswith(f"trawl: error: {start}"), result.stderr
    assert server.requests == []
    assert not (result.workdir / "trawl.db").exists()
