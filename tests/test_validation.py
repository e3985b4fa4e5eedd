"""Bad settings and arguments are refused before anything is sent.

What a user sees is checked: one ``trawl: error:`` line naming the setting and
its valid form, exit status 2, and a fake server that received no request.
On the code before trawl.validation, a malformed ``RATE_LIMITS`` gave two
tracebacks from signal handlers and sent its requests ungated (exit 1), and
``PROGRESS_INTERVAL=abc`` ended in asyncio's "Task exception was never retrieved".
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import crawl_args, run_scrapy
from tests.helpers import processes
from tests.helpers.settings_doc import trawl_settings
from tests.helpers.validation import QUIET, SOURCES, refused, trawl_defaults
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from trawl.errors import TrawlUsageError
from trawl.pipeline.manager import plugin_manager_from_settings
from trawl.settings_checks import text
from trawl.stores.registry import describe_store_uri
from trawl.validation import all_checks, validate_settings


@pytest.fixture(scope="module")
def server() -> Iterator[FakeCdxServer]:
    with FakeCdxServer([make_capture("https://example.com/a", "20200101000000")]) as srv:
        yield srv


# --- item 1: politeness settings fail closed -------------------------------------------------

POLITENESS = [
    ('RATE_LIMITS={"wayback": "fast"}', "RATE_LIMITS['wayback'] must be N requests per T seconds"),
    ("RATE_LIMITS=wayback:30/60s", 'RATE_LIMITS must be a JSON object by source, e.g. {"wayback": "30/60s"}'),
    ('SOURCE_CONCURRENCY={"wayback": "lots"}', "SOURCE_CONCURRENCY['wayback'] must be a whole number"),
    ('RATE_LIMITS={"waybak": "30/60s"}', "RATE_LIMITS names no source 'waybak' (known: commoncrawl,"),
    ('RETRY_LIMITS={"wayback": "x"}', "RETRY_LIMITS['wayback'] must be a whole number (at least 0)"),
    ("RETRY_TIMES=three", "RETRY_TIMES must be a whole number (at least 0), got 'three'"),
    ("RETRY_BACKOFF_BASE=-1", "RETRY_BACKOFF_BASE must be a number of seconds (at least 0), got '-1'"),
    ("RETRY_MAX_PAUSE=soon", "RETRY_MAX_PAUSE must be a number of seconds"),
    ("PROXY_MAX_TRIES=0", "PROXY_MAX_TRIES must be a whole number (at least 1)"),
    ("PROXY_BAN_STATUSES=403,forbidden", "PROXY_BAN_STATUSES must be a whole number from 100 to 599"),
    ("AUTOTHROTTLE_TARGET_CONCURRENCY=0", "AUTOTHROTTLE_TARGET_CONCURRENCY must be a number (above 0)"),
    ("AUTOTHROTTLE_MAX_DELAY=long", "AUTOTHROTTLE_MAX_DELAY must be a number of seconds"),
    ("RATE_LIMITS_ENABLED=maybe", "RATE_LIMITS_ENABLED must be True or False"),
    ("CONCURRENT_REQUESTS_PER_DOMAIN=many", "CONCURRENT_REQUESTS_PER_DOMAIN must be a whole number"),
]


@pytest.mark.parametrize("source", ["wayback", "all"])
@pytest.mark.parametrize(("setting", "message"), POLITENESS, ids=[s for s, _ in POLITENESS])
def test_a_bad_politeness_setting_sends_nothing(
    workdir: Path, server: FakeCdxServer, source: str, setting: str, message: str
) -> None:
    server.clear_requests()
    extra = ["-a", "sources=wayback"] if source == "all" else []
    # The gates and AutoThrottle stay on, as a user has them (the suite's default turns them off).
    on = {
        "RATE_LIMITS_ENABLED": "True",
        "AUTOTHROTTLE_ENABLED": "True",
        "WAYBACK_BASE_URL": server.base_url,
        **QUIET,
    }
    name, _, value = setting.partition("=")
    on[name] = value
    result = run_scrapy(workdir, *crawl_args(source, "example.com", on, *extra))
    refused(result, server, message)


def test_a_script_that_bypasses_the_command_sends_nothing_either(
    tmp_path: Path, server: FakeCdxServer
) -> None:
    """scrapyd and scripts build crawlers themselves: the spider's from_crawler refuses the setting."""
    server.clear_requests()
    script = textwrap.dedent(
        f"""
        from scrapy.crawler import CrawlerProcess
        from scrapy.settings import Settings
        import trawl.settings
        settings = Settings()
        settings.setmodule(trawl.settings)
        settings.set("WAYBACK_BASE_URL", {server.base_url!r})
        settings.set("RATE_LIMITS", '{{"wayback": "fast"}}')
        settings.set("STORE_URI", "")
        process = CrawlerProcess(settings)
        process.crawl(process.spider_loader.load("wayback"), domain="example.com")
        process.start()
        """
    )
    proc = processes.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert "RATE_LIMITS['wayback'] must be N requests per T seconds" in proc.stderr, proc.stderr[-3000:]
    assert server.requests == []


# --- item 7: every setting and argument ---------------------------------------------------------

ISSUE_CASES = [
    (("-s", "PROGRESS_INTERVAL=abc"), "PROGRESS_INTERVAL must be a number of seconds, got 'abc'"),
    (("-s", 'TRAWL_PLUGINS={"no.such.mod": true}'), "cannot import plugin 'no.such.mod' from TRAWL_PLUGINS"),
    (("-s", 'TRAWL_PLUGINS_DISABLED=["url_filtr"]'), "TRAWL_PLUGINS_DISABLED names no plugin: url_filtr"),
    (("-s", 'RETRY_LIMITS={"wayback": -1}'), "RETRY_LIMITS['wayback'] must be a whole number (at least 0)"),
    (("-a", "filter_code=abc"), "-a filter_code= expects HTTP status codes of 3 digits"),
    (("-a", "match_code=200,2xx"), "-a match_code= expects HTTP status codes of 3 digits"),
    (("-s", "FILTER_CODE=404,gone"), "FILTER_CODE expects HTTP status codes of 3 digits"),
    (("-s", "LOG_LEVEL=LOUD"), "LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
    (("-s", "URLSCAN_PAGE_SIZE=0"), "URLSCAN_PAGE_SIZE must be a whole number from 1 to 10000"),
]


@pytest.mark.parametrize(("option", "message"), ISSUE_CASES, ids=[o[1] for o, _ in ISSUE_CASES])
def test_a_bad_setting_or_argument_is_one_line(
    workdir: Path, server: FakeCdxServer, option: tuple[str, str], message: str
) -> None:
    server.clear_requests()
    settings = {"WAYBACK_BASE_URL": server.base_url, **QUIET}
    result = run_scrapy(workdir, *crawl_args("wayback", "example.com", settings, *option))
    refused(result, server, message)


def test_a_status_code_in_a_config_file_is_checked_too(workdir: Path, server: FakeCdxServer) -> None:
    server.clear_requests()
    (workdir / "config.yml").write_text("FILTER_CODE: 404,30x\n")
    settings = {"WAYBACK_BASE_URL": server.base_url, **QUIET}
    result = run_scrapy(workdir, *crawl_args("wayback", "example.com", settings, "-a", "config=config.yml"))
    refused(result, server, "FILTER_CODE in config.yml expects HTTP status codes of 3 digits")


def test_a_store_in_a_missing_directory_is_refused_not_created(
    workdir: Path, server: FakeCdxServer, tmp_path: Path
) -> None:
    server.clear_requests()
    missing = tmp_path / "nonexistent" / "dir"
    uri = f"sqlite:///{missing / 'x.db'}"
    settings = {"WAYBACK_BASE_URL": server.base_url, "STORE_URI": uri, **QUIET}
    result = run_scrapy(workdir, *crawl_args("wayback", "example.com", settings))
    refused(result, server, f"STORE_URI {uri!r}: the directory {str(missing)!r} does not exist")
    assert not (tmp_path / "nonexistent").exists()
    every = run_scrapy(workdir, *crawl_args("all", "example.com", settings, "-a", "sources=wayback"))
    refused(every, server, f"STORE_URI {uri!r}: the directory {str(missing)!r} does not exist")


def test_the_store_is_logged_resolved_at_the_start(workdir: Path, server: FakeCdxServer) -> None:
    settings = {"WAYBACK_BASE_URL": server.base_url, **QUIET}
    result = run_scrapy(workdir, *crawl_args("wayback", "example.com", settings))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.splitlines()[0].endswith(f"INFO: store: sqlite:///{workdir.resolve() / 'trawl.db'}")


def test_credentials_in_a_store_uri_are_masked() -> None:
    pm = plugin_manager_from_settings(trawl_defaults())
    shown = describe_store_uri("elasticsearch+https://trawl:s3cret-pass@es.internal:9200", pm)
    assert shown == "elasticsearch+https://trawl:***@es.internal:9200"
    assert describe_store_uri("", pm).startswith("none")


# --- the registry of checks -----------------------------------------------------------------------


def test_every_trawl_setting_has_a_validator() -> None:
    """A setting added to trawl/settings.py without a check in trawl/validation.py fails here
    (a component's setting has its check in its declaration)."""
    missing = sorted(set(trawl_settings()) - set(all_checks(trawl_defaults())))
    assert missing == [], f"no validator in trawl.validation.SETTINGS for {', '.join(missing)}"


def test_the_defaults_pass() -> None:
    validate_settings(trawl_defaults(), sources=SOURCES)


#: A value each check refuses (text settings take any text and are not listed).
BAD = {
    "POSTGRES_OUTAGE_MAX": "-1",
    "STORE_URI": "mysql://db/trawl",
    "SQLITE_SYNCHRONOUS": "SOMETIMES",
    "SQLITE_CACHE_MB": "64MB",
    "POSTGRES_CONNECT_TIMEOUT": "0",
    "POSTGRES_SYNCHRONOUS_COMMIT": "sometimes",
    "BATCH_COALESCE_ROWS": "-1",
    "STORE_BACKLOG_ROWS": "-5",
    "SCRAPER_SLOT_MAX_ACTIVE_SIZE": "16MiB",
    "TRAWL_REDIS_URL": "http://127.0.0.1:6379",
    "QUEUE_HEARTBEAT": "0",
    "QUEUE_MAX_DEATHS": "0",
    "SPREAD_PAGES": "maybe",
    "SPREAD_HOLD": "-1",
    "BATCH_COALESCE_SECONDS": "0",
    "TRAWL_PLUGINS": "{not json",
    "TRAWL_PLUGINS_DISABLED": "dedup",
    "PROGRESS_INTERVAL": "abc",
    "TRAWL_LOG_JSON": "json",
    "TRAWL_LOG_ALL": "yes please",
    "LOG_LEVEL": "LOUD",
    "RATE_LIMITS": '{"wayback": "fast"}',
    "RATE_LIMITS_ENABLED": "maybe",
    "SOURCE_CONCURRENCY": '{"wayback": 0}',
    "RETRY_LIMITS": '{"wayback": -1}',
    "RETRY_BACKOFF_BASE": "x",
    "RETRY_BACKOFF_MAX": "-5",
    "RETRY_MAX_PAUSE": "inf",
    "RETRY_BAN_PAUSE": "0",
    "PROGRESS_STALL_AFTER": "soon",
    "SOURCE_DOWNLOAD_TIMEOUT": '{"otx": "slow"}',
    "DOWNLOAD_MAXSIZE": "64MB",
    "DOWNLOAD_WARNSIZE": "-1",
    "SOURCE_DOWNLOAD_MAXSIZE": '{"wayback": "big"}',
    "SOURCE_DOWNLOAD_WARNSIZE": '{"otx": 1.5}',
    "META_COPY_WARN_SKIP_KEYS": ["retry_times", 3],
    "RETRY_ENABLED": "sure",
    "RETRY_TIMES": "2.5",
    "RETRY_HTTP_CODES": "500,5xx",
    "PROXY_LIST": "socks5://127.0.0.1:1080",
    "PROXY_LIST_FILE": "/nonexistent/proxies.txt",
    "PROXY_BAN_STATUSES": "[403, 4000]",
    "PROXY_BACKOFF_BASE": "x",
    "PROXY_BACKOFF_MAX": "x",
    "PROXY_MAX_TRIES": "0",
    "AUTOTHROTTLE_ENABLED": "maybe",
    "AUTOTHROTTLE_START_DELAY": "-1",
    "AUTOTHROTTLE_MAX_DELAY": "x",
    "AUTOTHROTTLE_TARGET_CONCURRENCY": "0",
    "CONCURRENT_REQUESTS": "0",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "many",
    "DOWNLOAD_TIMEOUT": "0",
    "WAYBACK_BASE_URL": "web.archive.org",
    "WAYBACK_DIALECT": "outback",
    "WAYBACK_PAGE_SIZE": "-1",
    "COMMONCRAWL_BASE_URL": "ftp://index.commoncrawl.org",
    "COMMONCRAWL_COLLINFO_TTL": "a day",
    "OTX_BASE_URL": "",
    "URLSCAN_BASE_URL": "urlscan.io",
    "URLSCAN_PAGE_SIZE": "10001",
    "URLSCAN_MAX_WAIT": "-1",
    "VIRUSTOTAL_BASE_URL": "virustotal",
    "VIRUSTOTAL_QUOTA_WAIT": "a minute",
    "INTELX_BASE_URL": "intelx",
    "CRATES_DUMP_URL": "static.crates.io/db-dump.tar.gz",
    "CRATES_BATCH_ROWS": "999",
    "CRATES_DUMP_MAX_BYTES": "1000",
    "CRATES_BASE_URL": "crates.io",
    "CRATES_API_PAGE_SIZE": "101",
    "CRATES_ARCHIVE_BASE_URL": "static.crates.io/archive/version-downloads",
    "FILES_STORE": "sftp://host/folder",
    "RESPONSES_MAX_BYTES": "0",
    "RESPONSES_MAX_RUN_BYTES": "-1",
    "MINING_PROCESSES": "-1",
    "MINING_BATCH_FILES": "0",
    "MINING_EXTRACTOR": "no.such.module.extract",
    "PROBE_MAX_BYTES": "100",
    "PROBE_HOST_CONCURRENCY": "0",
    "PROBE_SOFT404_DISTANCE": "65",
    "LIVE_MAX_BYTES": "100",
    "LIVE_JS_MAX_BYTES": "100",
    "LIVE_HOST_CONCURRENCY": "0",
    "LIVE_PATTERN_CAP": "0",
    "LIVE_SOFT404_DISTANCE": "65",
    "HTTP2_ENABLED": "maybe",
    "INTELX_FALLBACK_BASE_URL": "free.intelx.io",
    "INTELX_MAX_RESULTS": "0",
    "INTELX_PAGE_SIZE": "0",
    "INTELX_SEARCH_TIMEOUT": "-1",
    "INTELX_POLL_INTERVAL": "x",
    "INTELX_MAX_POLLS": "0",
    "GHOSTARCHIVE_BASE_URL": "ghostarchive.org",
    "FILTER_CODE": "404,301,abc",
    "MATCH_CODE": "2xx",
    "FILTER_MIME": ["text/css", 5],
    "MATCH_MIME": {"text/html": True},
    "FILTER_URL": 7,
    "FILTER_KEYWORDS": 7,
    "ELASTICSEARCH_VERIFY_CERTS": "perhaps",
    "ELASTICSEARCH_TIMEOUT": "0",
    "ELASTICSEARCH_INDEX_PREFIX": "Bad*Prefix",
    "ELASTICSEARCH_SHARDS": "0",
    "ELASTICSEARCH_REPLICAS": "one",
    "ELASTICSEARCH_BULK_DOCS": "0",
    "ELASTICSEARCH_RETRIES": "-1",
    "ELASTICSEARCH_BACKOFF": "x",
    "ELASTICSEARCH_BACKOFF_MAX": "x",
    "SCRAPYD_URL": "localhost:6800",
    "NOTIFY_URLS": "ftp://files.example.com/drop",
    "NOTIFY_ON": "sometimes",
    "NOTIFY_MAX_URLS": "all",
    "NOTIFY_TIMEOUT": "0",
    "TELEGRAM_API_BASE_URL": "api.telegram.org",
    "UMASK": "0o1777",
    "PROMETHEUS_PORT": "9090/metrics",
    "PROMETHEUS_ADDRESS": "http://0.0.0.0",
}


def test_every_check_that_can_refuse_has_a_bad_example() -> None:
    refusing = {name for name, check in all_checks(trawl_defaults()).items() if check is not text}
    assert sorted(refusing - set(BAD)) == []


@pytest.mark.parametrize("name", sorted(BAD))
def test_each_bad_value_is_refused_in_one_line(name: str) -> None:
    settings = trawl_defaults()
    settings.set(name, BAD[name], priority="cmdline")
    with pytest.raises(TrawlUsageError) as raised:
        validate_settings(settings, sources=SOURCES)
    message = str(raised.value)
    assert "\n" not in message
    assert name in message or "plugin" in message or "proxy" in message, message
