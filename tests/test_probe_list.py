"""``trawl crawl probe -a list=``, and probe and live against a lab address (``-a allow_private=true``).

The site (tests/servers/hostile_site.py) is a forward proxy that answers every
host itself and logs every request; a client that connects to its port
directly (``127.0.0.1:PORT``, no proxy) is logged by its ``Host`` header. So
what was asked, and what was not, is read from its log; what was stored from
the SQLite store; what the user is told from the lines printed.
"""

from __future__ import annotations

import json
import os
import pty
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import TEST_DEFAULTS, assert_no_traceback, run_scrapy
    from tests.helpers import processes
    from tests.helpers.probe import seed
    from tests.servers.hostile_site import HostileSite, Reply, html, redirect
except ImportError:
    from conftest import TEST_DEFAULTS, assert_no_traceback, run_scrapy  # type: ignore[no-redef]
    from helpers import processes  # type: ignore[no-redef]
    from helpers.probe import seed  # type: ignore[no-redef]
    from servers.hostile_site import HostileSite, Reply, html, redirect  # type: ignore[no-redef]

ORG = "example.org"
LIST = """\
# the hosts to probe, as for httpx -l
example.org
http://www.example.org/old

http://www.example.org/away
http://example.org/admin/
"""


@pytest.fixture
def site() -> Iterator[HostileSite]:
    with HostileSite() as web:
        lab = f"127.0.0.1:{web.port}"
        links = '<a href="/a">a</a> <a href="/go">go</a> <a href="http://127.0.0.1:1/x">x</a>'
        web.pages.update(
            {
                f"{ORG}/": Reply(200, html("Org home", "<p>home</p>")),
                f"{ORG}/admin/": Reply(200, html("Admin", "<p>log in</p>")),
                f"www.{ORG}/old": redirect(f"http://{ORG}/admin/"),  # to a host of the list: followed
                f"www.{ORG}/away": redirect(f"http://shop.{ORG}/"),  # to another host: not followed
                f"{lab}/": Reply(200, html("Lab home", links + ' <a href="http://10.0.0.5/">p</a>')),
                f"{lab}/a": Reply(200, html("Lab a", "<p>a</p>")),
                f"{lab}/go": redirect(f"http://localhost:{web.port}/secret"),  # another local host
            }
        )
        yield web


def records(db: Path) -> dict[str, dict]:
    with sqlite3.connect(db) as con:
        con.row_factory = sqlite3.Row
        return {row["url"]: dict(row) for row in con.execute("SELECT * FROM probe_records")}


def store(tmp_path: Path) -> list[str]:
    return ["-s", f"STORE_URI=sqlite:///{tmp_path / 'trawl.db'}"]


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("trawl: error:")]


def test_a_list_from_a_file_is_probed_line_by_line_within_its_own_hosts(
    site: HostileSite, tmp_path: Path
) -> None:
    (tmp_path / "urls.txt").write_text(LIST)
    result = run_scrapy(
        tmp_path, "crawl", "probe", "-a", "list=urls.txt", "-s", f"PROXY_LIST={site.url}", *store(tmp_path)
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    assert "probe: 4 URLs read from 'urls.txt'" in result.stderr
    found = records(tmp_path / "trawl.db")
    # The bare host: https first (the site has none: CONNECT refused), then http, as httpx does.
    assert set(found) == {
        f"http://{ORG}/",
        f"http://www.{ORG}/old",
        f"http://www.{ORG}/away",
        f"http://{ORG}/admin/",
    }
    assert (found[f"http://{ORG}/"]["status"], found[f"http://{ORG}/"]["title"]) == (200, "Org home")
    # https asked once each (the random path, the favicon, the root), not retried: httpx's fallback.
    assert site.requests.count((ORG, "CONNECT")) == 3
    old = found[f"http://www.{ORG}/old"]
    assert (old["status"], old["final_url"]) == (200, f"http://{ORG}/admin/")
    assert json.loads(old["redirects"]) == [[302, f"http://www.{ORG}/old"]]
    away = found[f"http://www.{ORG}/away"]
    assert (away["status"], away["error"]) == (
        302,
        f"redirect out of scope, not followed: http://shop.{ORG}/",
    )
    assert not site.asked(f"shop.{ORG}")


def test_a_list_from_standard_input(site: HostileSite, tmp_path: Path) -> None:
    args = ["crawl", "probe", "-a", "list=-", "-s", f"PROXY_LIST={site.url}", *store(tmp_path)]
    args += [arg for name, value in TEST_DEFAULTS.items() for arg in ("-s", f"{name}={value}")]
    result = processes.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=tmp_path,
        env=dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings"),
        input=f"http://{ORG}/admin/\n# a comment\nhttp://www.{ORG}/old\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "probe: 2 URLs read from standard input" in result.stderr
    assert set(records(tmp_path / "trawl.db")) == {f"http://{ORG}/admin/", f"http://www.{ORG}/old"}
    assert "/admin/" in site.asked(ORG)


def test_standard_input_from_a_terminal_is_refused(tmp_path: Path) -> None:
    """As httpx, no list is read from a terminal (a worker or a forgotten pipe would wait forever)."""
    leader, follower = pty.openpty()
    try:
        result = processes.run(
            [sys.executable, "-m", "scrapy", "crawl", "probe", "-a", "list=-", *store(tmp_path)],
            cwd=tmp_path,
            env=dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings"),
            stdin=follower,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        os.close(leader)
        os.close(follower)
    assert result.returncode == 2, result.stderr[-3000:]
    assert error_lines(result.stderr) == [
        "trawl: error: -a list=-: standard input is a terminal: pipe the list in"
        " (... | trawl crawl probe -a list=-) or give a file"
    ]


def test_a_domain_with_a_list_asks_only_its_lines_in_the_domain(site: HostileSite, tmp_path: Path) -> None:
    (tmp_path / "urls.txt").write_text(f"http://{ORG}/admin/\nhttp://other.example.net/\n")
    result = run_scrapy(
        tmp_path, "crawl", "probe", "-a", f"domain={ORG}", "-a", "list=urls.txt",
        "-s", f"PROXY_LIST={site.url}", *store(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "1 of the 2 lines of 'urls.txt' are outside example.org, not asked (the first: line 2)" in (
        result.stderr
    )
    assert set(records(tmp_path / "trawl.db")) == {f"http://{ORG}/admin/"}
    assert not site.asked("other.example.net")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "http://example.org/\n\nftp://example.org/x\n",
            "urls.txt line 3: not an http(s) URL: 'ftp://example.org/x'",
        ),
        ("# hosts\nexample.org extra\n", "urls.txt line 2: not a URL or a host: 'example.org extra'"),
        ("http://example.notatld/\n", "urls.txt line 1: unknown top-level domain 'notatld'"),
        ("# nothing\n\n", "no URL in urls.txt"),
        ("*.example.org\n", "urls.txt line 1: a wildcard is not a host: '*.example.org'"),
        ("10.0.0.0/24\n", "urls.txt line 1: an address range is not expanded"),
    ],
    ids=["scheme", "spaces", "tld", "empty", "wildcard", "range"],
)
def test_a_bad_line_is_one_error_line_naming_it_and_nothing_is_asked(
    site: HostileSite, tmp_path: Path, text: str, message: str
) -> None:
    (tmp_path / "urls.txt").write_text(text)
    result = run_scrapy(
        tmp_path, "crawl", "probe", "-a", "list=urls.txt", "-s", f"PROXY_LIST={site.url}", *store(tmp_path)
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert_no_traceback(result)
    errors = error_lines(result.stderr)
    assert len(errors) == 1 and message in errors[0], result.stderr[-2000:]
    assert site.requests == []


def test_an_address_is_refused_without_allow_private_and_probed_with_it(
    site: HostileSite, tmp_path: Path
) -> None:
    lab = f"127.0.0.1:{site.port}"
    (tmp_path / "urls.txt").write_text(f"http://{lab}/\nhttp://{lab}/go\n")
    refused = run_scrapy(tmp_path, "crawl", "probe", "-a", "list=urls.txt", *store(tmp_path))
    assert refused.returncode == 2, refused.stderr[-3000:]
    errors = error_lines(refused.stderr)
    assert len(errors) == 1 and "urls.txt line 1:" in errors[0] and "-a allow_private=true" in errors[0]
    assert site.requests == []

    result = run_scrapy(
        tmp_path, "crawl", "probe", "-a", "list=urls.txt", "-a", "allow_private=true", *store(tmp_path)
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = records(tmp_path / "trawl.db")
    assert (found[f"http://{lab}/"]["status"], found[f"http://{lab}/"]["title"]) == (200, "Lab home")
    go = found[f"http://{lab}/go"]  # another local host is out of scope, whatever the argument
    assert (go["status"], go["error"]) == (
        302,
        f"redirect out of scope, not followed: http://localhost:{site.port}/secret",
    )
    assert "/" in site.asked(lab)
    assert not site.asked(f"localhost:{site.port}")


def test_stored_urls_of_a_lab_address_are_probed_on_its_port_only(site: HostileSite, tmp_path: Path) -> None:
    lab = f"127.0.0.1:{site.port}"
    seed(tmp_path / "trawl.db", [f"http://{lab}/a", f"http://{lab}/b", "http://127.0.0.1:1/c"])
    result = run_scrapy(
        tmp_path, "crawl", "probe", "-a", f"domain={lab}", "-a", "allow_private=true", *store(tmp_path)
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"probe: 2 URLs selected for {lab}" in result.stderr
    found = records(tmp_path / "trawl.db")
    assert {url: row["status"] for url, row in found.items()} == {
        f"http://{lab}/a": 200,
        f"http://{lab}/b": 404,
    }
    assert site.hosts() == {lab}


def test_an_address_as_the_domain_needs_allow_private(site: HostileSite, tmp_path: Path) -> None:
    for source in ("probe", "live"):
        result = run_scrapy(
            tmp_path, "crawl", source, "-a", f"domain=127.0.0.1:{site.port}", *store(tmp_path)
        )
        assert result.returncode == 2, result.stderr[-3000:]
        errors = error_lines(result.stderr)
        assert len(errors) == 1 and "is an IP address" in errors[0] and "-a allow_private=true" in errors[0]
    result = run_scrapy(tmp_path, "crawl", "live", "-a", "domain=localhost", *store(tmp_path))
    assert error_lines(result.stderr) == [
        "trawl: error: 'localhost' is this machine: -a allow_private=true allows it (lab testing)"
    ]
    assert site.requests == []


def test_the_live_crawl_of_a_lab_address_stays_on_that_host_and_port(
    site: HostileSite, tmp_path: Path
) -> None:
    lab = f"127.0.0.1:{site.port}"
    result = run_scrapy(
        tmp_path, "crawl", "live", "-a", f"domain={lab}", "-a", "allow_private=true", *store(tmp_path)
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    assert f"live: crawling the host {lab}, depth 3" in result.stderr
    assert {"/", "/a", "/go"} <= set(site.asked(lab))
    assert site.hosts() == {lab}  # not localhost:PORT, 127.0.0.1:1 nor 10.0.0.5
    for url in ("http://10.0.0.5/", "http://127.0.0.1:1/x", f"http://localhost:{site.port}/secret"):
        assert f"live:   {url}" in result.stderr  # listed among the out-of-scope URLs
    with sqlite3.connect(tmp_path / "trawl.db") as con:
        stored = {row[0] for row in con.execute("SELECT url FROM urls")}
    assert {f"http://{lab}/", f"http://{lab}/a", f"http://{lab}/go"} <= stored
