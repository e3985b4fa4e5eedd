"""What trawl leaves on disk: private files and folders, and no empty export from a failed run.

The faults guarded against: a store under a custom ``STORE_URI``, ``LOG_FILE`` and the
exports were created 0644 (the default store's folder was 0700), and a failed
crawl with ``-O`` to a new path left a 0-byte file. Each test runs the real
command against a local fake server, started under a shell's usual umask
(022) unless it says otherwise, and reads the modes with ``os.stat``.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import TEST_DEFAULTS, assert_no_traceback, crawl_args
from tests.helpers.crawl_all import crawl_all
from tests.helpers.exports import DOWN, leftovers
from tests.helpers.wayback import FILTERED_IN, captures, crawl
from tests.servers.ia_cdx import FakeCdxServer

#: A shell's usual umask: what trawl ran under before, and created 0644 files with.
SHELL_UMASK = 0o022


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def scrapy(workdir: Path, *args: str, umask: int = SHELL_UMASK) -> subprocess.Popen[str]:
    """``scrapy ARGS`` started as a user would, under ``umask``; crawls get the tests' defaults."""
    if args[0] == "crawl":
        args = (*args, *(arg for name, value in TEST_DEFAULTS.items() for arg in ("-s", f"{name}={value}")))
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
    env.pop("SCRAPY_PROJECT", None)
    return subprocess.Popen(
        [sys.executable, "-m", "scrapy", *args],
        cwd=workdir,
        env=env,
        umask=umask,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def modes_while_running(process: subprocess.Popen[str], *paths: Path) -> dict[str, int]:
    """The modes of ``paths`` as soon as they all exist, polled while the process runs.

    SQLite removes ``-wal`` and ``-shm`` when the last connection closes: they
    are only seen during the run.
    """
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            return {path.name: mode(path) for path in paths}
        except FileNotFoundError:
            if process.poll() is not None:
                break
            time.sleep(0.01)
    process.kill()
    raise AssertionError(
        f"never saw {[p.name for p in paths]} while the crawl ran: {process.communicate()[1][-3000:]}"
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    _, stderr = process.communicate(timeout=120)
    return process.returncode, stderr


def tree_modes(root: Path) -> dict[str, int]:
    """Every file and folder under ``root`` (itself included), by path relative to its parent."""
    found = {root.name: mode(root)}
    for path in root.rglob("*"):
        found[str(path.relative_to(root.parent))] = mode(path)
    return found


# --- item 1: private files and folders ---------------------------------------------------------


def test_every_file_a_crawl_and_a_report_create_is_private(workdir: Path) -> None:
    (workdir / "data").mkdir()  # STORE_URI names a file in an existing folder
    store = workdir / "data" / "store.db"
    settings = {
        "STORE_URI": "sqlite:///data/store.db",
        "LOG_FILE": "trawl.log",
        "JOBDIR": "jobs",
        "RETRY_TIMES": 1,
    }
    with FakeCdxServer(captures(), lines_per_page=3, latency=0.3) as server:
        process = scrapy(
            workdir,
            *crawl_args("wayback", "example.com", {"WAYBACK_BASE_URL": server.base_url, **settings}),
            "-O", "out/urls.txt", "-O", "urls.jsonl",
        )  # fmt: skip
        during = modes_while_running(
            process, store.with_name("store.db-wal"), store.with_name("store.db-shm")
        )
        status, stderr = finish(process)
    assert status == 0, stderr[-3000:]
    assert during == {"store.db-wal": 0o600, "store.db-shm": 0o600}
    assert set((workdir / "out" / "urls.txt").read_text().splitlines()) == FILTERED_IN
    assert mode(store) == 0o600
    assert mode(workdir / "trawl.log") == 0o600
    assert tree_modes(workdir / "out") == {"out": 0o700, "out/urls.txt": 0o600}
    assert mode(workdir / "urls.jsonl") == 0o600
    assert tree_modes(workdir / "jobs") == {"jobs": 0o700, "jobs/trawl-wayback.json": 0o600}
    assert mode(workdir / "data") == 0o755  # a folder that was there keeps its mode

    report = scrapy(
        workdir, "report", "new", "--domain", "example.com", "-o", "reports/new.txt",
        "-s", "STORE_URI=sqlite:///data/store.db",
    )  # fmt: skip
    status, stderr = finish(report)
    assert status == 0, stderr
    assert set((workdir / "reports" / "new.txt").read_text().splitlines()) == FILTERED_IN
    assert tree_modes(workdir / "reports") == {"reports": 0o700, "reports/new.txt": 0o600}


def test_umask_setting_opens_them_up_and_existing_files_keep_their_mode(workdir: Path) -> None:
    (workdir / "trawl.log").write_text("an earlier run\n")
    (workdir / "trawl.log").chmod(0o640)
    (workdir / "urls.txt").write_text("https://example.com/old\n")
    (workdir / "urls.txt").chmod(0o604)
    (workdir / "new.txt").write_text("yesterday\n")
    (workdir / "new.txt").chmod(0o640)
    with FakeCdxServer(captures(), lines_per_page=3) as server:
        # started under a strict umask: UMASK=022 is what decides
        process = scrapy(
            workdir,
            *crawl_args("wayback", "example.com", {"WAYBACK_BASE_URL": server.base_url, "UMASK": "022"}),
            "-s", "LOG_FILE=trawl.log", "-O", "urls.txt", "-O", "shared/urls.csv",
            umask=0o077,
        )  # fmt: skip
        status, stderr = finish(process)
    assert status == 0, stderr[-3000:]
    assert mode(workdir / "trawl.db") == 0o644
    assert tree_modes(workdir / "shared") == {"shared": 0o755, "shared/urls.csv": 0o644}
    assert mode(workdir / "trawl.log") == 0o640  # appended to, its mode kept
    assert set((workdir / "urls.txt").read_text().splitlines()) == FILTERED_IN  # replaced by -O ...
    assert mode(workdir / "urls.txt") == 0o604  # ... with the old file's mode
    report = scrapy(workdir, "report", "new", "--domain", "example.com", "-o", "new.txt", umask=0o077)
    status, stderr = finish(report)
    assert status == 0, stderr
    assert mode(workdir / "new.txt") == 0o640  # a report rewritten keeps its mode too


def test_a_bad_umask_is_one_line(workdir: Path) -> None:
    process = scrapy(
        workdir, *crawl_args("wayback", "example.com", {"WAYBACK_BASE_URL": DOWN, "UMASK": "999"})
    )
    status, stderr = finish(process)
    assert status == 2
    assert stderr.splitlines() == [
        "trawl: error: UMASK must be an octal umask such as 077 or 022, or empty to keep the inherited one,"
        " got '999'"
    ]


# --- item 2: a failed -O leaves no empty file ------------------------------------------------------


def test_a_failed_crawl_leaves_no_empty_export(workdir: Path) -> None:
    down = crawl(workdir, None, "-O", "new.txt", "-O", "new.csv", base_url=DOWN)
    assert_no_traceback(down)
    assert down.returncode == 1
    assert sorted(path.name for path in workdir.iterdir() if path.name.startswith(("new", ".new"))) == []
    assert "new.txt not written: this run failed and exported no URL" in down.stderr
    assert "new.csv not written: this run failed and exported no URL" in down.stderr

    # crawl all exports from the store: an empty store and failed sources leave no file either
    failed = crawl_all(
        workdir, "-a", "sources=wayback,otx", "-O", "all.txt",
        settings={"WAYBACK_BASE_URL": DOWN, "OTX_BASE_URL": DOWN, "RETRY_TIMES": 0},
    )  # fmt: skip
    assert_no_traceback(failed)
    assert failed.returncode == 1
    assert not (workdir / "all.txt").exists()
    assert "all.txt not written: this run failed and exported no URL" in failed.stderr
    assert leftovers(workdir) == []


def test_a_complete_crawl_with_no_url_still_creates_the_file(workdir: Path) -> None:
    with FakeCdxServer([], lines_per_page=3) as server:
        empty = crawl(workdir, server, "-O", "none.txt")
    assert empty.returncode == 0, empty.stderr[-3000:]
    assert (workdir / "none.txt").read_bytes() == b""  # the domain has nothing: said by an empty file
