"""``python -m tests.servers``: the dev server's printed command crawls all seven fakes, exactly."""

from __future__ import annotations

import runpy
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers import processes
from tests.helpers.devserver import TRAWL, DevServer, outside_env


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
