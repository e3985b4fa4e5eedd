"""``scrapy crawl wayback`` end to end against a local Internet-Archive-style CDX server.

What a user sees is checked: URLs written by ``-o``, rows stored, lines logged,
requests the server received, the exit status.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import assert_no_traceback, run_scrapy
from tests.helpers.wayback import EVERYTHING, FILTERED_IN, captures, crawl
from tests.servers.ia_cdx import FakeCdxServer, make_capture, rate_limited, service_unavailable


@pytest.fixture
def server():
    with FakeCdxServer(captures(), lines_per_page=3) as srv:
        yield srv


def page_requests(server: FakeCdxServer) -> list[dict[str, list[str]]]:
    out = []
    for record in server.requests:
        params: dict[str, list[str]] = {}
        for key, value in record.params:
            params.setdefault(key, []).append(value)
        if "showNumPages" not in params:
            out.append(params)
    return out


# --- the main path ----------------------------------------------------------------------


def test_exact_url_set_then_rerun_adds_nothing(workdir: Path, server: FakeCdxServer) -> None:
    assert server.base_url.endswith("/web.archive.org")  # a path prefix that must be kept
    first = crawl(workdir, server, "-o", "urls.txt")
    assert first.returncode == 0, first.stderr[-3000:]
    assert_no_traceback(first)
    lines = first.lines("urls.txt")
    assert set(lines) == FILTERED_IN
    assert len(lines) == len(set(lines))  # each URL once, even when split over pages
    assert set(first.stored()) == FILTERED_IN
    assert first.stat("trawl/urls_new") == str(len(FILTERED_IN))
    assert all(r.path.startswith("/web.archive.org/cdx/search/cdx") for r in server.requests)

    second = crawl(workdir, server, "-O", "again.txt")
    assert second.returncode == 0
    assert set(second.lines("again.txt")) == FILTERED_IN
    assert second.stat("trawl/urls_new") == "0"
    assert "0 new this run" in second.stderr
    assert set(second.stored()) == FILTERED_IN


def test_provenance_is_stored(workdir: Path, server: FakeCdxServer) -> None:
    result = crawl(workdir, server)
    rows = result.stored()
    root = rows["http://example.com/"]
    assert (root["first_seen"], root["last_seen"], root["captures"]) == (
        "20100101000000",
        "20120101000000",
        2,
    )
    api = rows["https://api.example.com/v1/users?id=1&b=2"]
    assert api["statuses"] == "200,500"
    assert api["mimes"] == "application/json"
    assert api["sources"] == "wayback"
    assert api["host"] == "api.example.com"


def test_exports_one_record_per_line(workdir: Path, server: FakeCdxServer) -> None:
    result = crawl(workdir, server, "-o", "urls.jsonl", "-o", "urls.csv")
    assert result.returncode == 0
    records = [json.loads(line) for line in result.lines("urls.jsonl")]
    assert {r["url"] for r in records} == FILTERED_IN
    assert len(records) == len(FILTERED_IN)
    root = next(r for r in records if r["url"] == "http://example.com/")
    assert root["sources"] == ["wayback"] and root["captures"] == 2 and root["new"] is True
    csv_lines = result.lines("urls.csv")
    assert csv_lines[0].split(",")[:3] == ["url", "host", "sources"]
    assert {line.split(",")[0] for line in csv_lines[1:]} == FILTERED_IN
    assert len(csv_lines) == len(FILTERED_IN) + 1


# --- paging -----------------------------------------------------------------------------


def test_pages_requested_from_the_count(workdir: Path, server: FakeCdxServer) -> None:
    result = crawl(workdir, server)
    pages = server.num_pages({"url": "*.example.com/*"})
    assert result.stat("trawl/pages_total") == str(pages)
    requested = sorted(int(p["page"][0]) for p in page_requests(server) if "limit" not in p)
    # every counted page once, plus one past the end to check the count
    assert requested == list(range(pages + 1))


def test_paging_without_a_count(workdir: Path, server: FakeCdxServer) -> None:
    server.num_pages_status = 400
    result = crawl(workdir, server, "-o", "urls.txt")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "paging until an empty page" in result.stderr
    assert set(result.lines("urls.txt")) == FILTERED_IN


def test_wrong_count_hint_is_walked_past(workdir: Path, server: FakeCdxServer) -> None:
    server.num_pages_override = 1
    result = crawl(workdir, server, "-o", "urls.txt")
    assert result.returncode == 0
    assert set(result.lines("urls.txt")) == FILTERED_IN


def test_page_emptied_by_filters_is_not_the_end(workdir: Path) -> None:
    # page 1 holds only 404s: filtered server-side it is empty, yet page 2 has rows
    rows = [
        ("http://example.com/a", "20200101000000", "text/html", "200"),
        ("http://example.com/b", "20200101000000", "text/html", "404"),
        ("http://example.com/c", "20200101000000", "text/html", "404"),
        ("http://example.com/d", "20200101000000", "text/html", "200"),
    ]
    with FakeCdxServer(
        [make_capture(*r[:2], mimetype=r[2], statuscode=r[3]) for r in rows],
        lines_per_page=1,
        num_pages_status=400,
    ) as srv:
        result = crawl(workdir, srv, "-o", "urls.txt")
    assert set(result.lines("urls.txt")) == {"http://example.com/a", "http://example.com/d"}


def test_limit_requests(workdir: Path, server: FakeCdxServer) -> None:
    result = crawl(workdir, server, "-a", "limit_requests=2")
    assert len(page_requests(server)) == 2
    assert "limit_requests=2" in result.stderr
    assert result.returncode == 0


# --- filters ----------------------------------------------------------------------------


def test_filters_are_sent_server_side_intact(workdir: Path, server: FakeCdxServer) -> None:
    crawl(workdir, server)
    request = page_requests(server)[0]
    filters = request["filter"]
    assert "!statuscode:(404|301|302)" in filters
    mime_filter = next(f for f in filters if f.startswith("!mimetype:"))
    assert r"image/svg\+xml" in mime_filter  # '+' arrived as '+', not as a space
    assert "warc/revisit" in mime_filter
    assert request["fl"] == ["original,timestamp,statuscode,mimetype,digest,length"]
    assert "%2B" in server.requests[-1].raw_query or "%2B" in server.requests[1].raw_query


def test_filters_false_collects_everything(workdir: Path, server: FakeCdxServer) -> None:
    result = crawl(workdir, server, "-a", "filters=false", "-o", "urls.txt")
    assert set(result.lines("urls.txt")) == EVERYTHING
    assert all("filter" not in p for p in page_requests(server))


def test_filter_settings_args_and_config_file(workdir: Path, server: FakeCdxServer) -> None:
    config = workdir / "config.yml"
    config.write_text("FILTER_CODE: 500\nFILTER_MIME: text/plain\nFILTER_URL: /2008\n")
    result = crawl(workdir, server, "-a", f"config={config}", "-o", "urls.txt")
    urls = set(result.lines("urls.txt"))
    assert "https://sub.example.com/2008" not in urls  # FILTER_URL from the file
    assert "https://sub.example.com/gone" in urls  # 404 no longer filtered
    assert "https://sub.example.com/theme.css" not in urls  # mime text/plain from the file
    # the API URL had a 500 capture: filtered server-side, its 200 capture remains
    assert "https://api.example.com/v1/users?id=1&b=2" in urls

    by_setting = crawl(workdir, server, "-s", "FILTER_URL=", "-O", "s.txt")
    assert "https://sub.example.com/theme.css" in set(by_setting.lines("s.txt"))
    by_arg = crawl(workdir, server, "-a", "filter_url=/2021", "-O", "a.txt")
    got = set(by_arg.lines("a.txt"))
    assert "https://sub.example.com/2021" not in got
    assert "https://sub.example.com/theme.css" in got


def test_keywords_only(workdir: Path, server: FakeCdxServer) -> None:
    result = crawl(workdir, server, "-a", "keywords_only=true", "-o", "urls.txt")
    assert set(result.lines("urls.txt")) == {
        "http://www.example.com/login?next=%2Fhome",
        "https://api.example.com/v1/users?id=1&b=2",
        "https://deep.sub.example.com/app.js",
    }


def test_dates_inclusive_both_ends(workdir: Path, server: FakeCdxServer) -> None:
    result = crawl(workdir, server, "-a", "from_date=2008", "-a", "to_date=20201231", "-o", "u.txt")
    urls = set(result.lines("u.txt"))
    assert "https://sub.example.com/2008" in urls  # 2008-12-31 23:59:59, inclusive
    assert "https://sub.example.com/2021" not in urls
    request = page_requests(server)[0]
    assert request["from"] == ["2008"] and request["to"] == ["20201231"]


def test_subs_false(workdir: Path, server: FakeCdxServer) -> None:
    result = crawl(workdir, server, "-a", "subs=false", "-o", "u.txt")
    assert set(result.lines("u.txt")) == {
        "http://example.com/",
        "https://example.com/",
        "http://www.example.com/login?next=%2Fhome",
        "http://www.example.com/about",
    }
    assert page_requests(server)[0]["url"] == ["example.com/*"]


# --- what the CDX server really answers ----------------------------------------------------


def test_blocked_site_error_is_reported_as_blocked(workdir: Path, server: FakeCdxServer) -> None:
    server.blocked = True
    result = crawl(workdir, server)
    assert result.returncode == 1
    assert_no_traceback(result)
    assert len(result.errors) == 1
    assert "Blocked Site Error" in result.errors[0]
    assert "not an empty result" in result.errors[0]
    assert result.stat("trawl/outcome") == "blocked"


def test_html_page_with_status_200(workdir: Path, server: FakeCdxServer) -> None:
    server.html_200_pages = {0}
    result = crawl(workdir, server, "-o", "u.txt")
    assert result.returncode == 1
    assert_no_traceback(result)
    assert any("HTML page instead of CDX data" in e for e in result.errors)
    assert result.stat("trawl/outcome") == "partial"
    assert set(result.lines("u.txt")) < FILTERED_IN  # the other pages still stored


def test_malformed_answer(workdir: Path, server: FakeCdxServer) -> None:
    garbage = (200, b'[["original","timestamp"],\n["http://example.com/x", "2020', {})
    server.fail_pages = {0: [garbage, garbage]}
    result = crawl(workdir, server)
    assert result.returncode == 1
    assert_no_traceback(result)
    assert any("unreadable answer" in e for e in result.errors)


def test_truncated_page_is_fetched_again(workdir: Path, server: FakeCdxServer) -> None:
    server.truncate_pages = {1}
    result = crawl(workdir, server, "-o", "u.txt", settings={"RETRY_BACKOFF_BASE": 0.01})
    assert_no_traceback(result)
    # the fake server truncates every time: retried like a 5xx (RETRY_TIMES=1), then given up:
    # the row is lost, counted and said, and the run is partial
    assert [p for p in server.pages_requested() if p == 1] == [1, 1]
    assert result.stat("retry/reason_count/bad body") == "1"
    assert result.stat("trawl/bad_lines") == "1"
    gave_up = [e for e in result.errors if "CDX page 1: 1 unreadable line(s)" in e]
    assert len(gave_up) == 1 and "gave up after 1 retry" in gave_up[0]
    assert "retry 1 of 1" in result.stderr
    assert result.returncode == 1 and result.stat("trawl/outcome") == "partial"
    assert len(set(result.lines("u.txt"))) >= len(FILTERED_IN) - 1


def test_empty_result(workdir: Path) -> None:
    with FakeCdxServer([], lines_per_page=3) as srv:
        result = crawl(workdir, srv, "-o", "u.txt")
    assert result.returncode == 0
    assert result.stat("trawl/outcome") == "complete"
    assert not (workdir / "u.txt").exists() or result.lines("u.txt") == []


def test_5xx_and_429_are_retried(workdir: Path, server: FakeCdxServer) -> None:
    server.fail_pages = {0: [service_unavailable(), rate_limited()]}
    result = crawl(workdir, server, "-o", "u.txt", settings={"RETRY_TIMES": 3})
    assert result.returncode == 0, result.stderr[-2000:]
    assert set(result.lines("u.txt")) == FILTERED_IN


def test_unreachable_upstream(workdir: Path) -> None:
    result = crawl(workdir, None, base_url="http://127.0.0.1:9", settings={"RETRY_TIMES": 0})
    assert result.returncode == 1
    assert_no_traceback(result)
    assert any("cannot reach http://127.0.0.1:9/cdx/search/cdx" in e for e in result.errors)
    assert result.stat("trawl/outcome") == "failed"


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "message"),
    [
        (None, "missing domain"),
        ("", "missing domain"),
        ("1.2.3.4", "IP address"),
        ("example.invalidtld", "unknown top-level domain"),
        ("../etc/passwd", "not a domain"),
        ("a" * 300 + ".com", "label too long"),
    ],
)
def test_bad_domain_fails_at_once(workdir: Path, domain: str | None, message: str) -> None:
    result = crawl(workdir, None, domain=domain, base_url="http://127.0.0.1:9")
    assert result.returncode == 2
    assert_no_traceback(result)
    errors = [line for line in result.stderr.splitlines() if line.startswith("trawl: error:")]
    assert len(errors) == 1 and message in errors[0]
    assert "Spider opened" not in result.stderr  # nothing was started


@pytest.mark.parametrize("domain", ["https://example.com/some/page", "*.example.com", "EXAMPLE.com"])
def test_domain_forms_that_work(workdir: Path, server: FakeCdxServer, domain: str) -> None:
    result = crawl(workdir, server, "-o", "u.txt", domain=domain)
    assert result.returncode == 0
    assert set(result.lines("u.txt")) == FILTERED_IN
    if domain.startswith("https://"):
        assert "taking the host 'example.com'" in result.stderr


def test_unknown_source_and_argument(workdir: Path) -> None:
    unknown = run_scrapy(workdir, "crawl", "nosuchsource", "-a", "domain=example.com")
    assert unknown.returncode == 2
    assert "trawl: error: unknown source 'nosuchsource'" in unknown.stderr
    bad_arg = run_scrapy(workdir, "crawl", "wayback", "-a", "domain=example.com", "-a", "sub=no")
    assert bad_arg.returncode == 2
    assert "unknown argument for the wayback source: -a sub=" in bad_arg.stderr
    bad_base = run_scrapy(
        workdir, "crawl", "wayback", "-a", "domain=example.com", "-s", "WAYBACK_BASE_URL=ftp://x"
    )
    assert bad_base.returncode == 2 and "WAYBACK_BASE_URL must be an http(s) URL" in bad_base.stderr


def test_progress_line(workdir: Path) -> None:
    with FakeCdxServer(captures(), lines_per_page=1, latency=0.05) as srv:
        result = crawl(workdir, srv, settings={"PROGRESS_INTERVAL": 0.2, "CONCURRENT_REQUESTS_PER_DOMAIN": 1})
    progress = [line for line in result.stderr.splitlines() if "captures/s |" in line]
    assert progress, result.stderr[-2000:]
    assert "pages " in progress[0] and "unique URL" in progress[0]  # "1 unique URL", "2 unique URLs"
    summary = [line for line in result.stderr.splitlines() if "wayback: complete" in line]
    assert summary and "duplicates dropped" in summary[0] and "filtered" in summary[0]
