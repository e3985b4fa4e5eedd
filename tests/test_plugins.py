"""trawl's plugin system, seen from a plugin author's side."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.crawler import Crawler
from scrapy.settings import Settings

import trawl
from tests.conftest import FAST, ROOT, CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.helpers import processes
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from trawl.errors import TrawlUsageError
from trawl.pipeline.itempipeline import PluginPipeline
from trawl.pipeline.manager import (
    DEFAULT_PLUGINS,
    ESSENTIAL_PLUGINS,
    build_plugin_manager,
    builtin_name,
    plugin_manager_from_settings,
)
from trawl.sources.cdx.wayback import WaybackSpider
from trawl.sources.loader import PluginSpiderLoader

PLUGIN_SOURCE = Path(__file__).parent / "plugins" / "trawl-drop-keyword"
BUILTINS = sorted(builtin_name(path) for path in DEFAULT_PLUGINS)
SOURCES = [
    "commoncrawl", "crates", "ghostarchive", "intelx", "live", "otx", "probe", "responses", "urlscan",
    "virustotal", "wayback",
]  # fmt: skip
#: What an install of trawl from before the built-ins were registered in code left
#: in its metadata; it stays in site-packages until trawl is reinstalled.
STALE_ENTRY_POINTS = """\
[scrapy.commands]
es-replay = trawl.stores.elasticsearch.commands.es_replay:Command
kibana-setup = trawl.stores.elasticsearch.commands.kibana_setup:Command

[trawl]
dedup = trawl.pipeline.builtins.dedup
elasticsearch_store = trawl.plugins.elasticsearch_store
normalizer = trawl.pipeline.builtins.normalize
scope = trawl.pipeline.builtins.scope
sources = trawl.sources.builtin
sqlite_store = trawl.plugins.sqlite_store
store = trawl.plugins.store
url_filter = trawl.pipeline.builtins.url_filter
old_plugin = trawl.plugins.removed_since
"""
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
    processes.run(
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


def plugin_env(plugin_path: Path) -> dict[str, str]:
    """The installed plugin on the path, with this checkout's trawl ahead of any other install."""
    return {"PYTHONPATH": os.pathsep.join([str(plugin_path), str(ROOT)])}


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
    result = crawl(workdir, server, env=plugin_env(plugin_path))
    assert result.returncode == 0, result.stderr[-2000:]
    assert set(result.lines("urls.txt")) == {"http://example.com/", "http://example.com/public/"}
    assert result.stat("trawl/filtered/drop_keyword") == "1"


def test_plugin_reads_its_setting(workdir: Path, server: FakeCdxServer, plugin_path: Path) -> None:
    result = crawl(workdir, server, env=plugin_env(plugin_path), DROP_KEYWORD="public")
    assert set(result.lines("urls.txt")) == {"http://example.com/", "http://example.com/private/report"}


def test_without_the_plugin_nothing_is_dropped(workdir: Path, server: FakeCdxServer) -> None:
    result = crawl(workdir, server)
    assert "http://example.com/private/report" in set(result.lines("urls.txt"))


def test_plugins_can_be_disabled(workdir: Path, server: FakeCdxServer, plugin_path: Path) -> None:
    result = crawl(
        workdir,
        server,
        env=plugin_env(plugin_path),
        TRAWL_PLUGINS_DISABLED="drop_keyword,url_filter",
    )
    # neither the third-party filter nor the built-in URL filter ran
    assert set(result.lines("urls.txt")) == set(URLS)


def test_plugins_command_lists_builtins_and_third_party(workdir: Path, plugin_path: Path) -> None:
    result = run_scrapy(workdir, "plugins", env=plugin_env(plugin_path))
    assert result.returncode == 0
    names = {line.split()[0] for line in result.stdout.splitlines()}
    assert {
        "normalizer",
        "scope",
        "url_filter",
        "dedup",
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


def fake_distribution(root: Path, name: str, entry_points: str) -> Path:
    """An installed distribution's metadata and nothing else, as pip leaves it."""
    info = root / f"{name}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    return root


def usage_errors(result: CrawlResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("trawl: error:")]


def assert_refused(result: CrawlResult, *expected: str) -> str:
    """Exit status 2, one error line containing every ``expected``, nothing started."""
    assert result.returncode == 2, result.stderr[-2000:]
    assert_no_traceback(result)
    errors = usage_errors(result)
    assert len(errors) == 1, result.stderr[-2000:]
    for text in expected:
        assert text in errors[0]
    assert "Spider opened" not in result.stderr
    assert not (result.workdir / "trawl.db").exists()
    return errors[0]


# --- essential plugins, unknown names, bad modules: one line, exit 2 ---------------------


@pytest.mark.parametrize("name", sorted(ESSENTIAL_PLUGINS))
def test_an_essential_plugin_cannot_be_disabled(workdir: Path, server: FakeCdxServer, name: str) -> None:
    result = crawl(workdir, server, TRAWL_PLUGINS_DISABLED=name)
    line = assert_refused(result)
    assert line == (
        f"trawl: error: TRAWL_PLUGINS_DISABLED: {name} cannot be disabled (essential: dedup, normalizer)"
    )
    assert server.requests == []


def test_the_exact_command_from_the_bug_report(workdir: Path) -> None:
    # no server at all: the refusal must come before any request is even built
    result = run_scrapy(
        workdir, "crawl", "wayback", "-a", "domain=example.com", "-s", "TRAWL_PLUGINS_DISABLED=dedup"
    )
    assert_refused(result, "dedup cannot be disabled", "(essential: dedup, normalizer)")


def test_crawl_all_refuses_an_essential_plugin_too(workdir: Path, server: FakeCdxServer) -> None:
    args = crawl_args("all", "example.com", {"TRAWL_PLUGINS_DISABLED": "url_filter,dedup"})
    result = run_scrapy(workdir, *args)
    assert_refused(result, "TRAWL_PLUGINS_DISABLED: dedup cannot be disabled")
    assert "source" not in result.stdout  # no summary table: nothing ran


def test_an_unknown_disabled_name_is_refused_naming_the_known_ones(
    workdir: Path, server: FakeCdxServer
) -> None:
    result = crawl(workdir, server, TRAWL_PLUGINS_DISABLED='["url_filtr"]')
    line = assert_refused(result, "TRAWL_PLUGINS_DISABLED names no plugin: url_filtr")
    assert line.endswith(f"(known: {', '.join(BUILTINS)})")
    assert server.requests == []


def test_an_unknown_disabled_name_is_refused_by_crawl_all(workdir: Path) -> None:
    result = run_scrapy(workdir, *crawl_args("all", "example.com", {"TRAWL_PLUGINS_DISABLED": "nope"}))
    assert_refused(result, "names no plugin: nope", "known: crates_alerts, dedup,")


def test_a_plugin_module_that_cannot_be_imported_is_one_line(workdir: Path, server: FakeCdxServer) -> None:
    result = crawl(workdir, server, TRAWL_PLUGINS='{"no.such.mod": true}')
    line = assert_refused(result)
    assert line == "trawl: error: cannot import plugin 'no.such.mod' from TRAWL_PLUGINS: No module named 'no'"


def test_trawl_plugins_that_is_not_json_is_one_line(workdir: Path, server: FakeCdxServer) -> None:
    result = crawl(workdir, server, TRAWL_PLUGINS='{"no.such.mod": tru')
    assert_refused(result, "TRAWL_PLUGINS is not valid JSON")


def test_scrapy_list_reports_a_bad_plugin_setting(workdir: Path) -> None:
    result = run_scrapy(workdir, "list", "-s", "TRAWL_PLUGINS_DISABLED=normalizer")
    assert result.returncode == 2
    assert usage_errors(result) == [
        "trawl: error: TRAWL_PLUGINS_DISABLED: normalizer cannot be disabled (essential: dedup, normalizer)"
    ]
    assert result.stdout == ""


def test_scrapy_plugins_reports_a_bad_plugin_setting(workdir: Path) -> None:
    result = run_scrapy(workdir, "plugins", "-s", "TRAWL_PLUGINS_DISABLED=nope")
    assert result.returncode == 2
    assert_no_traceback(result)
    assert len(usage_errors(result)) == 1 and "names no plugin: nope" in usage_errors(result)[0]


# --- built-ins registered in code; entry points only for third parties -------------------


def test_the_essential_set_names_built_in_plugins() -> None:
    assert ESSENTIAL_PLUGINS <= set(BUILTINS)


def test_scrapy_plugins_lists_each_built_in_once(workdir: Path) -> None:
    result = run_scrapy(workdir, "plugins")
    assert result.returncode == 0, result.stderr[-2000:]
    names = [line.split()[0] for line in result.stdout.splitlines()]
    assert names == BUILTINS
    essential = {line.split()[0] for line in result.stdout.splitlines() if line.endswith("(essential)")}
    assert essential == ESSENTIAL_PLUGINS


def test_stale_entry_points_of_an_old_install_change_nothing(
    workdir: Path, server: FakeCdxServer, tmp_path: Path
) -> None:
    # A metadata copy that shadows the installed one (first on sys.path), as a
    # site-packages that was not reinstalled after the entry points left pyproject.toml.
    stale = fake_distribution(tmp_path / "stale", "trawl", STALE_ENTRY_POINTS)
    env = {"PYTHONPATH": f"{stale}{os.pathsep}{ROOT}"}
    listed = run_scrapy(workdir, "plugins", env=env)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert [line.split()[0] for line in listed.stdout.splitlines()] == BUILTINS
    result = crawl(workdir, server, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert set(result.lines("urls.txt")) == {"http://example.com/", "http://example.com/private/report",
                                             "http://example.com/public/"}  # fmt: skip
    assert len(result.stored()) == 3
    assert "DropItem" not in result.stderr and "Dropped:" not in result.stderr


def test_stale_entry_points_are_skipped_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(fake_distribution(tmp_path, "trawl", STALE_ENTRY_POINTS)))
    pm = build_plugin_manager()
    assert sorted(name for name, _ in pm.list_name_plugin()) == BUILTINS


def test_a_module_registered_twice_is_registered_once() -> None:
    pm = build_plugin_manager({"trawl.pipeline.builtins.dedup": True, "trawl.pipeline.builtins.scope": True})
    names = [name for name, _ in pm.list_name_plugin()]
    assert sorted(names) == BUILTINS
    assert len(pm.hook.trawl_dedup_batch.get_hookimpls()) == 1


def test_a_third_party_plugin_may_not_take_a_built_in_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(fake_distribution(tmp_path, "trawl-collide", "[trawl]\nscope = json\n")))
    with pytest.raises(
        TrawlUsageError, match="two plugins are named 'scope': trawl.pipeline.builtins.scope and json"
    ):
        build_plugin_manager()


def test_the_example_plugin_loads_through_its_entry_point(workdir: Path, plugin_path: Path) -> None:
    result = run_scrapy(workdir, "plugins", env=plugin_env(plugin_path))
    assert result.returncode == 0, result.stderr[-2000:]
    lines = {line.split()[0]: line.split() for line in result.stdout.splitlines()}
    assert sorted(lines) == sorted([*BUILTINS, "drop_keyword", "tiny_cdx"])
    assert lines["drop_keyword"][1:] == ["trawl_drop_keyword", "trawl_filter_batch"]


def test_a_third_party_name_is_known_to_trawl_plugins_disabled(workdir: Path, plugin_path: Path) -> None:
    env = plugin_env(plugin_path)
    result = run_scrapy(workdir, "plugins", "-s", "TRAWL_PLUGINS_DISABLED=drop_keyword", env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "drop_keyword         (disabled by TRAWL_PLUGINS_DISABLED)" in result.stdout.splitlines()
    without = run_scrapy(workdir, "plugins", "-s", "TRAWL_PLUGINS_DISABLED=drop_keyword")
    assert without.returncode == 2 and "names no plugin: drop_keyword" in without.stderr


# --- sources come through the hook ---------------------------------------------------------


def test_every_built_in_source_comes_through_the_hook() -> None:
    pm = build_plugin_manager()
    sources_plugin = pm.get_plugin("sources")
    registered = sources_plugin.trawl_register_sources()
    assert sorted(registered) == SOURCES
    assert all(spidercls.name == name for name, spidercls in registered.items())
    merged: dict[str, type] = {}
    for result in pm.hook.trawl_register_sources():
        merged.update(result)
    assert merged == registered


def test_the_loader_offers_the_hook_sources_and_all() -> None:
    settings = Settings({"SPIDER_MODULES": [], "TRAWL_PLUGINS_DISABLED": []})
    assert sorted(PluginSpiderLoader(settings).list()) == ["all", *SOURCES]
    # without the sources plugin no built-in source is left: none comes from SPIDER_MODULES
    settings = Settings({"SPIDER_MODULES": [], "TRAWL_PLUGINS_DISABLED": ["sources"]})
    assert PluginSpiderLoader(settings).list() == ["all"]


def test_scrapy_list_is_unchanged(workdir: Path) -> None:
    result = run_scrapy(workdir, "list")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == ["all", *SOURCES]


# --- one plugin manager per crawl -----------------------------------------------------------


def test_copies_of_the_settings_share_one_manager() -> None:
    settings = Settings({"TRAWL_PLUGINS": "{}", "TRAWL_PLUGINS_DISABLED": "scope"})
    pm = plugin_manager_from_settings(settings)
    assert plugin_manager_from_settings(settings.copy()) is pm
    assert plugin_manager_from_settings(settings.frozencopy()) is pm  # what the spider loader gets
    crawler = Crawler(WaybackSpider, settings)
    assert PluginPipeline.from_crawler(crawler).plugins is pm
    other = plugin_manager_from_settings(Settings({"TRAWL_PLUGINS_DISABLED": "url_filter"}))
    assert other is not pm and other.has_plugin("scope") and not pm.has_plugin("scope")


COUNT_BUILDS = """
import sys
import trawl.pipeline.manager as pm
builds = []
build = pm.build_plugin_manager
pm.build_plugin_manager = lambda *a, **k: builds.append(1) or build(*a, **k)
from scrapy.cmdline import execute
try:
    execute(["scrapy", *sys.argv[1:]])
finally:
    sys.__stdout__.write(f"builds={len(builds)}\\n")
"""


@pytest.mark.parametrize("source", ["wayback", "all"])
def test_a_crawl_builds_its_plugin_manager_once(workdir: Path, server: FakeCdxServer, source: str) -> None:
    extra = ["-a", "sources=wayback"] if source == "all" else []
    args = crawl_args(source, "example.com", {"WAYBACK_BASE_URL": server.base_url, **FAST}, *extra)
    proc = processes.run(
        [sys.executable, "-c", COUNT_BUILDS, *args],
        cwd=workdir,
        env=dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings"),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-1] == "builds=1"
    assert server.requests  # it did crawl


# --- the marker -------------------------------------------------------------------------------


def test_hookimpl_is_importable_from_trawl_without_scrapy() -> None:
    from trawl.pipeline.manager import hookimpl

    assert trawl.hookimpl is hookimpl
    code = (
        "import sys, trawl; from trawl import hookimpl, hookspec;"
        " print(sorted({m.split('.')[0] for m in sys.modules} & {'scrapy', 'polars', 'twisted'}))"
    )
    out = processes.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- a third-party source with settings of its own -------------------------------------------------


def tiny_cdx(workdir: Path, server: FakeCdxServer, plugin_path: Path, **settings: object) -> CrawlResult:
    values = {"TINYCDX_BASE_URL": server.base_url, "TRAWL_LOG_ALL": "False", **settings}
    return run_scrapy(workdir, *crawl_args("tinycdx", "example.com", values), env=plugin_env(plugin_path))


def test_a_plugin_source_gets_its_declared_default(
    workdir: Path, server: FakeCdxServer, plugin_path: Path
) -> None:
    result = tiny_cdx(workdir, server, plugin_path, TRAWL_LOG_ALL="True", RATE_LIMITS_ENABLED="True")
    assert result.returncode == 0, result.stderr[-3000:]
    assert [dict(r.params).get("limit") for r in server.requests] == ["5"]
    # its declared budget is the gate's, as a built-in source's is
    assert "tinycdx: at most 10 requests per 1 s" in result.stderr


def test_a_plugin_source_setting_is_overridden_with_s(
    workdir: Path, server: FakeCdxServer, plugin_path: Path
) -> None:
    result = tiny_cdx(workdir, server, plugin_path, TINYCDX_LIMIT=2)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [dict(r.params).get("limit") for r in server.requests] == ["2"]


@pytest.mark.parametrize("source", ["tinycdx", "all"])
def test_a_bad_value_of_a_plugin_source_setting_is_one_line(
    workdir: Path, server: FakeCdxServer, plugin_path: Path, source: str
) -> None:
    values = {"TINYCDX_BASE_URL": server.base_url, "TRAWL_LOG_ALL": "False", "TINYCDX_LIMIT": "lots"}
    extra = ("-a", "sources=tinycdx") if source == "all" else ()
    args = crawl_args(source, "example.com", values, *extra)
    result = run_scrapy(workdir, *args, env=plugin_env(plugin_path))
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.splitlines() == [
        "trawl: error: TINYCDX_LIMIT must be a whole number from 1 to 1000, got 'lots'"
    ]
    assert server.requests == []


def test_a_plugin_source_setting_is_in_the_docs_test_view(plugin_path: Path) -> None:
    """tests/test_docs.py enumerates the registered components' settings: the plugin's are there."""
    code = "from tests.helpers.settings_doc import trawl_settings; print(' '.join(trawl_settings()))"
    env = dict(os.environ, **plugin_env(plugin_path))
    proc = processes.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    names = set(proc.stdout.split())
    assert {"TINYCDX_LIMIT", "TINYCDX_BASE_URL", "URLSCAN_PAGE_SIZE"} <= names
