"""``trawl schedule add|list|remove`` against a stand-in scrapyd that wants basic auth.

What it sends, how it authenticates, that the password never shows, and
that every failure is one ``trawl: error:`` line. The same command against a
real scrapyd: tests/test_scrapyd_schedules.py.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import processes
from tests.servers.local import Answer, LocalServer, SeenRequest

PASSWORD = "s3cret-horse"
SCHEDULE = {
    "project": "trawl",
    "name": "nightly",
    "spider": "wayback",
    "cron": "0 3 * * *",
    "every": None,
    "tz": "Europe/Paris",
    "next_run": "2026-12-02T02:00:00.000+00:00",
    "last_run": None,
    "last_job": None,
    "last_outcome": None,
}


class FakeScrapyd(LocalServer):
    """Answers the three schedule endpoints; 401 without ``admin:PASSWORD``."""

    def __init__(self) -> None:
        self.seen: list[SeenRequest] = []

    def answer(self, request: SeenRequest) -> Answer:
        self.seen.append(request)
        token = base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
        if request.headers.get("authorization") != f"Basic {token}":
            return 401, b"Unauthorized", {"WWW-Authenticate": 'Basic realm="Scrapyd"'}
        endpoint = request.path.rsplit("/", 1)[-1]
        if endpoint == "listschedules.json":
            body = {"status": "ok", "schedules": [SCHEDULE]}
        elif endpoint == "addschedule.json":
            if "name=taken" in request.raw_body.decode():
                body = {"status": "error", "message": "name 'taken' is taken"}
            else:
                body = {"status": "ok", "schedule": SCHEDULE}
        elif endpoint == "delschedule.json":
            body = {"status": "ok", "removed": "nightly"}
        else:
            return 404, b"No Such Resource", {}
        return 200, json.dumps(body).encode(), {"Content-Type": "application/json"}


@pytest.fixture
def scrapyd() -> Iterator[FakeScrapyd]:
    with FakeScrapyd() as server:
        yield server


def trawl(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ("SCRAPYD_AUTH", "SCRAPY_SETTINGS_MODULE")}
    return processes.run(
        [sys.executable, "-m", "trawl.cli", "schedule", *args],
        cwd=tmp_path,
        env={**full_env, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def form(request: SeenRequest) -> list[tuple[str, str]]:
    from urllib.parse import parse_qsl

    return parse_qsl(request.raw_body.decode())


def assert_one_error_line(result: subprocess.CompletedProcess[str], status: int, *words: str) -> None:
    assert result.returncode == status, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("trawl: error: "), result.stderr
    assert "Traceback" not in result.stderr and PASSWORD not in result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_add_sends_what_addschedule_json_takes(scrapyd: FakeScrapyd, tmp_path: Path) -> None:
    result = trawl(
        tmp_path,
        "add",
        "nightly",
        "wayback",
        "--cron",
        "0 3 * * *",
        "--tz",
        "Europe/Paris",
        "-a",
        "domain=example.com",
        "-a",
        "subs=false",
        "--setting",
        "LOG_LEVEL=DEBUG",
        "--url",
        scrapyd.base_url,
        "--auth",
        f"admin:{PASSWORD}",
    )
    assert result.returncode == 0, result
    assert result.stdout == (
        "added nightly: wayback at cron '0 3 * * *' (Europe/Paris), next run 2026-12-02T02:00:00.000+00:00\n"
    )
    [request] = scrapyd.seen
    assert (request.method, request.path) == ("POST", "/addschedule.json")
    assert form(request) == [
        ("project", "trawl"),
        ("spider", "wayback"),
        ("name", "nightly"),
        ("cron", "0 3 * * *"),
        ("tz", "Europe/Paris"),
        ("setting", "LOG_LEVEL=DEBUG"),
        ("domain", "example.com"),
        ("subs", "false"),
    ]


def test_list_and_remove_with_auth_from_the_environment(scrapyd: FakeScrapyd, tmp_path: Path) -> None:
    env = {"SCRAPYD_AUTH": f"admin:{PASSWORD}"}
    listed = trawl(tmp_path, "list", "--url", scrapyd.base_url, env=env)
    assert listed.returncode == 0, listed
    header, row = listed.stdout.splitlines()
    assert header.split() == ["name", "spider", "when", "next_run", "last_run", "last_job", "last_outcome"]
    assert row.split()[:6] == ["nightly", "wayback", "cron", "0", "3", "*"]
    assert "2026-12-02 02:00:00Z" in row
    as_json = trawl(tmp_path, "list", "--json", "--url", scrapyd.base_url, env=env)
    assert [json.loads(line) for line in as_json.stdout.splitlines()] == [SCHEDULE]
    removed = trawl(tmp_path, "remove", "nightly", "--project", "other", "--url", scrapyd.base_url, env=env)
    assert removed.returncode == 0 and removed.stdout == "removed nightly\n", removed
    assert form(scrapyd.seen[-1]) == [("project", "other"), ("name", "nightly")]
    assert scrapyd.seen[0].params == {"project": "trawl"}


def test_credentials_in_the_url_are_used_and_never_shown(scrapyd: FakeScrapyd, tmp_path: Path) -> None:
    url = scrapyd.base_url.replace("http://", f"http://admin:{PASSWORD}@")
    listed = trawl(tmp_path, "list", "--url", url)
    assert listed.returncode == 0, listed
    assert PASSWORD not in listed.stdout + listed.stderr
    refused = trawl(
        tmp_path, "add", "taken", "wayback", "--cron", "1 * * * *", "-a", "domain=a.com", "--url", url
    )
    assert_one_error_line(refused, 2, "scrapyd refused addschedule.json", "name 'taken' is taken")


def test_a_scrapyd_that_wants_auth_says_so(scrapyd: FakeScrapyd, tmp_path: Path) -> None:
    result = trawl(tmp_path, "list", "--url", scrapyd.base_url)
    assert_one_error_line(result, 2, "HTTP 401", "--auth USER:PASSWORD", "SCRAPYD_AUTH")
    wrong = trawl(tmp_path, "list", "--url", scrapyd.base_url, "--auth", "admin:nope-nope")
    assert_one_error_line(wrong, 2, "wrong user or password")
    assert "nope-nope" not in wrong.stderr


def test_scrapyd_without_the_services_is_named(tmp_path: Path) -> None:
    class Plain(LocalServer):
        def answer(self, request: SeenRequest) -> Answer:
            return 404, b"No Such Resource", {}

    with Plain() as plain:
        result = trawl(tmp_path, "list", "--url", plain.base_url)
    assert_one_error_line(result, 1, "has no listschedules.json", "docs/schedules.md")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((), ("one of add, list, remove",)),
        (("run",), ("not 'run'",)),
        (("add", "x"), ("usage: trawl schedule add NAME SPIDER",)),
        (("add", "x", "wayback"), ("either --cron EXPR or --every",)),
        (("add", "x", "wayback", "--every", "5s", "--cron", "* * * * *"), ("either --cron EXPR or --every",)),
        (("add", "x", "wayback", "--every"), ("--every: expected one argument",)),
        (("add", "x", "wayback", "--every", "5s", "-a", "domain"), ("-a takes NAME=VALUE",)),
        (("add", "x", "wayback", "--every", "5s", "--setting", "=1"), ("--setting takes NAME=VALUE",)),
        (("list", "--url", "localhost:6800"), ("--url takes scrapyd's http(s) URL",)),
        (("list", "--auth", "admin"), ("--auth takes USER:PASSWORD",)),
        (("remove",), ("usage: trawl schedule remove NAME",)),
        (("list", "--bogus"), ("unknown option --bogus",)),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    tmp_path: Path, args: tuple[str, ...], words: tuple[str, ...]
) -> None:
    assert_one_error_line(trawl(tmp_path, *args), 2, *words)


def test_an_unreachable_scrapyd_is_one_line_and_status_1(tmp_path: Path) -> None:
    result = trawl(tmp_path, "list", "--url", "http://127.0.0.1:9")
    assert_one_error_line(result, 1, "cannot reach scrapyd at http://127.0.0.1:9/")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("-a", "domain=not a domain"), ("not a valid domain name: 'not a domain'",)),
        (("-a", "domain=a.com", "-a", "domain=b.com"), ("-a domain= is given twice",)),
        (("-a", "domain=a.com", "-a", "bogus=1"), ("unknown argument for the wayback source: -a bogus=",)),
        (("-a", "domain=a.com", "--setting", "PROGRES_INTERVAL=5"), ("did you mean PROGRESS_INTERVAL?",)),
        (("-a", "domain=a.com", "--setting", 'RATE_LIMITS={"wayback": "x"}'), ("RATE_LIMITS['wayback']",)),
        (("-a", "domain=a.com", "--cron", "61 * * *"), ("cron is invalid", "not a five-field cron")),
        (("-a", "domain=a.com", "--cron", "61 * * * *"), ("cron is invalid", "out of range")),
        (("-a", "domain=a.com", "--every", "6x"), ("every is invalid: '6x'",)),
        (
            ("-a", "domain=a.com", "--every", "6h", "--tz", "Mars/Olympus"),
            ("unknown time zone 'Mars/Olympus'",),
        ),
        (("down", "-a", "domain=a.com", "--cron", "61 * * *"), ("cron is invalid",)),
        (("down", "-a", "domain=a.com", "--every", "6x"), ("every is invalid: '6x'",)),
        (("down", "-a", "domain=not a domain"), ("not a valid domain name",)),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else value,
)
def test_a_job_that_could_only_fail_is_refused_before_scrapyd_is_asked(
    scrapyd: FakeScrapyd, tmp_path: Path, args: tuple[str, ...], words: tuple[str, ...]
) -> None:
    when = () if "--cron" in args or "--every" in args else ("--every", "6h")
    url = "http://127.0.0.1:9" if "down" in args else scrapyd.base_url  # down: nothing listens
    args = tuple(arg for arg in args if arg != "down")
    result = trawl(
        tmp_path, "add", "nightly", "wayback", *when, *args, "--url", url, "--auth", f"admin:{PASSWORD}"
    )
    assert_one_error_line(result, 2, *words)
    assert scrapyd.seen == []


def test_all_and_a_spider_only_scrapyd_knows_are_checked_as_far_as_they_can_be(
    scrapyd: FakeScrapyd, tmp_path: Path
) -> None:
    auth = ("--url", scrapyd.base_url, "--auth", f"admin:{PASSWORD}")
    unknown = trawl(
        tmp_path, "add", "n", "all", "--every", "6h", "-a", "domain=a.com", "-a", "sources=nope", *auth
    )
    assert_one_error_line(unknown, 2, "unknown source 'nope'")
    assert scrapyd.seen == []
    theirs = trawl(tmp_path, "add", "n", "their_spider", "--every", "6h", "-a", "anything=1", *auth)
    assert theirs.returncode == 0, theirs  # scrapyd knows its project's spiders; the fake says yes
    assert len(scrapyd.seen) == 1
