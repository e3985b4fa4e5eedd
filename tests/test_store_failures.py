"""Store failures as an operator meets them: one line naming the cause, the summary and notification still.

``crawl all`` over four local fake upstreams into a store that cannot be used:
a file that is not SQLite, a damaged (truncated) store, a full disk (a small
tmpfs; skipped where this process may not mount one). Each must end with one
ERROR line that says the cause in an operator's words, no traceback, the
summary table, the notification sent, exit 1; and nothing committed lost.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.helpers import processes
from tests.servers.devdata import build_dataset
from tests.servers.devserver import crawl_arguments, crawl_settings, start_upstreams, trawl_executable
from tests.servers.receiver import FakeReceiver

SOURCES = ("wayback", "commoncrawl", "otx", "urlscan")


@pytest.fixture(scope="module")
def upstreams() -> Iterator[tuple[object, dict[str, object]]]:
    data = build_dataset(600, sources=SOURCES)
    with ExitStack() as stack:
        servers = start_upstreams(data, stack)
        yield data, crawl_settings(servers)


def crawl_all(
    upstreams: tuple[object, dict[str, object]], cwd: Path, store: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    data, settings = upstreams
    command = [trawl_executable(), "crawl", "all", *crawl_arguments(data)]  # type: ignore[arg-type]
    for name, value in {**settings, "STORE_URI": f"sqlite:///{store}"}.items():
        command += ["-s", f"{name}={value}"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return processes.run(
        [*command, *extra], cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False
    )


def error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if "ERROR" in line or line.startswith("trawl: error")]


def assert_one_cause(result: subprocess.CompletedProcess[str], cause: str) -> None:
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    errors = [line for line in error_lines(result) if "ERROR" in line]
    assert len(errors) == 1, errors
    assert cause in errors[0]
    assert "Dropped:" not in result.stderr  # no line a dropped batch
    assert "source " in result.stdout and "state" in result.stdout  # the summary table


def test_a_file_that_is_not_sqlite_is_one_line_and_the_run_still_reports(
    upstreams: tuple[object, dict[str, object]], tmp_path: Path
) -> None:
    store = tmp_path / "garbage.db"
    store.write_bytes(os.urandom(4096))
    with FakeReceiver() as receiver:
        result = crawl_all(
            upstreams,
            tmp_path,
            store,
            "-O",
            str(tmp_path / "out.txt"),
            "-s",
            f"NOTIFY_URLS={receiver.base_url}/hook",
        )
        bodies = receiver.bodies("/hook")
    assert_one_cause(result, "the file is not a SQLite database")
    # The export says in one line why there is none; no sqlite3.DatabaseError traceback.
    exports = [line for line in error_lines(result) if line.startswith("trawl: error")]
    assert exports == [
        f"trawl: error: cannot write the exports: cannot read the SQLite store {str(store)!r}:"
        " the file is not a SQLite database (SQLite: file is not a database)"
    ]
    assert not (tmp_path / "out.txt").exists()
    assert len(bodies) == 1  # the operator still hears of it


def test_a_damaged_store_is_named_as_such(
    upstreams: tuple[object, dict[str, object]], tmp_path: Path
) -> None:
    store = tmp_path / "trawl.db"
    assert crawl_all(upstreams, tmp_path, store).returncode == 0
    size = store.stat().st_size
    with store.open("r+b") as handle:
        handle.seek(size // 3)
        handle.write(os.urandom(size // 3))  # an editor, a bad copy: pages overwritten
    result = crawl_all(upstreams, tmp_path, store)
    assert_one_cause(result, "the store file is damaged")


def test_a_full_disk_says_so_once_and_keeps_what_was_committed(
    upstreams: tuple[object, dict[str, object]], small_disk: Path, tmp_path: Path
) -> None:
    store = small_disk / f"{uuid.uuid4().hex}.db"
    result = crawl_all(upstreams, tmp_path, store)
    assert_one_cause(result, "the disk is full (SQLite: database or disk is full)")
    assert "cannot rollback" not in result.stderr
    con = sqlite3.connect(store)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        kept = con.execute("SELECT count(*) FROM urls").fetchone()[0]
    finally:
        con.close()
    # Freed space (the store moved to a roomy folder, as an operator would): the rerun completes.
    roomy = tmp_path / "roomy.db"
    con = sqlite3.connect(store)
    try:
        con.execute("VACUUM INTO ?", (str(roomy),))
    finally:
        con.close()
    rerun = crawl_all(upstreams, tmp_path, roomy)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    con = sqlite3.connect(roomy)
    try:
        assert con.execute("SELECT count(*) FROM urls").fetchone()[0] >= kept
    finally:
        con.close()
