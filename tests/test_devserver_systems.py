"""``python -m tests.servers``: every command it prints runs as printed, top to bottom, and stores records.

The dev server runs as a real process; its printed commands (lines starting
with the ``trawl`` beside this Python, ``\\``-continued) are run in the order
printed, in one folder, without the virtualenv on ``PATH``: the URL crawl, the
archived responses (and ``trawl endpoints``), the probe and the live crawl of
the generated site through the printed proxy, the crates.io dump (and
``trawl crates top``). Each must exit 0 and leave its records in the store.
"""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers import processes
from tests.helpers.devserver import TRAWL, DevServer, outside_env
from trawl.records.batches import Batch, UrlBatch

DOMAIN_HOSTS = ("example.com", ".example.com")


def printed_commands(lines: list[str]) -> list[list[str]]:
    """Every printed command (a line starting with the trawl executable, ``\\``-continued), in order."""
    commands, i = [], 0
    while i < len(lines):
        if lines[i].startswith(f"{TRAWL} "):
            end = i
            while lines[end].endswith("\\"):
                end += 1
            commands.append(shlex.split(" ".join(line.rstrip("\\") for line in lines[i : end + 1])))
            i = end
        i += 1
    return commands


def count(db: Path, sql: str) -> int:
    with sqlite3.connect(db) as con:
        return int(con.execute(sql).fetchone()[0])


@pytest.fixture
def server() -> Iterator[DevServer]:
    dev = DevServer("--urls", "500")
    yield dev
    if dev.process.poll() is None:
        dev.process.kill()
        dev.process.wait()


def test_every_printed_command_runs_top_to_bottom_and_stores_records(
    server: DevServer, tmp_path: Path
) -> None:
    assert server.wait_for("ready: ") == "ready: 12 servers for example.com (Ctrl-C stops them)"
    commands = printed_commands(server.lines)
    assert [c[1:3] for c in commands] == [
        ["crawl", "all"],
        ["crawl", "responses"],
        ["endpoints", "-a"],
        ["crawl", "probe"],
        ["crawl", "live"],
        ["crawl", "crates"],
        ["crawl", "crates"],
        ["crates", "top"],
    ]
    assert commands[6][3:5] == ["-a", "mode=incremental"]
    outputs = []
    for command in commands:
        done = processes.run(
            command,
            cwd=tmp_path,
            env=outside_env(PATH="/usr/bin:/bin"),
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, (command[1:3], done.stderr[-3000:])
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        outputs.append(done)
    db = tmp_path / "trawl-dev.db"
    assert count(db, "SELECT count(*) FROM urls WHERE sources NOT IN ('live', 'responses')") > 450

    # responses: files downloaded and mined, each named in the index; what mining found, printed.
    stored = [path for (path,) in sqlite3.connect(db).execute("SELECT path FROM response_records")]
    assert len([p for p in stored if p]) > 50
    assert all((tmp_path / "trawl-dev-files" / p).is_file() for p in stored if p)
    assert count(db, "SELECT count(*) FROM response_records WHERE status = 'no memento'") == 0
    assert count(db, "SELECT count(*) FROM endpoint_records WHERE method = 'POST'") > 0
    endpoints = outputs[2].stdout.splitlines()
    assert len(endpoints) > 50 and all(line.startswith(("http://", "https://")) for line in endpoints)
    assert any("/api/v2/" in line for line in endpoints) and any("/api/v1/" in line for line in endpoints)

    # probe and live: the site's hosts under their own names, live and dead both.
    with sqlite3.connect(db) as con:
        probed = dict(con.execute("SELECT url, verdict FROM probe_records").fetchall())
        live_urls = [url for (url,) in con.execute("SELECT url FROM urls WHERE sources LIKE '%live%'")]
    assert len(probed) > 100 and {"live", "dead"} <= set(probed.values())
    assert all(url.split("/")[2].endswith(DOMAIN_HOSTS) for url in probed)
    assert len(live_urls) > 200
    assert count(db, "SELECT count(*) FROM link_records") > 200

    # crates: the generated dump's 400 crates, the API's 8 new versions since, the top list read back.
    assert count(db, "SELECT count(*) FROM crate_records") == 400
    assert count(db, "SELECT count(*) FROM version_records") == 4008
    assert count(db, "SELECT count(*) FROM version_records WHERE num = '1.0.0'") == 8
    assert "8 crates fetched from the API" in outputs[6].stderr
    assert len(outputs[7].stdout.splitlines()) == 20
    # The zip variant and the API beside the dump, as the crates line names them.
    line = next(line for line in server.lines if line.startswith("Load the crates.io db-dump"))
    zip_url, api_url = re.fullmatch(r".*\(also (\S+); the API: (\S+)\):", line).groups()
    with urllib.request.urlopen(zip_url, timeout=30) as answer:
        assert answer.read(4) == b"PK\x03\x04"
    listing = urllib.request.Request(
        f"{api_url}/api/v1/crates?per_page=2", headers={"User-Agent": "dev (t@x)"}
    )
    with urllib.request.urlopen(listing, timeout=30) as answer:
        assert [c["name"] for c in json.load(answer)["crates"]] == ["crate-0", "crate-1"]


def test_a_system_alone_and_a_system_without_what_it_needs() -> None:
    alone = DevServer("--sources", "crates")
    try:
        assert alone.wait_for("ready: ") == "ready: 2 servers for example.com (Ctrl-C stops them)"
        printed = [c[1:3] for c in printed_commands(alone.lines)]
        assert printed == [["crawl", "crates"], ["crawl", "crates"], ["crates", "top"]]
    finally:
        alone.process.kill()
        alone.process.wait()
    done = processes.run(
        [sys.executable, "-m", "tests.servers", "--sources", "responses"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "dev-server: error: --sources: responses replays the wayback fake's captures: add wayback\n"
    )


def test_coalesced_url_batches_hold_each_url_once() -> None:
    """Mining finds one endpoint in many files: small URL batches held together must not repeat a URL
    (the SQLite store refused the whole batch: ``32 of 272 URLs could not be stored``)."""
    first = UrlBatch.from_columns(
        "responses", ["https://a.example.com/x", "https://a.example.com/y"], ["a.example.com"] * 2,
        ["20190101000000", None], ["20200101000000", None], [0, 0], [[], ["200"]], [[], []], page="p1",
    )  # fmt: skip
    second = UrlBatch.from_columns(
        "responses", ["https://a.example.com/x"], ["a.example.com"],
        ["20180101000000"], ["20190101000000"], [0], [["404"]], [[]], page="p2",
    )  # fmt: skip
    combined = Batch.coalesce([first, second])
    rows = {row["url"]: row for row in combined.frame.to_dicts()}
    assert len(combined.frame) == 2
    x = rows["https://a.example.com/x"]
    assert (x["first_seen"], x["last_seen"], x["statuses"]) == ("20180101000000", "20200101000000", ["404"])
    assert set(combined.pages) == {"p1", "p2"}
