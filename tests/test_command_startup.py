"""Read commands import what they use, and the built-in sources' table names the real classes.

A read command's whole run is its start-up: importing every source (Scrapy's HTTP
handler, Twisted's TLS, polars), psycopg and prometheus_client to register them cost
``trawl list`` about 0.9 s of CPU of its 1.3 s, and Scrapy itself 0.25-0.3 s of a
0.5-0.7 s ``trawl search``. Each command here runs in a fresh interpreter (the fork
server's children have everything imported already) against a small SQLite store, and
the modules it imported are read at exit: a module import added on a read path fails
the test that names the command, not a benchmark later. A read command runs without
Scrapy (:mod:`trawl.readcommand`), so its help and settings are compared with Scrapy's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy import Spider
from scrapy.utils.misc import walk_modules_iter

from tests.helpers.imported import RUN_AND_LIST_MODULES
from tests.helpers.probe import seed
from trawl.readsettings import SETTINGS_PRIORITIES, project_settings
from trawl.sources.builtin import BUILTIN_RECORD_SOURCE_PATHS, BUILTIN_URL_SOURCES, SOURCES

#: No read command needs these: the crawl machinery, other stores' clients, the sources.
NEVER = (
    "scrapy.crawler",
    "scrapy.core.engine",
    "scrapy.core.downloader.handlers.http11",
    "twisted.internet.reactor",
    "psycopg",
    "redis",
    "elasticsearch",
    "pyarrow",
    "adbc_driver_manager",
    "prometheus_client",
    "yaml",
    *sorted({path.partition(":")[0] for path in SOURCES.paths.values()}),
)
#: Only a command that reads the store's records builds a polars frame.
NO_STORE = (*NEVER, "polars", "tldextract")
#: A read command is run without Scrapy (:mod:`trawl.readcommand`): Scrapy's package imports Twisted.
NO_SCRAPY = ("scrapy", "twisted", "scrapy.settings", "scrapy.commands")

URLS = ["https://example.com/", "https://example.com/login", "https://api.example.com/v1/users"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("startup")
    seed(folder / "trawl.db", URLS)
    return folder


def run(folder: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    out = folder / f"modules-{args[0]}.txt"
    env = dict(os.environ, MODULES_OUT=str(out), TRAWL_STORE_URI=f"sqlite:///{folder / 'trawl.db'}")
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    env.pop("TRAWL_REDIS_URL", None)
    result = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST_MODULES, *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return result, set(out.read_text().split())


def imported(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return [name for name in names if name in modules]


@pytest.mark.parametrize(
    ("args", "status", "says"),
    [
        (("version",), 0, "trawl "),
        (("list",), 0, "wayback\n"),
        (("plugins",), 0, "sources"),
    ],
)
def test_a_command_that_reads_no_store_imports_neither_sources_nor_polars(
    store: Path, args: tuple[str, ...], status: int, says: str
) -> None:
    result, modules = run(store, *args)
    assert result.returncode == status, result.stderr[-2000:]
    assert says in result.stdout
    assert imported(modules, NO_STORE) == []


@pytest.mark.parametrize(
    ("args", "status", "says"),
    [
        (("report", "new", "--domain", "example.com"), 1, "the store has no run for example.com"),
        (("endpoints", "-a", "domain=example.com"), 1, "no endpoints mined for example.com"),
        (("crates", "top"), 1, "holds no crates.io data"),
    ],
)
def test_a_command_that_reads_the_store_imports_no_source_and_no_other_store(
    store: Path, args: tuple[str, ...], status: int, says: str
) -> None:
    result, modules = run(store, *args)
    assert result.returncode == status, result.stderr[-2000:]
    assert says in result.stdout + result.stderr
    assert imported(modules, NEVER) == []


@pytest.fixture(scope="module")
def searched(store: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    return run(store, "search", "*", "--format", "txt")


def test_search_prints_the_stored_urls_without_importing_a_source(
    searched: tuple[subprocess.CompletedProcess[str], set[str]],
) -> None:
    result, modules = searched
    assert result.returncode == 0, result.stderr[-2000:]
    assert sorted(result.stdout.split()) == sorted(URLS)
    assert imported(modules, NEVER) == []


def test_search_does_not_import_polars(searched: tuple[subprocess.CompletedProcess[str], set[str]]) -> None:
    assert imported(searched[1], ("polars",)) == []


@pytest.mark.parametrize(
    ("args", "status", "says", "polars"),
    [
        (("version",), 0, "trawl ", False),
        (("plugins",), 0, "sources", False),
        (("search", "--help"), 0, "Global Options", False),
        (("search", "*", "--count"), 0, "3", False),
        (("queue",), 2, "TRAWL_REDIS_URL is not set", False),
        (("report", "new", "--domain", "example.com"), 1, "the store has no run for example.com", True),
        (("endpoints", "-a", "domain=example.com"), 1, "no endpoints mined for example.com", True),
        (("params", "-a", "domain=example.com"), 1, "no parameter names mined for example.com", True),
        (("responses", "list", "-a", "domain=example.com"), 1, "no stored responses for example.com", True),
        (("crates", "top"), 1, "holds no crates.io data", True),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else None,
)
def test_a_read_command_answers_without_importing_scrapy(
    store: Path, args: tuple[str, ...], status: int, says: str, polars: bool
) -> None:
    """Only the commands that read the store's records into frames import polars."""
    result, modules = run(store, *args)
    assert result.returncode == status, result.stderr[-2000:]
    assert says in result.stdout + result.stderr
    assert imported(modules, NO_SCRAPY) == []
    assert ("polars" in modules) is polars


def scrapy_command_line(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m scrapy ARGS`` in trawl's project: Scrapy's own command line, its walk of the commands."""
    env = dict(
        os.environ,
        SCRAPY_SETTINGS_MODULE="trawl.settings",
        TRAWL_STORE_URI=f"sqlite:///{folder / 'trawl.db'}",
    )
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("command", ["search", "report"])
def test_a_read_commands_help_is_the_one_scrapys_command_line_prints(store: Path, command: str) -> None:
    """Same usage, description, options and headings as Scrapy's formatter makes; ``trawl`` for ``scrapy``."""
    scrapys = scrapy_command_line(store, command, "--help")
    assert scrapys.returncode == 0, scrapys.stderr[-2000:]
    result, modules = run(store, command, "--help")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == scrapys.stdout.replace(f"scrapy {command} ", f"trawl {command} ")
    assert imported(modules, NO_SCRAPY) == []


def test_scrapys_command_line_still_runs_a_read_command(store: Path) -> None:
    """scrapyd and ``python -m scrapy`` use Scrapy's command line: it finds the read commands, runs them."""
    listed = scrapy_command_line(store)
    assert "  search " in listed.stdout and "  report " in listed.stdout, listed.stdout
    result = scrapy_command_line(store, "search", "*")
    assert result.returncode == 0, result.stderr[-2000:]
    assert sorted(result.stdout.split()) == sorted(URLS)
    refused = scrapy_command_line(store, "search")
    assert refused.returncode == 2
    assert "error: give a query" in refused.stderr


def test_the_settings_a_read_command_reads_are_scrapys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every setting, its value and its priority as :func:`get_project_settings` has them."""
    from scrapy.settings import SETTINGS_PRIORITIES as SCRAPYS_PRIORITIES
    from scrapy.settings import BaseSettings
    from scrapy.utils.project import get_project_settings

    monkeypatch.setenv("SCRAPY_SETTINGS_MODULE", "trawl.settings")
    monkeypatch.setenv("SCRAPY_PROJECT", "default")
    assert SETTINGS_PRIORITIES == SCRAPYS_PRIORITIES
    ours, theirs = project_settings(), get_project_settings()
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        value = theirs[name]
        expected = value.copy_to_dict() if isinstance(value, BaseSettings) else value
        assert (name, ours[name]) == (name, expected)
        assert (name, ours.getpriority(name)) == (name, theirs.getpriority(name))


def test_the_built_in_sources_table_names_each_source_by_its_own_name() -> None:
    assert set(SOURCES) == {*BUILTIN_URL_SOURCES, *BUILTIN_RECORD_SOURCE_PATHS}
    assert not set(BUILTIN_URL_SOURCES) & set(BUILTIN_RECORD_SOURCE_PATHS)
    for name in SOURCES:
        assert issubclass(SOURCES[name], Spider)
        assert SOURCES[name].name == name


def test_every_source_class_in_trawl_is_in_the_table() -> None:
    """A new source module must be added to the table, or no crawl can name it."""
    found = {
        obj.name: f"{obj.__module__}:{obj.__qualname__}"
        for module in walk_modules_iter("trawl.sources")
        for obj in vars(module).values()
        if isinstance(obj, type)
        and issubclass(obj, Spider)
        and obj.__module__ == module.__name__
        and isinstance(getattr(obj, "name", None), str)
        and obj.name != "all"
    }
    assert found == SOURCES.paths
