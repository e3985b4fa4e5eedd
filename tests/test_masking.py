"""API keys are masked whatever is switched off.

VirusTotal's v2 API takes the key in the query string, so Scrapy's DEBUG
"Crawled <GET ...?apikey=...>" and "Scraped from <200 ...>" lines hold it. On
the code before trawl.common.secrets' record factory, masking was re-attached only by
the Progress extension: with ``PROGRESS_INTERVAL=-1`` or the extension removed
from ``EXTENSIONS`` both lines printed the key.
"""

from __future__ import annotations

import logging
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import crawl_args, run_scrapy
from tests.helpers import processes
from tests.servers.virustotal import FakeVirusTotal, build_report, server_error
from trawl.common.secrets import register_secret

KEY = "vt-mask-key-5f0c2b7e91d4a6"
REPORT = build_report(
    undetected=[("http://example.com/login", "2020-01-02 03:04:05")], subdomains=["a.example.com"]
)
NO_PROGRESS = {"PROGRESS_INTERVAL": "-1"}
NO_EXTENSION = {"EXTENSIONS": '{"trawl.run.progress.Progress": null}'}


@pytest.fixture
def server() -> Iterator[FakeVirusTotal]:
    with FakeVirusTotal(keys={KEY}, reports={"example.com": REPORT}) as srv:
        yield srv


@pytest.mark.parametrize(
    "switched_off",
    [NO_PROGRESS, NO_EXTENSION, {**NO_PROGRESS, **NO_EXTENSION}],
    ids=["interval", "none", "both"],
)
@pytest.mark.parametrize("log_file", [False, True], ids=["stderr", "log-file"])
def test_the_key_never_shows_without_the_progress_extension(
    workdir: Path, server: FakeVirusTotal, switched_off: dict[str, str], log_file: bool
) -> None:
    server.faults = [server_error(500)]  # the retry line shows the request URL too
    settings = {
        "VIRUSTOTAL_BASE_URL": server.base_url,
        "LOG_LEVEL": "DEBUG",
        "RETRY_TIMES": 1,
        "RETRY_BACKOFF_BASE": 0.01,
        **switched_off,
    }
    if log_file:
        settings["LOG_FILE"] = "crawl.log"
    args = crawl_args("virustotal", "example.com", settings, "-o", "urls.jsonl", "-o", "urls.csv")
    result = run_scrapy(workdir, *args, env={"VIRUSTOTAL_API_KEY": KEY, "VIRUSTOTAL_API_KEYS": ""})
    log = (workdir / "crawl.log").read_text(encoding="utf-8") if log_file else result.stderr
    assert result.returncode == 0, log[-3000:]
    assert [r.params["apikey"] for r in server.requests] == [KEY, KEY]  # the key was sent, twice
    # The lines that used to leak it were written, masked: Crawled, Scraped from, Retrying, the stats.
    assert "Crawled (200) <GET " in log and "apikey=***&domain=example.com" in log
    assert "Scraped from <200 " in log and "Retrying <GET " in log and "Dumping Scrapy stats" in log
    assert KEY not in result.stderr and KEY not in result.stdout and KEY not in log
    files = [path for path in workdir.rglob("*") if path.is_file()]
    assert {"urls.jsonl", "urls.csv", "trawl.db"} <= {path.name for path in files}
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path.name


def test_the_key_never_shows_with_scrapys_own_log_handler(tmp_path: Path, server: FakeVirusTotal) -> None:
    """A script's CrawlerProcess keeps Scrapy's root handler, replaced for every crawler it makes."""
    script = textwrap.dedent(
        f"""
        from scrapy.crawler import CrawlerProcess
        from scrapy.settings import Settings
        import trawl.settings
        settings = Settings()
        settings.setmodule(trawl.settings)
        settings.setdict({{
            "VIRUSTOTAL_BASE_URL": {server.base_url!r}, "VIRUSTOTAL_API_KEY": {KEY!r},
            "LOG_LEVEL": "DEBUG", "PROGRESS_INTERVAL": -1, "EXTENSIONS": {{}},
            "RATE_LIMITS_ENABLED": False, "STORE_URI": "",
        }})
        process = CrawlerProcess(settings)
        process.crawl(process.spider_loader.load("virustotal"), domain="example.com")
        process.start()
        """
    )
    proc = processes.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert [r.params["apikey"] for r in server.requests] == [KEY]
    assert "Crawled (200) <GET " in proc.stderr and "apikey=***&domain=example.com" in proc.stderr, (
        proc.stderr
    )
    assert KEY not in proc.stderr and KEY not in proc.stdout


def test_a_handler_made_after_the_key_was_registered_masks_it_too(tmp_path: Path) -> None:
    secret = "trawl-unit-secret-93b1"
    register_secret(secret)
    path = tmp_path / "late.log"
    handler = logging.FileHandler(path, encoding="utf-8")  # no filter of trawl's on it
    logger = logging.getLogger("tests.masking.late")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("GET %s", f"http://vt.test/report?apikey={secret}")
        try:
            raise ValueError(f"bad key {secret}")
        except ValueError:
            logger.exception("failed", stack_info=True)
    finally:
        logger.removeHandler(handler)
        handler.close()
    text = path.read_text(encoding="utf-8")
    assert "apikey=***" in text and "ValueError: bad key ***" in text
    assert secret not in text
