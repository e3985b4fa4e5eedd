"""``scrapy crawl virustotal`` end to end against a local VirusTotal v2 stand-in.

The first tests read the real recorded report (mihari's 2019 cassette for
``jppost-ge.top``) byte for byte; the others use reports of the same shape.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.helpers.virustotal import EXAMPLE_ALL, EXAMPLE_FILTERED, EXAMPLE_REPORT, KEY, NO_KEY_ENV
from tests.servers.virustotal import (
    FakeVirusTotal,
    html_200,
    malformed,
    over_quota,
    rate_limited,
    server_error,
)

OTHER_KEY = "vt-second-key-fedcba9876543210"

# What the recorded report holds once waymore's default filters ran: 19 rows,
# 6 dropped by FILTER_URL (/img, /css, .jpg, .png, .css), 2 duplicate URLs.
RECORDED_FILTERED = {
    "https://jppost-ge.top/",
    "http://jppost-ge.top/",
    "http://jppost-ge.top/jppost.apk",
    "http://jppost-ge.top/nh.html",
    "http://jppost-ge.top/static",
    "http://jppost-ge.top/static3",
    "http://jppost-ge.top/static3/picture",
    "http://jppost-ge.top:81/",
    "http://jppost-ge.top:81/fi.html",
    "http://jppost-ge.top:81/fr.html",
    "http://jppost-ge.top:81/jppost.apk",
}
RECORDED_ALL = RECORDED_FILTERED | {
    "http://jppost-ge.top/img",
    "http://jppost-ge.top/img/step",
    "http://jppost-ge.top/static/css",
    "http://jppost-ge.top:81/static3/picture/bnr_top_slide_ochugen2019.jpg",
    "http://jppost-ge.top:81/img/step/step5.png",
    "http://jppost-ge.top:81/static/css/sp_topstyle.css",
}


def crawl(
    workdir: Path,
    server: FakeVirusTotal,
    *extra: str,
    domain: str = "example.com",
    key: str | None = KEY,
    settings: dict | None = None,
) -> CrawlResult:
    merged: dict[str, object] = {
        "VIRUSTOTAL_BASE_URL": server.base_url,
        "RETRY_TIMES": 1,
        "RETRY_BACKOFF_BASE": 0.01,
    }
    merged.update(settings or {})
    env = dict(NO_KEY_ENV)
    if key is not None:
        env["VIRUSTOTAL_API_KEY"] = key
    return run_scrapy(workdir, *crawl_args("virustotal", domain, merged, *extra), env=env)


@pytest.fixture
def server():
    with FakeVirusTotal(keys={KEY, OTHER_KEY}, reports={"example.com": EXAMPLE_REPORT}) as srv:
        yield srv


# --- the recorded answer ------------------------------------------------------------------


def test_recorded_report_exact_urls_and_provenance(workdir: Path, server: FakeVirusTotal) -> None:
    result = crawl(workdir, server, "-o", "urls.txt", domain="jppost-ge.top")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    lines = result.lines("urls.txt")
    assert set(lines) == RECORDED_FILTERED and len(lines) == len(RECORDED_FILTERED)
    rows = result.stored()
    assert set(rows) == RECORDED_FILTERED
    # detected on 2019-07-04 17:57:11, undetected scan on 2019-07-03 07:40:50
    fi = rows["http://jppost-ge.top:81/fi.html"]
    assert (fi["first_seen"], fi["last_seen"], fi["captures"]) == ("20190703074050", "20190704175711", 2)
    assert fi["sources"] == "virustotal" and fi["host"] == "jppost-ge.top"
    assert fi["statuses"] == "" and fi["mimes"] == ""
    assert rows["https://jppost-ge.top/"]["first_seen"] == "20190806220014"
    assert result.stat("trawl/pages") == "1" and result.stat("trawl/captures") == "19"
    assert "17 detected URL(s), 2 undetected URL(s), 0 subdomain(s)" in result.stderr
    assert len(server.requests) == 1
    request = server.requests[0]
    assert request.path == "/vtapi/v2/domain/report"
    assert request.params == {"apikey": KEY, "domain": "jppost-ge.top"}


def test_recorded_report_without_filters(workdir: Path, server: FakeVirusTotal) -> None:
    result = crawl(workdir, server, "-a", "filters=false", "-o", "urls.txt", domain="jppost-ge.top")
    assert result.returncode == 0
    assert set(result.lines("urls.txt")) == RECORDED_ALL


# --- shapes of the report -----------------------------------------------------------------


def test_subdomains_become_urls_and_scope_applies(workdir: Path, server: FakeVirusTotal) -> None:
    result = crawl(workdir, server, "-a", "filters=false", "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(result.lines("urls.txt")) == EXAMPLE_ALL
    rows = result.stored()
    login = rows["http://example.com/login"]
    assert (login["first_seen"], login["last_seen"], login["captures"]) == (
        "20191231235959",
        "20200102030405",
        2,
    )
    sub = rows["http://dev.example.com/"]  # a subdomain: no scan date
    assert sub["first_seen"] is None and sub["captures"] == 1
    assert result.stat("trawl/filtered/out_of_scope") == "2"

    narrow = crawl(workdir, server, "-a", "filters=false", "-a", "subs=false", "-O", "narrow.txt")
    assert set(narrow.lines("narrow.txt")) == {
        "http://example.com/login",
        "https://www.example.com/admin/",
        "http://www.example.com/",
        "https://example.com/static/app.css",
    }


def test_unknown_domain_is_an_empty_result(workdir: Path, server: FakeVirusTotal) -> None:
    result = crawl(workdir, server, "-o", "urls.txt", domain="example.org")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.errors == []
    assert "VirusTotal has no report for example.org (response_code 0: Domain not found)" in result.stderr
    assert result.stat("trawl/outcome") == "complete"
    assert not (workdir / "urls.txt").exists() or result.lines("urls.txt") == []


# --- keys -----------------------------------------------------------------------------------


def test_missing_key_skips_the_source(workdir: Path, server: FakeVirusTotal) -> None:
    result = crawl(workdir, server, key=None)
    assert result.returncode == 1
    assert_no_traceback(result)
    skipped = [line for line in result.stderr.splitlines() if "skipped" in line and "WARNING" in line]
    assert skipped == [skipped[0]] and "virustotal: skipped: no API key (set VIRUSTOTAL_API_KEY" in skipped[0]
    assert result.errors == []
    assert result.stat("trawl/outcome") == "skipped-no-key"
    assert server.requests == []


def test_bad_key_is_one_error_line(workdir: Path, server: FakeVirusTotal) -> None:
    result = crawl(workdir, server, key="vt-wrong-key-000000000000")
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1
    assert "VirusTotal refused key #1 (HTTP 403" in result.errors[0]
    assert "vt-wrong-key" not in result.stderr
    assert result.stat("trawl/outcome") == "failed"


def test_refused_key_gives_way_to_the_next(workdir: Path, server: FakeVirusTotal) -> None:
    result = crawl(
        workdir,
        server,
        "-o",
        "urls.txt",
        key=None,
        settings={"VIRUSTOTAL_API_KEYS": f"vt-bad-key-1234,{KEY}"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "VirusTotal refused key #1 (HTTP 403); trying key #2" in result.stderr
    assert [r.params["apikey"] for r in server.requests] == ["vt-bad-key-1234", KEY]
    assert set(result.lines("urls.txt")) == EXAMPLE_FILTERED
    assert "vt-bad-key-1234" not in result.stderr


def test_key_never_appears_in_a_debug_log_or_the_store(workdir: Path, server: FakeVirusTotal) -> None:
    server.faults = [server_error(500)]  # the retry logs the request URL at DEBUG too
    by_setting = crawl(
        workdir,
        server,
        "-o",
        "urls.txt",
        key=None,
        settings={"LOG_LEVEL": "DEBUG", "VIRUSTOTAL_API_KEY": KEY},
    )
    assert by_setting.returncode == 0, by_setting.stderr[-3000:]
    assert "Retrying <GET" in by_setting.stderr and "apikey=***&domain=example.com" in by_setting.stderr
    by_env = crawl(workdir, server, "-O", "again.txt", settings={"LOG_LEVEL": "DEBUG"})
    refused = crawl(workdir, server, key=OTHER_KEY + "x", settings={"LOG_LEVEL": "DEBUG"})
    for result in (by_setting, by_env, refused):
        assert KEY not in result.stderr and OTHER_KEY not in result.stderr
        assert KEY not in result.stdout
    files = [p for p in workdir.iterdir() if p.is_file()]
    assert any(p.name == "trawl.db" for p in files)
    for path in files:
        data = path.read_bytes()
        assert KEY.encode() not in data and OTHER_KEY.encode() not in data, path.name


# --- quota and errors ----------------------------------------------------------------------


def test_over_quota_waits_then_asks_once_more(workdir: Path, server: FakeVirusTotal) -> None:
    server.faults = [over_quota()]
    started = time.monotonic()
    result = crawl(workdir, server, "-o", "urls.txt", settings={"VIRUSTOTAL_QUOTA_WAIT": 0.5})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "quota exceeded for key #1 (HTTP 204, empty body); asking once more in 0.5 s" in result.stderr
    assert len(server.requests) == 2
    assert time.monotonic() - started >= 0.5
    assert set(result.lines("urls.txt")) == EXAMPLE_FILTERED


def test_over_quota_twice_is_one_error(workdir: Path, server: FakeVirusTotal) -> None:
    server.faults = [over_quota(), over_quota()]
    result = crawl(workdir, server, settings={"VIRUSTOTAL_QUOTA_WAIT": 0})
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1
    assert (
        "quota exceeded: VirusTotal answered HTTP 204 with an empty body again for key #1" in result.errors[0]
    )
    assert len(server.requests) == 2
    assert result.stat("trawl/outcome") == "failed"


@pytest.mark.parametrize(
    ("faults", "message", "kind"),
    [
        ([rate_limited(), rate_limited()], "rate limited (HTTP 429) after 1 retries", "rate_limited"),
        ([server_error(502), server_error(502)], "HTTP 502 from http://127.0.0.1:", "http"),
        ([html_200()], "HTML page instead of a JSON domain report", "html"),
        ([malformed(), malformed()], "unreadable domain report", "malformed"),  # retried once, given up
    ],
)
def test_error_shapes(workdir: Path, server: FakeVirusTotal, faults: list, message: str, kind: str) -> None:
    server.faults = list(faults)
    result = crawl(workdir, server)
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1, result.errors
    assert message in result.errors[0]
    assert result.stat(f"trawl/errors/{kind}") == "1"
    assert KEY not in result.stderr


def test_5xx_is_retried(workdir: Path, server: FakeVirusTotal) -> None:
    server.faults = [server_error(503)]
    result = crawl(workdir, server, "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(server.requests) == 2
    assert "http://dev.example.com/" in result.lines("urls.txt")


# --- check_only and settings ----------------------------------------------------------------


def test_check_only_sends_nothing(workdir: Path, server: FakeVirusTotal) -> None:
    result = crawl(workdir, server, "-a", "check_only=true")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stat("trawl/estimate/requests") == "1"
    assert "a full run is 1 request" in result.stderr
    assert server.requests == []


def test_bad_quota_wait_setting(workdir: Path, server: FakeVirusTotal) -> None:
    result = crawl(workdir, server, settings={"VIRUSTOTAL_QUOTA_WAIT": "soon"})
    assert result.returncode == 2
    assert "trawl: error: VIRUSTOTAL_QUOTA_WAIT must be a number of seconds" in result.stderr
    assert server.requests == []


def test_unreachable_upstream(workdir: Path, server: FakeVirusTotal) -> None:
    result = run_scrapy(
        workdir,
        *crawl_args(
            "virustotal", "example.com", {"VIRUSTOTAL_BASE_URL": "http://127.0.0.1:9", "RETRY_TIMES": 1}
        ),
        env={**NO_KEY_ENV, "VIRUSTOTAL_API_KEY": KEY},
    )
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1
    assert (
        "cannot reach http://127.0.0.1:9/vtapi/v2/domain/report?apikey=***&domain=example.com"
        in result.errors[0]
    )
    assert KEY not in result.stderr
    assert result.stat("trawl/outcome") == "failed"
