"""``python -m tests.servers``: the dev server's printed command crawls all seven fakes, exactly."""

from __future__ import annotations

import os
import queue
import runpy
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers import processes

TRAWL = Path(sys.executable).parent / "trawl"
READY_WITHIN = 30.0


class DevServer:
    """``python -m tests.servers ARGS`` as a subprocess; its output (stderr included) line by line."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.servers", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, prefix: str, timeout: float = READY_WITHIN) -> str:
        """The first line starting with ``prefix`` (every line read is kept in ``lines``)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no {prefix!r} line in {timeout:g} s: {self.lines}") from None
            if line is None:
                raise AssertionError(f"the dev server ended before {prefix!r}: {self.lines}")
            self.lines.append(line)
            if line.startswith(prefix):
                return line

    def rest(self) -> list[str]:
        """Every line after the process ended."""
        self.process.wait(timeout=15)
        while (line := self._queue.get(timeout=5)) is not None:
            self.lines.append(line)
        return self.lines

    def crawl_command(self) -> list[str]:
        """The printed ``trawl crawl all ... \\`` lines, as an argument list."""
        start = next(i for i, line in enumerate(self.lines) if line.startswith(f"{TRAWL} crawl all "))
        end = next(i for i in range(start, len(self.lines)) if not self.lines[i].endswith("\\"))
        return shlex.split(" ".join(line.rstrip("\\") for line in self.lines[start : end + 1]))


@pytest.fixture
def dev_server(tmp_path: Path) -> Iterator[DevServer]:
    server = DevServer(
        "--urls",
        "500",
        "--expected",
        str(tmp_path / "expected.txt"),
        "--settings-file",
        str(tmp_path / "dev_settings.py"),
    )
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()


def outside_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_") and k != "PYTHONPATH"}
    if os.environ.get("PYTHONPATH") == str(ROOT):  # this checkout's code under test, not the installed one
        extra = {**extra, "PYTHONPATH": os.pathsep.join(filter(None, [extra.get("PYTHONPATH"), str(ROOT)]))}
    return {**env, **extra}


def test_the_printed_command_crawls_every_upstream_exactly(dev_server: DevServer, tmp_path: Path) -> None:
    assert dev_server.wait_for("ready: ") == "ready: 12 servers for example.com (Ctrl-C stops them)"
    command = dev_server.crawl_command()
    assert command[:3] == [str(TRAWL), "crawl", "all"]  # a bare trawl: not on PATH outside the venv
    workdir = tmp_path / "crawl"
    workdir.mkdir()
    crawl = processes.run(
        command,
        cwd=workdir,
        env=outside_env(PATH="/usr/bin:/bin"),  # as pasted into a shell without the venv active
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    assert "Traceback" not in crawl.stderr
    rows = [line.split() for line in crawl.stdout.splitlines() if line.strip()][2:]  # past the header
    assert {row[0]: row[-1] for row in rows} == dict.fromkeys(
        ["wayback", "commoncrawl", "otx", "urlscan", "virustotal", "intelx", "ghostarchive"], "complete"
    )
    expected = (tmp_path / "expected.txt").read_text(encoding="utf-8").splitlines()
    assert len(expected) > 450 and expected == sorted(set(expected))
    with sqlite3.connect(workdir / "trawl-dev.db") as con:
        stored = sorted(url for (url,) in con.execute("SELECT url FROM urls"))
    assert stored == expected  # each once, none missing, none extra

    # The settings module holds the very settings of the printed command, and Scrapy reads it.
    given = dict(command[i + 1].split("=", 1) for i, arg in enumerate(command) if arg == "-s")
    module = runpy.run_path(str(tmp_path / "dev_settings.py"))
    assert {name: str(module[name]) for name in given} == given
    assert module["COMMANDS_MODULE"] == "trawl.commands"  # trawl's settings underneath
    read = processes.run(
        [str(TRAWL), "settings", "--get", "WAYBACK_BASE_URL"],
        cwd=workdir,
        env=outside_env(PYTHONPATH=str(tmp_path), SCRAPY_SETTINGS_MODULE="dev_settings"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert read.stdout.strip() == given["WAYBACK_BASE_URL"], read.stderr[-2000:]
    assert any(
        line.startswith(f"PYTHONPATH={tmp_path} SCRAPY_SETTINGS_MODULE=dev_settings {TRAWL} crawl all")
        for line in dev_server.lines
    )

    dev_server.process.send_signal(signal.SIGINT)
    lines = dev_server.rest()
    assert dev_server.process.returncode == 0
    assert lines[-1] == "dev-server: stopped"
    assert not any("Traceback" in line or "KeyboardInterrupt" in line for line in lines), lines


def test_a_bad_option_is_one_line() -> None:
    done = processes.run(
        [sys.executable, "-m", "tests.servers", "--sources", "wayback,nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "dev-server: error: --sources: unknown source 'nope'\n"


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = processes.run(
            [
                sys.executable,
                "-m",
                "tests.servers",
                "--sources",
                "wayback",
                "--urls",
                "10",
                "--port-base",
                str(port),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"dev-server: error: cannot listen: wayback on 127.0.0.1:{port}: Address already in use"
    ]
    assert "ready:" not in done.stdout
