"""An unwritable ``FILES_STORE`` is one ERROR line naming the folder, never a traceback a file.

A read-only ``FILES_STORE`` printed one traceback per file (485 stderr lines), a full one
17 tracebacks and a summary saying ``0 failed`` beside ``17 errors``. Each test mounts a
small tmpfs (the tests run as root; they skip where mounting is refused) and runs
``trawl crawl responses`` against the local Wayback replay.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.servers.ia_replay import FakeReplayServer


@contextmanager
def tmpfs(folder: Path, *options: str) -> Iterator[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0 or os.geteuid() != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def archive(files: int, size: int) -> FakeReplayServer:
    server = FakeReplayServer()
    for n in range(files):
        body = (b"var api = '/api/v%d/items';\n" % n).ljust(size, b" ")
        server.archive(f"https://example.com/f{n}.js", "20200101000000", body)
    return server


def crawl(workdir: Path, server: FakeReplayServer, files_store: Path) -> CrawlResult:
    stored = run_scrapy(
        workdir,
        *crawl_args("wayback", "example.com", {"WAYBACK_BASE_URL": server.base_url}, "-a", "filters=false"),
    )
    assert stored.returncode == 0, stored.stderr[-3000:]
    given = {"WAYBACK_BASE_URL": server.base_url, "FILES_STORE": str(files_store)}
    return run_scrapy(workdir, *crawl_args("responses", "example.com", given, "-a", "mine=false"))


def errors_naming(result: CrawlResult, folder: Path) -> list[str]:
    return [line for line in result.errors if str(folder) in line]


def test_a_read_only_files_store_is_one_line_naming_it(workdir: Path, tmp_path: Path) -> None:
    with archive(40, 100) as server, tmpfs(tmp_path / "ro", "ro", "size=1m") as folder:
        result = crawl(workdir, server, folder)
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr[-3000:]
    assert len(result.errors) == 1, result.errors
    [line] = errors_naming(result, folder)
    assert "Read-only file system" in line, line
    assert result.stat("trawl/outcome") != "complete"


def test_a_full_files_store_is_one_line_and_the_summary_counts_it(workdir: Path, tmp_path: Path) -> None:
    with archive(40, 20_000) as server, tmpfs(tmp_path / "full", "size=64k") as folder:
        result = crawl(workdir, server, folder)
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr[-3000:]
    assert len(result.errors) == 1, result.errors
    [line] = errors_naming(result, folder)
    assert "No space left on device" in line, line
    assert " 0 failed" not in result.stderr, result.stderr[-3000:]
    # What was written before the disk filled is a whole file each, and indexed.
    written = [p for p in folder.rglob("*") if p.is_file()]
    assert all(not p.name.endswith(".part") for p in written), written
