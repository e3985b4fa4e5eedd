"""Every source's fake upstream, serving one dataset, and the settings that point trawl at them.

:func:`start_upstreams` starts one fake server per source on 127.0.0.1 (each
the one its tests use, speaking the real wire format; wayback's replays its
captures too, :mod:`tests.servers.devreplay`), accepting :data:`DEV_KEY`
where the source takes an API key; :func:`crawl_settings` gives the ``-s``
settings of a crawl against them, :func:`crawl_command` the command line and
:func:`settings_module` the same settings as a Scrapy settings module (Scrapy
reads settings from a module named by ``SCRAPY_SETTINGS_MODULE``, not from a
file of values or the environment).

The crawl runs with politeness off (local servers need no pacing), filters off
(so that the stored URLs are exactly :func:`tests.servers.devdata.expected_urls`),
no collinfo cache (the ports change from one run to the next) and its own store,
``trawl-dev.db``, so that generated URLs never land in a real ``trawl.db``. It
names its sources (``-a sources=``): a source without a fake here, a plugin's
included, is never asked.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tests.servers.commoncrawl import FakeCommonCrawl
from tests.servers.devdata import SOURCES, Dataset
from tests.servers.devreplay import dev_replay
from tests.servers.ghostarchive import FakeGhostArchive
from tests.servers.intelx import FakeIntelX
from tests.servers.otx import FakeOtxServer
from tests.servers.urlscan import FakeUrlscanServer
from tests.servers.virustotal import FakeVirusTotal, build_report
from trawl.sources.ghostarchive import search_term

DEV_KEY = "dev-key"
STORE_URI = "sqlite:///trawl-dev.db"
#: Page sizes that give a few pages a source at a few thousand URLs.
WAYBACK_LINES_PER_PAGE = 1_000
COMMONCRAWL_LINES_PER_BLOCK = 100
GHOSTARCHIVE_PER_PAGE = 20


def _server(source: str, data: Dataset) -> Any:
    domain = data.domain
    if source == "wayback":  # the CDX server and the replay of its captures (trawl crawl responses)
        return dev_replay(data.wayback, domain, lines_per_page=WAYBACK_LINES_PER_PAGE)
    if source == "commoncrawl":
        return FakeCommonCrawl(
            data.commoncrawl, collinfo=data.collinfo(), lines_per_block=COMMONCRAWL_LINES_PER_BLOCK
        )
    if source == "otx":
        return FakeOtxServer(urls=data.otx, valid_keys={DEV_KEY})
    if source == "urlscan":
        return FakeUrlscanServer(results=data.urlscan, valid_keys={DEV_KEY})
    if source == "virustotal":
        report = build_report(
            undetected=[(url, date) for url, date, detected in data.virustotal if not detected],
            detected=[(url, date) for url, date, detected in data.virustotal if detected],
            subdomains=data.virustotal_subdomains,
        )
        return FakeVirusTotal(keys={DEV_KEY}, reports={domain: report})
    if source == "intelx":
        return FakeIntelX(keys={DEV_KEY}, selectors={domain: data.intelx}, credits=10**9, credit_max=10**9)
    if source == "ghostarchive":
        return FakeGhostArchive(
            archives={search_term(domain): data.ghostarchive}, per_page=GHOSTARCHIVE_PER_PAGE
        )
    raise ValueError(f"no fake server for {source!r}")


def start_upstreams(data: Dataset, stack: ExitStack, port_base: int | None = None) -> dict[str, Any]:
    """The running servers by source, stopped when ``stack`` closes.

    With ``port_base`` each source listens on ``port_base`` plus its place in
    :data:`~tests.servers.devdata.SOURCES` (wayback first), whichever sources
    run; otherwise on a free port. A port in use raises ``OSError`` naming it.
    """
    servers = {}
    for source in data.sources:
        server = _server(source, data)
        if port_base is not None:
            server.port = port_base + SOURCES.index(source)
        try:
            servers[source] = stack.enter_context(server)
        except OSError as exc:
            raise OSError(exc.errno, f"{source} on 127.0.0.1:{server.port}: {exc.strerror}") from exc
    return servers


def crawl_settings(servers: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a crawl against ``servers``, in source order, then the common ones."""
    settings: dict[str, Any] = {}
    for source, server in servers.items():
        url = server.base_url
        settings.update(
            {
                "wayback": {"WAYBACK_BASE_URL": url},
                "commoncrawl": {"COMMONCRAWL_BASE_URL": url},
                "otx": {"OTX_BASE_URL": url, "OTX_API_KEY": DEV_KEY},
                "urlscan": {"URLSCAN_BASE_URL": url, "URLSCAN_API_KEY": DEV_KEY},
                "virustotal": {"VIRUSTOTAL_BASE_URL": url, "VIRUSTOTAL_API_KEY": DEV_KEY},
                # One fake base: the fallback is never needed, but must not be the real host.
                "intelx": {
                    "INTELX_BASE_URL": url,
                    "INTELX_FALLBACK_BASE_URL": url,
                    "INTELX_API_KEY": DEV_KEY,
                },
                "ghostarchive": {"GHOSTARCHIVE_BASE_URL": url},
            }[source]
        )
    settings.update(
        {
            "RATE_LIMITS_ENABLED": False,
            "AUTOTHROTTLE_ENABLED": False,
            "TRAWL_CACHE_DIR": "",
            "STORE_URI": STORE_URI,
        }
    )
    return settings


def crawl_arguments(data: Dataset) -> list[str]:
    """``crawl all``'s spider arguments (``-a``)."""
    return ["-a", f"domain={data.domain}", "-a", "sources=" + ",".join(data.sources), "-a", "filters=false"]


def trawl_executable() -> str:
    """The ``trawl`` beside this Python: a bare ``trawl`` is not on PATH until the virtualenv is active."""
    beside = Path(sys.executable).parent / "trawl"
    return str(beside) if beside.is_file() else "trawl"


def crawl_command(data: Dataset, settings: Mapping[str, Any]) -> str:
    """``<venv>/bin/trawl crawl all ...`` with every setting as ``-s``, one a line, ready to paste."""
    head = shlex.join([trawl_executable(), "crawl", "all", *crawl_arguments(data)])
    lines = [head] + ["    -s " + shlex.quote(f"{name}={value}") for name, value in settings.items()]
    return " \\\n".join(lines)


def settings_module_usage(data: Dataset, module: str, directory: str) -> str:
    """The command that crawls with the settings module ``module`` in ``directory``."""
    usage = shlex.join([trawl_executable(), "crawl", "all", *crawl_arguments(data)])
    return f"PYTHONPATH={shlex.quote(directory)} SCRAPY_SETTINGS_MODULE={module} {usage}"


def settings_module(data: Dataset, settings: Mapping[str, Any], module: str, directory: str) -> str:
    """A Scrapy settings module: trawl's settings with ``settings`` on top."""
    lines = [
        '"""trawl\'s settings pointed at the dev server\'s upstreams (python -m tests.servers).',
        "",
        "    " + settings_module_usage(data, module, directory),
        '"""',
        "",
        "from trawl.settings import *  # noqa: F403",
        "",
    ]
    lines += [f"{name} = {value!r}" for name, value in settings.items()]
    return "\n".join(lines) + "\n"
