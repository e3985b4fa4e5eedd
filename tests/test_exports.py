"""``-o``/``-O`` files across reruns: never emptied by a failed run, never doubled."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.conftest import assert_no_traceback
from tests.helpers.crawl_all import SHARED, crawl_all, otx_server, table, wayback_server
from tests.helpers.exports import DOWN, leftovers
from tests.helpers.wayback import FILTERED_IN, captures, crawl
from tests.servers.ia_cdx import FakeCdxServer, make_capture

WAYBACK_URLS = {SHARED, "https://example.com/only-wayback", "https://a.example.com/x"}
OTX_URLS = {SHARED, "https://example.com/only-otx"}


# --- one source, Scrapy's feed exports ------------------------------------------------------


def test_a_failed_rerun_keeps_the_export(workdir: Path) -> None:
    with FakeCdxServer(captures(), lines_per_page=3) as server:
        first = crawl(workdir, server, "-O", "urls.txt")
    assert first.returncode == 0, first.stderr[-3000:]
    before = (workdir / "urls.txt").read_bytes()
    assert set(first.lines("urls.txt")) == FILTERED_IN and len(first.lines("urls.txt")) == 8
    assert first.stderr.splitlines()[-1] == "trawl: wrote urls.txt: 8 URLs, 8 found by this run"

    second = crawl(workdir, None, "-O", "urls.txt", base_url=DOWN + "/web.archive.org")
    assert_no_traceback(second)
    assert second.returncode == 1
    assert "wayback: failed" in second.stderr
    assert (workdir / "urls.txt").read_bytes() == before  # still the 8 lines, untouched
    assert "urls.txt kept as it was: this run exported no URL" in second.stderr
    # what is in the file is not this run's: the last line says so
    assert second.stderr.splitlines()[-1] == "trawl: wrote urls.txt: 8 URLs, 0 found by this run"
    assert set(second.stored()) == FILTERED_IN
    assert leftovers(workdir) == []


def test_overwrite_takes_a_run_with_urls_and_creates_a_missing_file(workdir: Path) -> None:
    with FakeCdxServer(captures(), lines_per_page=3) as server:
        crawl(workdir, server, "-O", "urls.txt")
        server.set_captures([make_capture("https://example.com/only-now", "20240101000000")])
        again = crawl(workdir, server, "-O", "urls.txt")
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.lines("urls.txt") == ["https://example.com/only-now"]  # -O: this run's URLs
    down = crawl(workdir, None, "-O", "new.txt", base_url=DOWN)
    assert down.returncode == 1
    assert not (workdir / "new.txt").exists()  # a failed run leaves no empty file
    assert "new.txt not written: this run failed and exported no URL" in down.stderr
    assert leftovers(workdir) == []


def test_append_reruns_add_only_the_urls_the_file_lacks(workdir: Path) -> None:
    outputs = ("-o", "urls.txt", "-o", "urls.jsonl", "-o", "urls.csv")
    with FakeCdxServer(captures(), lines_per_page=3) as server:
        first = crawl(workdir, server, *outputs)
        assert first.returncode == 0, first.stderr[-3000:]
        txt = first.lines("urls.txt")
        second = crawl(workdir, server, *outputs)
        assert second.returncode == 0
        assert second.lines("urls.txt") == txt  # 8 lines, not 16
        server.set_captures([*captures(), make_capture("https://example.com/fresh", "20240101000000")])
        third = crawl(workdir, server, *outputs)
    assert third.returncode == 0
    assert third.lines("urls.txt") == [*txt, "https://example.com/fresh"]  # appended, old lines kept
    records = [json.loads(line) for line in third.lines("urls.jsonl")]
    assert [r["url"] for r in records] == [*txt, "https://example.com/fresh"]
    assert records[-1]["new"] is True
    with (workdir / "urls.csv").open(newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    assert rows[0][0] == "url" and sum(row[0] == "url" for row in rows) == 1  # one header
    assert [row[0] for row in rows[1:]] == [*txt, "https://example.com/fresh"]


# --- crawl all: exports from the store --------------------------------------------------------


def test_all_exports_every_url_the_store_holds_for_the_domain(workdir: Path) -> None:
    with wayback_server() as wayback, otx_server() as otx:
        urls = {"WAYBACK_BASE_URL": wayback.base_url, "OTX_BASE_URL": otx.base_url}
        first = crawl_all(workdir, "-a", "sources=wayback", "-O", "urls.txt", settings=urls)
        assert first.returncode == 0, first.stderr[-3000:]
        assert set(first.lines("urls.txt")) == WAYBACK_URLS
        second = crawl_all(workdir, "-a", "sources=otx", "-O", "urls.txt", "-O", "urls.jsonl", settings=urls)
    assert second.returncode == 0, second.stderr[-3000:]
    lines = second.lines("urls.txt")
    assert lines == sorted(WAYBACK_URLS | OTX_URLS)  # the store's view, not only otx's two
    assert second.stderr.splitlines()[-2:] == [
        "trawl: wrote urls.txt: 4 URLs, 2 found by this run",
        "trawl: wrote urls.jsonl: 4 URLs, 2 found by this run",
    ]
    new = {r["url"]: r["new"] for r in map(json.loads, second.lines("urls.jsonl"))}
    assert new == {url: url == "https://example.com/only-otx" for url in WAYBACK_URLS | OTX_URLS}

    down = crawl_all(
        workdir, "-a", "sources=wayback,otx", "-O", "urls.txt",
        settings={"WAYBACK_BASE_URL": DOWN, "OTX_BASE_URL": DOWN, "RETRY_TIMES": 0},
    )  # fmt: skip
    assert_no_traceback(down)
    assert down.returncode == 1
    assert {name: row[-1] for name, row in table(down).items()} == {"wayback": "failed", "otx": "failed"}
    assert down.lines("urls.txt") == lines  # everything the store knows, though nothing was read
    assert down.stderr.splitlines()[-1] == "trawl: wrote urls.txt: 4 URLs, 0 found by this run"

    apex = crawl_all(
        workdir, "-a", "sources=otx", "-a", "subs=false", "-O", "apex.txt",
        settings={"OTX_BASE_URL": DOWN, "RETRY_TIMES": 0},
    )  # fmt: skip
    assert apex.lines("apex.txt") == sorted((WAYBACK_URLS | OTX_URLS) - {"https://a.example.com/x"})
    assert leftovers(workdir) == []


def test_all_append_reruns_do_not_double_the_file(workdir: Path) -> None:
    with wayback_server() as wayback:
        urls = {"WAYBACK_BASE_URL": wayback.base_url}
        first = crawl_all(workdir, "-a", "sources=wayback", "-o", "urls.txt", settings=urls)
        second = crawl_all(workdir, "-a", "sources=wayback", "-o", "urls.txt", settings=urls)
    assert first.returncode == second.returncode == 0, second.stderr[-3000:]
    assert second.lines("urls.txt") == sorted(WAYBACK_URLS)  # 3 lines, not 6
