"""What a default run prints: the useful lines, not Scrapy's dumps.

A default ``crawl all`` against the seven local stand-ins printed 576 stderr
lines on the code before trawl.common.logs (604 with the politeness gates on; the
settings, middleware and stats dumps of every source around the useful lines;
``make crawl`` on the real services, 598). Now 16 (23 with the gates on): the
store, what each source found, its summary, and any warning or error. Scrapy's
dumps are still in ``LOG_FILE`` and at ``LOG_LEVEL=DEBUG``; ``TRAWL_LOG_JSON``
writes one JSON object a line; ``make crawl``'s status is make's, as the README says.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.conftest import ROOT, CrawlResult, crawl_args, run_scrapy
from tests.helpers import processes
from tests.servers.commoncrawl import FakeCommonCrawl, cc_record
from tests.servers.ghostarchive import FakeGhostArchive
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.intelx import FakeIntelX
from tests.servers.otx import FakeOtxServer, OtxUrl
from tests.servers.urlscan import FakeUrlscanServer, make_result
from tests.servers.virustotal import FakeVirusTotal, build_report
from trawl.common.counts import counted

QUIET = {"TRAWL_LOG_ALL": "False"}  # trawl's default console (the suite keeps Scrapy's lines)
VT_KEY = "vt-logs-key-8e21c4d09b7a"
IX_KEY = "ix-logs-key-2f9d61ab"
KEYS = {"VIRUSTOTAL_API_KEY": VT_KEY, "INTELX_API_KEY": IX_KEY}
SOURCES = ("commoncrawl", "ghostarchive", "intelx", "otx", "urlscan", "virustotal", "wayback")
#: Lines Scrapy prints that the default console must not.
DUMPS = ("Scrapy 2.", "Versions:", "Overridden settings", "Enabled extensions", "Dumping Scrapy stats")


@contextmanager
def every_source() -> Iterator[dict[str, str]]:
    """All seven sources on local stand-ins, one URL or two each; the settings that point at them."""
    with ExitStack() as stack:
        enter = stack.enter_context
        wayback = enter(FakeCdxServer([make_capture("https://example.com/w", "20200101000000")]))
        cc = enter(
            FakeCommonCrawl({"CC-MAIN-2025-33": [cc_record("https://example.com/c", "20250801000000")]})
        )
        otx = enter(FakeOtxServer(urls=[OtxUrl("https://example.com/o", "2021-01-01T00:00:00")]))
        urlscan = enter(
            FakeUrlscanServer(results=[make_result("https://example.com/u", "2022-01-01T00:00:00.000Z")])
        )
        report = build_report(undetected=[("https://example.com/v", "2020-01-02 03:04:05")])
        vt = enter(FakeVirusTotal(keys={VT_KEY}, reports={"example.com": report}))
        ix = enter(FakeIntelX(keys={IX_KEY}, selectors={"example.com": ["https://example.com/i"]}))
        ghost = enter(FakeGhostArchive(archives={".example.com": ["https://example.com/g"]}))
        yield {
            "WAYBACK_BASE_URL": wayback.base_url,
            "COMMONCRAWL_BASE_URL": cc.base_url,
            "OTX_BASE_URL": otx.base_url,
            "URLSCAN_BASE_URL": urlscan.base_url,
            "VIRUSTOTAL_BASE_URL": vt.base_url,
            "INTELX_BASE_URL": ix.base_url,
            "INTELX_FALLBACK_BASE_URL": "",
            "GHOSTARCHIVE_BASE_URL": ghost.base_url,
            "TRAWL_CACHE_DIR": "",
        }


def crawl_all(workdir: Path, settings: dict[str, object], *extra: str) -> CrawlResult:
    return run_scrapy(workdir, *crawl_args("all", "example.com", settings, *extra), env=KEYS)


def test_a_default_crawl_all_prints_a_handful_of_lines_per_source(workdir: Path) -> None:
    with every_source() as servers:
        result = crawl_all(workdir, {**servers, **QUIET}, "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stderr.splitlines()
    assert len(lines) <= 4 * len(SOURCES) + 1, result.stderr  # was 576
    assert lines[0].endswith(f"INFO: store: sqlite:///{workdir.resolve() / 'trawl.db'}")
    for source in SOURCES:
        assert any(f"[{source}] INFO: {source}: complete (finished) in " in line for line in lines), source
    assert not [line for line in lines if any(dump in line for dump in DUMPS)]
    assert not [line for line in lines if "[scrapy." in line and "] INFO:" in line]
    assert len(result.lines("urls.txt")) == 7
    states = [line.split()[-1] for line in result.stdout.splitlines()[2:]]
    assert states == ["complete"] * 7


def test_scrapys_lines_go_to_the_log_file_and_show_at_debug(workdir: Path) -> None:
    with every_source() as servers:
        to_file = crawl_all(workdir, {**servers, **QUIET, "LOG_FILE": "crawl.log"}, "-a", "sources=wayback")
        debug = crawl_all(workdir, {**servers, **QUIET, "LOG_LEVEL": "DEBUG"}, "-a", "sources=wayback")
    assert to_file.returncode == 0 and debug.returncode == 0, debug.stderr[-3000:]
    assert to_file.stderr == ""
    log = (workdir / "crawl.log").read_text(encoding="utf-8")
    for text in (log, debug.stderr):
        assert all(dump in text for dump in DUMPS), text[-3000:]
        assert "wayback: complete (finished)" in text


def test_json_lines(workdir: Path) -> None:
    with every_source() as servers:
        settings = {**servers, **QUIET, "TRAWL_LOG_JSON": "True", "PROGRESS_INTERVAL": "0.05"}
        result = crawl_all(workdir, settings, "-a", "sources=wayback,virustotal", "-s", "LOG_LEVEL=DEBUG")
    assert result.returncode == 0, result.stderr[-3000:]
    entries = [json.loads(line) for line in result.stderr.splitlines()]  # every line is one object
    assert all({"time", "level", "source", "logger", "message"} <= set(e) for e in entries)
    assert all(e["time"].endswith("+00:00") and e["level"] in ("DEBUG", "INFO", "WARNING") for e in entries)
    summary = next(e for e in entries if e["message"].startswith("wayback: complete (finished)"))
    assert summary["source"] == "wayback" and summary["level"] == "INFO"
    counters = summary["counters"]
    pages = counted(counters["pages"], "page")  # "1 page": the empty page that ends a walk is not counted
    assert f": {counters['requests']} requests, {pages}, " in summary["message"]
    assert (counters["outcome"], counters["urls_new"], counters["errors"]) == ("complete", 1, 0)
    progress = [e for e in entries if e["message"].startswith("wayback: pages ")]
    assert all(set(e["counters"]) >= {"pages", "requests", "captures", "errors"} for e in progress)
    crawled = [e for e in entries if e["message"].startswith("Crawled (200)") and e["source"] == "virustotal"]
    assert crawled and "apikey=***&domain=example.com" in crawled[0]["message"]
    assert VT_KEY not in result.stderr  # masked in JSON too
    assert any("\n" in e["message"] for e in entries if e["message"].startswith("Dumping Scrapy stats"))


def make(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    venv = Path(sys.prefix)
    command = ["make", "-f", str(ROOT / "Makefile"), f"VENV={venv}", "-o", f"{venv}/bin/.installed", *args]
    return processes.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_make_crawl_status_is_what_the_readme_says(tmp_path: Path) -> None:
    """0 when the crawl completed; make's own 2 otherwise, after "Error 1" (the crawl's status)."""
    fast = "-s RATE_LIMITS_ENABLED=False -s AUTOTHROTTLE_ENABLED=False -s RETRY_TIMES=0"
    with FakeCdxServer([make_capture("https://example.com/m", "20200101000000")]) as wayback:
        done = make(
            tmp_path, "crawl", "SOURCE=wayback", f"ARGS={fast} -s WAYBACK_BASE_URL={wayback.base_url}"
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "urls.txt").read_text().split() == ["https://example.com/m"]
    failed = make(tmp_path, "crawl", "SOURCE=wayback", f"ARGS={fast} -s WAYBACK_BASE_URL=http://127.0.0.1:9")
    assert failed.returncode == 2
    assert "wayback: cannot reach http://127.0.0.1:9" in failed.stderr
    assert failed.stderr.rstrip().endswith("crawl] Error 1")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`make crawl`'s exit status is make's" in readme
