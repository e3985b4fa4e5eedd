"""trawl's plugin system, seen from a plugin author's side."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CrawlResult, crawl_args, run_scrapy
from tests.servers.ia_cdx import FakeCdxServer, make_capture

PLUGIN_SOURCE = Path(__file__).parent / "plugins" / "trawl-drop-keyword"
URLS = [
    "http://example.com/",
    "http://example.com/private/report",
    "http://example.com/site.css",
    "http://example.com/public/",
]


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plugin, pip-installed into a directory of its own."""
    target = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("src") / PLUGIN_SOURCE.name
    shutil.copytree(PLUGIN_SOURCE, source)  # setuptools builds in the source tree
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
    )
    return target


@pytest.fixture
def server():
    with FakeCdxServer([make_capture(u, "20200101000000") for u in URLS], lines_per_page=10) as srv:
        yield srv


def crawl(workdir: Path, server: FakeCdxServer, env: dict | None = None, **settings) -> CrawlResult:
    args = crawl_args(
        "wayback", "example.com", {"WAYBACK_BASE_URL": server.base_url, **settings}, "-o", "urls.txt"
    )
    return run_scrapy(workdir, *args, env=env)


def test_installed_plugin_adds_a_filter(workdir: Path, server: FakeCdxServer, plugin_path: Path) -> None:
    result = crawl(workdir, server, env={"PYTHONPATH": str(plugin_path)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert set(result.lines("urls.txt")) == {"http://example.com/", "http://example.com/public/"}
    assert result.stat("trawl/filtered/drop_keyword") == "1"


def test_plugin_reads_its_setting(workdir: Path, server: FakeCdxServer, plugin_path: Path) -> None:
    result = crawl(workdir, server, env={"PYTHONPATH": str(plugin_path)}, DROP_KEYWORD="public")
    assert set(result.lines("urls.txt")) == {"http://example.com/", "http://example.com/private/report"}


def test_without_the_plugin_nothing_is_dropped(workdir: Path, server: FakeCdxServer) -> None:
    result = crawl(workdir, server)
    assert "http://example.com/private/report" in set(result.lines("urls.txt"))


def test_plugins_can_be_disabled(workdir: Path, server: FakeCdxServer, plugin_path: Path) -> None:
    result = crawl(
        workdir,
        server,
        env={"PYTHONPATH": str(plugin_path)},
        TRAWL_PLUGINS_DISABLED="drop_keyword,url_filter",
    )
    # neither the third-party filter nor the built-in URL filter ran
    assert set(result.lines("urls.txt")) == set(URLS)


def test_plugins_command_lists_builtins_and_third_party(workdir: Path, plugin_path: Path) -> None:
    result = run_scrapy(workdir, "plugins", env={"PYTHONPATH": str(plugin_path)})
    assert result.returncode == 0
    names = {line.split()[0] for line in result.stdout.splitlines()}
    assert {
        "normalizer",
        "scope",
        "url_filter",
        "dedup",
        "store",
        "sqlite_store",
        "sources",
        "drop_keyword",
    } <= names
    drop = next(line for line in result.stdout.splitlines() if line.startswith("drop_keyword"))
    assert "trawl_filter_batch" in drop


def test_plugin_module_from_settings(workdir: Path, server: FakeCdxServer, tmp_path: Path) -> None:
    # TRAWL_PLUGINS registers a module by import path, no entry point needed
    module_dir = tmp_path / "modules"
    module_dir.mkdir()
    (module_dir / "trawl_drop_keyword.py").write_text((PLUGIN_SOURCE / "trawl_drop_keyword.py").read_text())
    result = crawl(
        workdir, server, env={"PYTHONPATH": str(module_dir)}, TRAWL_PLUGINS='{"trawl_drop_keyword": true}'
    )
    assert "http://example.com/private/report" not in set(result.lines("urls.txt"))
