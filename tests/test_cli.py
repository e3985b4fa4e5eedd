"""The ``trawl`` console command, run from a directory outside the project.

Each documented command goes through the console script installed in the
virtualenv's ``bin`` (``[project.scripts]``), with no ``SCRAPY_SETTINGS_MODULE``
and no ``scrapy.cfg`` around: what a user of a pip-installed trawl types. On
the code before ``trawl.cli`` there was no such script, and ``scrapy search``
run from there said "Unknown command: search".
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import scrapy

from tests.conftest import ROOT
from tests.helpers import processes
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.kibana import FakeKibana
from tests.servers.otx import FakeOtxServer, OtxUrl
from trawl import __version__ as trawl_version

TRAWL = Path(sys.executable).parent / "trawl"
URLS = {"https://example.com/", "https://example.com/login", "https://api.example.com/v1/users"}
FAST = ("-s", "RATE_LIMITS_ENABLED=False", "-s", "AUTOTHROTTLE_ENABLED=False")
HYPHENATED = ("es-replay", "kibana-setup")


def outside_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT"):
        env.pop(name, None)
    if env.get("PYTHONPATH") != str(ROOT):  # kept only to test this checkout's code, not the installed one
        env.pop("PYTHONPATH", None)
    return env


def trawl(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return processes.run(
        [str(TRAWL), *args],
        cwd=cwd,
        env=outside_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory that is not the project and has no scrapy.cfg above it."""
    path = tmp_path / "elsewhere"
    path.mkdir()
    assert ROOT not in path.parents and not any((p / "scrapy.cfg").exists() for p in [path, *path.parents])
    return path


@pytest.fixture(scope="module")
def wayback() -> Iterator[FakeCdxServer]:
    with FakeCdxServer([make_capture(url, "20200101000000") for url in sorted(URLS)]) as srv:
        yield srv


def listed_commands(help_text: str) -> list[str]:
    return re.findall(r"^  (\S+)\s{2,}\S", help_text, flags=re.MULTILINE)


def test_the_console_script_is_installed() -> None:
    assert TRAWL.is_file() and os.access(TRAWL, os.X_OK), f"{TRAWL}: reinstall with pip install -e ."


def test_help_lists_every_command_once(outside: Path) -> None:
    result = trawl(outside, "-h")
    assert result.returncode == 0, result.stderr
    assert "active project: trawl" in result.stdout
    commands = listed_commands(result.stdout)
    assert {"crawl", "search", "report", "schedule", "plugins", "list", *HYPHENATED} <= set(commands)
    assert len(commands) == len(set(commands))
    assert "es_replay" not in commands and "kibana_setup" not in commands


def test_help_usage_and_errors_say_trawl(outside: Path) -> None:
    """Users type ``trawl``: help, usage and errors say ``trawl <command>``, not ``scrapy``; no genspider."""
    result = trawl(outside, "-h")
    assert result.stdout.startswith(
        f"trawl {trawl_version} (Scrapy {scrapy.__version__}) - active project: trawl"
    )
    assert "\n  trawl <command> [options] [args]\n" in result.stdout
    assert "scrapy <command>" not in result.stdout and "scrapy crawl" not in result.stdout
    assert not set(listed_commands(result.stdout)) & {
        "genspider",
        "startproject",
        "bench",
        "runspider",
        "shell",
    }
    nothing = trawl(outside, "crawl", "-a", "domain=example.com")
    assert nothing.returncode == 2
    assert "  trawl crawl [options] <spider>" in nothing.stderr
    assert nothing.stderr.endswith(
        "\ntrawl: error: give exactly one source to crawl, e.g. trawl crawl wayback\n"
    )
    unknown = trawl(outside, "crawls")
    assert unknown.returncode == 2 and 'Use "trawl -h" to see available commands' in unknown.stdout
    version = trawl(outside, "version")
    assert (version.returncode, version.stdout) == (
        0,
        f"trawl {trawl_version} (Scrapy {scrapy.__version__})\n",
    )
    verbose = trawl(outside, "version", "-v")
    assert [line.split() for line in verbose.stdout.splitlines()[:2]] == [
        ["trawl", ":", trawl_version],
        ["Scrapy", ":", scrapy.__version__],
    ]


def test_scrapy_inside_the_project_keeps_working() -> None:
    env = outside_env()
    listed = processes.run(
        [sys.executable, "-m", "scrapy", "list"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    assert {"all", "wayback", "otx"} <= set(listed.stdout.split())
    helped = processes.run(
        [sys.executable, "-m", "scrapy", "-h"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    commands = listed_commands(helped.stdout)
    assert all(commands.count(name) == 1 for name in HYPHENATED), helped.stdout
    assert "es_replay" not in commands and "kibana_setup" not in commands


def test_crawl_then_search_from_elsewhere(outside: Path, wayback: FakeCdxServer) -> None:
    base = ("-s", f"WAYBACK_BASE_URL={wayback.base_url}", *FAST)
    crawl = trawl(outside, "crawl", "wayback", "-a", "domain=example.com", *base, "-o", "urls.txt")
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    assert set((outside / "urls.txt").read_text().split()) == URLS
    assert f"INFO: store: sqlite:///{outside.resolve() / 'trawl.db'}" in crawl.stderr
    assert "wayback: complete (finished)" in crawl.stderr

    found = trawl(outside, "search", "*", "--format", "txt")
    assert found.returncode == 0, found.stderr
    assert set(found.stdout.split()) == URLS
    counted = trawl(outside, "search", "host:api.example.com", "--count", "--store", "sqlite:///trawl.db")
    assert (counted.returncode, counted.stdout.strip()) == (0, "1")

    report = trawl(outside, "report", "new", "--domain", "example.com")
    assert report.returncode == 0, report.stderr
    assert set(report.stdout.split()) == URLS
    assert report.stderr.startswith("trawl: 3 new URLs for example.com in the last crawl (job ")

    unknown = trawl(outside, "crawl", "nope", "-a", "domain=example.com")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("trawl: error: unknown source 'nope' (known: ")


def test_crawl_all_from_elsewhere(outside: Path, wayback: FakeCdxServer) -> None:
    with FakeOtxServer(urls=[OtxUrl("https://example.com/only-otx", "2021-01-01T00:00:00")]) as otx:
        result = trawl(
            outside,
            "crawl", "all", "-a", "domain=example.com", "-a", "sources=wayback,otx",
            "-s", f"WAYBACK_BASE_URL={wayback.base_url}", "-s", f"OTX_BASE_URL={otx.base_url}",
            *FAST, "-o", "all.txt",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {line.split()[0]: line.split()[-1] for line in result.stdout.splitlines()[2:] if line.strip()}
    assert rows == {"wayback": "complete", "otx": "complete"}
    assert set((outside / "all.txt").read_text().split()) == URLS | {"https://example.com/only-otx"}


def test_list_plugins_settings_and_version_from_elsewhere(outside: Path) -> None:
    listed = trawl(outside, "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == [
        "all",
        "commoncrawl",
        "crates",
        "ghostarchive",
        "intelx",
        "live",
        "otx",
        "probe",
        "responses",
        "urlscan",
        "virustotal",
        "wayback",
    ]
    plugins = trawl(outside, "plugins")
    assert plugins.returncode == 0, plugins.stderr
    assert {"dedup", "normalizer", "sources", "sqlite_store", "url_filter"} <= {
        line.split()[0] for line in plugins.stdout.splitlines()
    }
    disabled = trawl(outside, "plugins", "-s", "TRAWL_PLUGINS_DISABLED=dedup")
    assert disabled.returncode == 2 and disabled.stderr.startswith("trawl: error: TRAWL_PLUGINS_DISABLED")
    setting = trawl(outside, "settings", "--get", "STORE_URI")
    assert (setting.returncode, setting.stdout.strip()) == (0, "sqlite:///trawl.db")  # trawl's settings


def test_es_replay_and_kibana_setup_from_elsewhere(outside: Path) -> None:
    nothing = trawl(outside, "es-replay", "-s", "STORE_URI=elasticsearch://127.0.0.1:9")
    assert nothing.returncode == 0, nothing.stderr
    assert nothing.stdout.strip() == "no dead letters (trawl-es-dead-letters.ndjson does not exist)"
    wrong = trawl(outside, "es-replay")  # STORE_URI is trawl's default, SQLite
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("trawl: error: es-replay writes to an Elasticsearch store")
    with FakeKibana() as kibana:
        imported = trawl(outside, "kibana-setup", "--kibana-url", kibana.url)
    assert imported.returncode == 0, imported.stderr
    assert re.fullmatch(rf"imported \d+ saved objects into {re.escape(kibana.url)}", imported.stdout.strip())
    assert len(kibana.imports) == 1
    gone = trawl(outside, "kibana_setup", "--kibana-url", "http://127.0.0.1:9")
    assert gone.returncode == 2 and "Unknown command: kibana_setup" in gone.stdout
