"""Read commands on a store that is not there, or that holds none of what was asked: one line, never nothing.

A path with a typo used to give an empty answer and exit 0 in a pipe from
``trawl endpoints``, ``params``, ``responses list`` and ``crates top`` (``search``
and ``report`` said ``no SQLite store at ...``); ``crates top`` on a store with
no crates data printed nothing. Each now ends as ``search`` does: one
``trawl: error:`` line naming the path or what is missing, exit 1, nothing on
standard output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import processes
from tests.helpers.probe import seed

READERS = {
    "search": ["search", "*"],
    "report": ["report", "new", "--domain", "example.com"],
    "endpoints": ["endpoints", "-a", "domain=example.com"],
    "endpoints-history": ["endpoints", "--history", "https://example.com/app.js"],
    "params": ["params", "-a", "domain=example.com"],
    "responses": ["responses", "list", "-a", "domain=example.com"],
    "crates": ["crates", "top"],
}


def trawl(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``trawl ARGS`` as a user runs it, in a pipe (standard output is not a terminal)."""
    env = dict(os.environ)
    env.pop("STORE_URI", None)
    return processes.run(
        [sys.executable, "-m", "trawl.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.parametrize("command", list(READERS), ids=list(READERS))
def test_a_store_path_with_a_typo_is_one_line_naming_it(tmp_path: Path, command: str) -> None:
    seed(tmp_path / "trawl.db", ["https://example.com/a"])
    result = trawl(tmp_path, *READERS[command], "--store", "sqlite:///trawl.bd")
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "trawl: error: no SQLite store at 'trawl.bd' (run a crawl first, or set STORE_URI)"
    ]
    assert not (tmp_path / "trawl.bd").exists()  # reading never creates a store


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("endpoints", "no endpoints mined for example.com in the store sqlite:///trawl.db"
                      " (trawl crawl responses -a domain=example.com mines them)"),
        ("params", "no parameter names mined for example.com in the store sqlite:///trawl.db"
                   " (trawl crawl responses -a domain=example.com mines them)"),
        ("responses", "no stored responses for example.com in the store sqlite:///trawl.db"
                      " (trawl crawl responses -a domain=example.com stores them)"),
        ("crates", "the store sqlite:///trawl.db holds no crates.io data (load it: trawl crawl crates)"),
    ],
    ids=["endpoints", "params", "responses", "crates"],
)  # fmt: skip
def test_a_store_without_what_was_asked_says_so_in_one_line(tmp_path: Path, command: str, said: str) -> None:
    seed(tmp_path / "trawl.db", ["https://example.com/a", "https://example.com/b.js"])
    result = trawl(tmp_path, *READERS[command], "--store", "sqlite:///trawl.db")
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [f"trawl: error: {said}"]


def test_an_unknown_responses_subcommand_is_named(tmp_path: Path) -> None:
    result = trawl(tmp_path, "responses", "lst")
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["trawl: error: unknown subcommand 'lst' (trawl responses list)"]
