"""``kill -9`` of a responses run whose mining pool has started leaves none of the pool's processes.

A worker busy with a file reads its requests' pipe (whose end of file would
tell it the crawl is gone) only once done; it must end at once all the same.
The processes are found the way a user would find them with ``ps``: by the
crawl's tree of pids and parent pids and the worker's command line, recorded
before the kill (a process whose parent died is adopted by another).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import TEST_DEFAULTS, crawl_args
from tests.servers.ia_replay import FakeReplayServer
from trawl.mining.pool import IN_PROCESS_BYTES

DEADLINE = 30.0  # seconds; a ceiling for polling, never a wait
GONE_WITHIN = 5.0  # seconds from the kill to the last process of the pool gone


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state letter) of every process, read from /proc."""
    table: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # ended while listed
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), fields[0])
    return table


def command_line(pid: int) -> bytes:
    """A process's command line (empty once it has ended)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def descendants(roots: set[int], table: dict[int, tuple[int, str]]) -> set[int]:
    """Every process below ``roots`` in the tree (the roots excluded)."""
    found: set[int] = set()
    frontier = set(roots)
    while frontier:
        frontier = {pid for pid, (ppid, _) in table.items() if ppid in frontier} - found
        found |= frontier
    return found


def running(pids: set[int], table: dict[int, tuple[int, str]]) -> set[int]:
    """Those of ``pids`` that have not ended (a zombie has)."""
    return {pid for pid in pids if pid in table and table[pid][1] != "Z"}


def test_kill_9_of_the_crawl_ends_the_mining_pool(workdir: Path, tmp_path: Path) -> None:
    saved = tmp_path / "waymore" / "example.com"
    saved.mkdir(parents=True)
    line = b'var u = "/api/v9/big";\n'
    (saved / "1234.js").write_bytes(line * (IN_PROCESS_BYTES // len(line) + 2))  # past it: the pool
    (saved / "index.txt").write_text(
        "1234,https://web.archive.org/web/20210101000000id_/https://example.com/app.js,2024-01-01\n"
    )
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
    env.pop("SCRAPY_PROJECT", None)
    with FakeReplayServer() as server:
        given = {"WAYBACK_BASE_URL": server.base_url, "FILES_STORE": str(workdir / "files")}
        args = crawl_args("responses", "example.com", {**TEST_DEFAULTS, **given, "MINING_PROCESSES": 2})
        proc = subprocess.Popen(
            [sys.executable, "-m", "scrapy", *args, "-a", f"files={saved}"],
            cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        pool: set[int] = set()
        try:
            deadline = time.monotonic() + DEADLINE
            while True:  # until a worker runs: a process below the crawl running trawl.mining.worker
                table = process_table()
                below = descendants({proc.pid}, table)
                if any(b"trawl.mining.worker" in command_line(pid) for pid in below):
                    pool = below
                    break
                assert proc.poll() is None, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
                assert time.monotonic() < deadline, "the mining pool never started"
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(timeout=10) == -signal.SIGKILL
            killed = time.monotonic()
            while True:
                table = process_table()
                pool |= descendants(running(pool, table), table)  # a worker started as the crawl died
                left = running(pool, table)
                if not left or time.monotonic() - killed > GONE_WITHIN:
                    break
                time.sleep(0.05)
            assert not left, f"still running {time.monotonic() - killed:.1f} s after kill -9: {sorted(left)}"
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for pid in running(pool, process_table()):  # a failed test leaves nothing behind
                os.kill(pid, signal.SIGKILL)
            if proc.stderr is not None:
                proc.stderr.close()
