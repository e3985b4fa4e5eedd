"""``trawl serve`` over HTTP: the search page and its downloads say what ``trawl search`` says.

One store, filled by two real ``trawl crawl all`` runs against the local fakes
(the second finds two more URLs), and one ``trawl serve`` for the module. The
browser's side (a click, a drawn chart, a download) is tests/test_serve_browser.py.
"""

from __future__ import annotations

import csv
import html
import io
import json
import socket
import sqlite3
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.conftest import assert_no_traceback, run_scrapy
from tests.helpers.browser import LATER_CRAWL, Served, crawl_fakes, served


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("serve")
    crawl_fakes(path)
    return path


@pytest.fixture(scope="module")
def server(folder: Path) -> Iterator[Served]:
    with served(folder, "--store", "sqlite:///trawl.db") as running:
        yield running


def get(server: Served, path: str, **args: str) -> tuple[int, str, dict[str, str]]:
    url = server.url + path.lstrip("/") + ("?" + urlencode(args) if args else "")
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def search(folder: Path, query: str, fmt: str = "txt") -> str:
    result = run_scrapy(folder, "search", query, "--format", fmt, "--store", "sqlite:///trawl.db")
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("query", ["ext:js", "status:[400 TO 499] OR host:api.* NOT mime:text/*"])
@pytest.mark.parametrize("fmt, link", [("txt", "txt"), ("csv", "csv"), ("jsonl", "json")])
def test_a_download_is_what_trawl_search_prints(
    folder: Path, server: Served, query: str, fmt: str, link: str
) -> None:
    status, body, headers = get(server, f"/trawl/export.{link}", q=query)
    assert status == 200
    assert "attachment" in headers["content-disposition"]
    expected = search(folder, query, fmt)
    assert expected.strip()
    assert body == expected


def test_the_search_page_counts_and_lists_what_the_query_selects(folder: Path, server: Served) -> None:
    status, page, _ = get(server, "/trawl/search", q="ext:js")
    assert status == 200
    assert 'id="trawl-total">3 URLs' in page
    for url in search(folder, "ext:js").split():
        assert f'<td class="trawl-url">{url}</td>' in page
    assert "https://example.com/login.php" not in page


def test_a_bad_query_is_the_parsers_one_line_and_status_400(server: Served) -> None:
    status, page, _ = get(server, "/trawl/search", q="status:(200")
    assert status == 400
    assert "bad query: unclosed &#39;(&#39;" in page
    status, body, _ = get(server, "/trawl/export.txt", q="status:(200")
    assert (status, body.count("\n")) == (400, 1)


def test_facets_count_the_selected_urls_and_a_value_adds_its_clause(server: Served) -> None:
    _, page, _ = get(server, "/trawl/search", q="host:static.example.com")
    assert 'id="trawl-total">3 URLs' in page
    assert 'href="/trawl/search?q=host%3Astatic.example.com+status%3A%22404%22">404</a> 1' in page
    assert ">js</a> 3" in page
    assert ">2019</a> 2" in page


def test_words_find_urls_through_the_full_text_index(server: Served) -> None:
    _, page, _ = get(server, "/trawl/search", words="users")
    assert 'id="trawl-total">2 URLs' in page
    _, page, _ = get(server, "/trawl/search", q="NOT url:*id=2*", words="users")
    assert 'id="trawl-total">1 URL<' in page


def test_the_views_answer_from_the_store(folder: Path, server: Served) -> None:
    _, body, _ = get(server, "/trawl/hosts.json", _shape="array")
    assert {row["host"]: row["urls"] for row in json.loads(body)} == {
        "example.com": 5, "api.example.com": 3, "static.example.com": 3,
    }  # fmt: skip
    _, body, _ = get(server, "/trawl/new_since_last_run.json", _shape="array")
    assert sorted(row["url"] for row in json.loads(body)) == sorted(u for u, *_ in LATER_CRAWL)
    report = run_scrapy(folder, "report", "new", "--domain", "example.com")
    assert sorted(report.stdout.split()) == sorted(u for u, *_ in LATER_CRAWL)
    _, body, _ = get(server, "/trawl/runs_by_source.json", _shape="array")
    runs = json.loads(body)
    assert [(r["source"], r["outcome"]) for r in runs] == [("otx", "finished"), ("wayback", "finished")] * 2
    # a crawl all's sources run at once: which of them stores a URL both found first varies
    assert [runs[0]["new_urls"] + runs[1]["new_urls"], runs[2]["new_urls"] + runs[3]["new_urls"]] == [2, 9]
    _, body, _ = get(server, "/trawl/url_provenance.json", _shape="array")
    login = next(r for r in json.loads(body) if r["url"] == "https://example.com/login.php")
    assert (login["sources"], login["first_seen"]) == ("otx, wayback", "2016-04-01 00:00:00")
    status, _, _ = get(server, "/trawl/probe_results")
    assert status == 404  # no probe ran: no view of its records


def test_the_charts_draw_the_query(server: Served) -> None:
    _, page, _ = get(server, "/trawl/charts", q="host:static.example.com")
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="trawl-chart"') == 3
    assert 'data-series="wayback"' in page
    assert "<title>static.example.com: 3</title>" in page


def test_the_store_is_read_not_written_and_a_crawl_writing_meanwhile_is_seen(
    folder: Path, server: Served
) -> None:
    store = folder / "trawl.db"
    with sqlite3.connect(store) as con:
        tables = sorted(n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    assert tables == ["pages", "runs", "sqlite_sequence", "urls"]
    status, _, _ = get(
        server, "/trawl.json", sql="INSERT INTO runs (run_id, source, started_at) VALUES ('x', 'x', 0)"
    )
    assert status in (400, 403)
    writer = sqlite3.connect(store, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # a crawl's batch, not yet committed: the page does not wait
        writer.execute(
            "INSERT INTO urls SELECT 'https://example.com/written-meanwhile', host, sources, first_seen,"
            " last_seen, captures, statuses, mimes, source_counts, first_run, last_run, added_at, updated_at"
            " FROM urls LIMIT 1"
        )
        _, page, _ = get(server, "/trawl/search", q="url:*meanwhile*")
        assert 'id="trawl-total">0 URLs' in page
        writer.execute("COMMIT")
        _, page, _ = get(server, "/trawl/search", q="url:*meanwhile*")
        assert 'id="trawl-total">1 URL<' in page
    finally:
        writer.execute("DELETE FROM urls WHERE url = 'https://example.com/written-meanwhile'")
        writer.close()


def serve_fails(folder: Path, *args: str) -> tuple[int, str]:
    result = run_scrapy(folder, "serve", *args, timeout=60)
    assert_no_traceback(result)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trawl: error: "), result.stderr
    return result.returncode, lines[0]


def test_bad_input_is_one_line(folder: Path, server: Served, tmp_path: Path) -> None:
    assert serve_fails(tmp_path, "--store", "sqlite:///missing.db") == (
        1, "trawl: error: no SQLite store at 'missing.db' (run a crawl first, or give --store)",
    )  # fmt: skip
    status, line = serve_fails(folder, "--store", "elasticsearch://127.0.0.1:9200")
    assert status == 2 and "trawl serve reads a SQLite store" in line
    (tmp_path / "text.db").write_text("not a database\n")
    status, line = serve_fails(tmp_path, "--store", "sqlite:///text.db")
    assert status == 1 and "cannot read the SQLite store" in line
    port = int(server.url.rsplit(":", 1)[1].strip("/"))
    status, line = serve_fails(folder, "--store", "sqlite:///trawl.db", "--port", str(port))
    assert status == 1 and line.startswith(f"trawl: error: cannot listen on 127.0.0.1:{port}: ")


def test_listening_beyond_this_machine_warns_once(folder: Path) -> None:
    with served(folder, "--store", "sqlite:///trawl.db", "--host", "0.0.0.0") as running:
        with socket.create_connection(
            ("127.0.0.1", int(running.url.rsplit(":", 1)[1].strip("/"))), timeout=5
        ):
            pass
    warnings = [line for line in running.lines if "WARNING" in line]
    assert warnings == [
        "trawl: WARNING: listening on 0.0.0.0: anyone who can reach this machine can read the store"
    ]
    with served(folder, "--store", "sqlite:///trawl.db") as running:
        pass
    assert not [line for line in running.lines if "WARNING" in line]


@pytest.mark.parametrize("mode", ["params", "ids", "all"])
def test_collapse_shows_and_downloads_what_trawl_search_collapse_prints(
    folder: Path, server: Served, mode: str
) -> None:
    expected = run_scrapy(
        folder, "search", "*", "--collapse", mode, "--format", "csv", "--store", "sqlite:///trawl.db"
    )
    assert expected.returncode == 0, expected.stderr
    _, body, headers = get(server, "/trawl/export.csv", q="*", collapse=mode)
    assert body == expected.stdout
    assert 'filename="trawl-patterns.csv"' in headers["content-disposition"]
    _, page, _ = get(server, "/trawl/search", collapse=mode)
    for count, pattern, _example in list(csv.reader(io.StringIO(expected.stdout)))[1:]:
        assert f'<td>{count}</td><td class="trawl-pattern">{html.escape(pattern)}</td>' in page


def test_collapse_patterns_of_the_users_endpoint(server: Served) -> None:
    _, page, _ = get(server, "/trawl/search", q="host:api.example.com", collapse="params")
    assert '<td>2</td><td class="trawl-pattern">https://api.example.com/v1/users?id={}</td>' in page
    status, body, _ = get(server, "/trawl/export.txt", collapse="nonsense")
    assert status == 400 and body == "collapse takes one of params, ids, all, not 'nonsense'\n"


def counted_page(server: Served) -> str:
    """The unfiltered page once every URL's facets are counted (polls it)."""
    deadline = time.monotonic() + 20
    page = ""
    while time.monotonic() < deadline and 'id="trawl-counted-at"' not in page:
        _, page, _ = get(server, "/trawl/search")
    assert 'id="trawl-counted-at"' in page
    return page


def test_the_unfiltered_page_shows_the_facets_counted_in_the_background(folder: Path, server: Served) -> None:
    page = counted_page(server)
    assert 'id="trawl-total">11 URLs' in page
    facet = run_scrapy(folder, "search", "*", "--facet", "source", "--store", "sqlite:///trawl.db")
    for line in facet.stdout.splitlines():
        value, count = line.split()
        assert f">{value}</a> {count}</li>" in page


def test_a_restart_reads_the_kept_counts_unless_the_store_changed(folder: Path, server: Served) -> None:
    counted_page(server)
    with sqlite3.connect(folder / "trawl.db-fts.db") as side:
        assert side.execute("UPDATE summary SET counted_at = 'then'").rowcount == 1
    with served(folder, "--store", "sqlite:///trawl.db") as again:
        assert "(counted at then)" in counted_page(again)
    store = sqlite3.connect(folder / "trawl.db")
    try:
        with store:
            store.execute(
                "INSERT INTO urls SELECT 'https://example.com/added-since', host, sources, first_seen,"
                " last_seen, captures, statuses, mimes, source_counts, first_run, last_run,"
                " (julianday('now') - 2440587.5) * 86400, (julianday('now') - 2440587.5) * 86400"
                " FROM urls LIMIT 1"
            )
        with served(folder, "--store", "sqlite:///trawl.db") as changed:
            page = counted_page(changed)
        assert "(counted at then)" not in page
        assert 'id="trawl-total">12 URLs' in page
    finally:
        with store:
            store.execute("DELETE FROM urls WHERE url = 'https://example.com/added-since'")
        store.close()


def test_the_charts_of_every_url_are_drawn_in_the_background(server: Served) -> None:
    counted_page(server)
    _, page, _ = get(server, "/trawl/charts")
    assert 'id="trawl-counted-at">(every URL, drawn at' in page
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="trawl-chart"') == 3
    assert "<title>example.com: 5</title>" in page


def test_a_store_whose_path_holds_uri_characters_is_served(folder: Path, tmp_path: Path) -> None:
    """``?``, ``#`` and ``%`` mean something in the ``file:`` URI SQLite is opened with."""
    odd = tmp_path / "runs?2026#q%41"
    odd.mkdir()
    with sqlite3.connect(folder / "trawl.db") as source, sqlite3.connect(odd / "trawl.db") as copy:
        source.backup(copy)
        expected = copy.execute("SELECT count(*) FROM urls").fetchone()[0]
    with served(odd, "--store", "sqlite:///trawl.db") as running:
        status, body, _ = get(running, "/trawl/urls.json", _shape="array", _size="max")
        assert status == 200, body
        assert len(json.loads(body)) == expected
        status, page, _ = get(running, "/trawl/search", q="*")
        assert status == 200, page
        assert f'id="trawl-total">{expected} URLs' in page
