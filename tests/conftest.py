"""Shared test helpers: run ``scrapy crawl`` as a user would, and read what it left.

Crawls run in a subprocess, in a fresh project directory, with trawl's settings
module: exit status, stderr and the files written are exactly what a user sees.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

#: The shared helpers' asserts explain a failure as a test module's do (registered before their import).
pytest.register_assert_rewrite("tests.helpers")

from tests.helpers import processes  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: Never the user's own store: trawl's default is ~/.local/share/trawl/trawl.db (trawl.stores.location),
#: shared by every run. Every crawl a test starts (any subprocess) stores into ``trawl.db`` in its
#: working directory instead, and the data directory is a fresh one; the tests of the default
#: itself (tests/test_scrapyd.py) unset TRAWL_STORE_URI for the runs they start.
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="trawl-tests-data-")
atexit.register(shutil.rmtree, os.environ["XDG_DATA_HOME"], ignore_errors=True)
os.environ["TRAWL_STORE_URI"] = "sqlite:///trawl.db"


@dataclass
class CrawlResult:
    returncode: int
    stdout: str
    stderr: str
    workdir: Path

    @property
    def log(self) -> str:
        return self.stderr

    def lines(self, name: str) -> list[str]:
        return (self.workdir / name).read_text(encoding="utf-8").splitlines()

    def db_path(self, name: str = "trawl.db") -> Path:
        return self.workdir / name

    def stored(self, name: str = "trawl.db") -> dict[str, dict]:
        """Stored URL rows by URL."""
        with sqlite3.connect(self.db_path(name)) as con:
            con.row_factory = sqlite3.Row
            return {row["url"]: dict(row) for row in con.execute("SELECT * FROM urls")}

    def stat(self, name: str) -> str | None:
        """A value from Scrapy's final stats dump (as printed)."""
        key = f"'{name}': "
        for line in self.stderr.splitlines():
            line = line.strip()
            if line.startswith(key):
                return line[len(key) :].rstrip("},").strip("'")
        return None

    @property
    def errors(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if "] ERROR:" in line]


#: Politeness is off unless a test asks for it: local servers need no pacing, and
#: the real budgets (60 requests a minute...) would make the suite crawl.
FAST = {"RATE_LIMITS_ENABLED": "False", "AUTOTHROTTLE_ENABLED": "False"}
#: Scrapy's own INFO lines (the stats dump :meth:`CrawlResult.stat` reads) stay on the console
#: unless a test sets ``TRAWL_LOG_ALL=False`` to see trawl's default console.
TEST_DEFAULTS = {**FAST, "TRAWL_LOG_ALL": "True"}


def run_scrapy(workdir: Path, *args: str, timeout: float = 120, env: dict | None = None) -> CrawlResult:
    workdir.mkdir(parents=True, exist_ok=True)
    if args and args[0] == "crawl":
        given = " ".join(args)
        args = tuple(args) + tuple(
            arg
            for name, value in TEST_DEFAULTS.items()
            if f"{name}=" not in given
            for arg in ("-s", f"{name}={value}")
        )
    full_env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings", **(env or {}))
    full_env.pop("SCRAPY_PROJECT", None)
    proc = processes.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=workdir,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return CrawlResult(proc.returncode, proc.stdout, proc.stderr, workdir)


def crawl_args(source: str, domain: str | None, settings: dict[str, object], *extra: str) -> list[str]:
    args = ["crawl", source]
    if domain is not None:
        args += ["-a", f"domain={domain}"]
    for key, value in settings.items():
        args += ["-s", f"{key}={value}"]
    return args + list(extra)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def assert_no_traceback(result: CrawlResult) -> None:
    assert "Traceback" not in result.stderr, result.stderr[-3000:]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: left out of make check (tests/helpers/slowlist.py)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests.helpers.slowlist import is_slow, listed

    slow = listed()
    for item in items:
        if is_slow(item.nodeid, slow):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 300 KB tmpfs: room for the schema and a page or two, then SQLITE_FULL."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = processes.run(
        ["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mount)], capture_output=True, check=False
    )
    if made.returncode:
        pytest.skip(f"cannot mount a small tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        processes.run(["umount", str(mount)], check=False)
