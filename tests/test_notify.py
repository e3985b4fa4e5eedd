"""Notifications when a run ends: hook, payloads, NOTIFY_ON, secrets, slow receivers.

Real ``scrapy crawl`` runs against the fake CDX server post to a local
receiver (tests/servers/receiver.py) that logs each request's path, headers
and JSON body: the payloads are checked whole, for every kind.
"""

from __future__ import annotations

import json
import re
import sqlite3
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import CrawlResult
from tests.helpers.notify import URLS, crawl, warnings, wayback
from tests.servers.otx import FakeOtxServer, OtxUrl
from tests.servers.receiver import FakeReceiver
from trawl.notify.messages import message_text
from trawl.run.summary import RunSummary, SourceCounts

SLACK_SECRET = "SLACKSECRETxq7Zk2pWm9"
DISCORD_SECRET = "DiscordTokenAbc123xyz789"
TELEGRAM_TOKEN = "123456789:TelegramSecretQwErTy"
HOOK_TOKEN = "hooktoken-5f1e9a"
SECRETS = (SLACK_SECRET, DISCORD_SECRET, TELEGRAM_TOKEN, TELEGRAM_TOKEN.split(":")[1], HOOK_TOKEN)


def receivers(recv: FakeReceiver) -> str:
    base = recv.base_url
    return json.dumps(
        [
            f"{base}/hook?token={HOOK_TOKEN}",
            f"slack+{base}/services/T0123ABCD/B0456EFGH/{SLACK_SECRET}",
            f"discord+{base}/api/webhooks/987654321/{DISCORD_SECRET}",
            f"telegram://{TELEGRAM_TOKEN}@-100777",
        ]
    )


def run_row(workdir: Path) -> tuple[str, str]:
    with sqlite3.connect(workdir / "trawl.db") as con:
        return con.execute("SELECT run_id, job FROM runs ORDER BY run DESC LIMIT 1").fetchone()


def test_every_kind_gets_its_exact_payload_and_no_secret_is_shown(workdir: Path) -> None:
    with wayback() as server, FakeReceiver() as recv:
        result = crawl(
            workdir,
            server,
            NOTIFY_URLS=receivers(recv),
            NOTIFY_MAX_URLS=2,
            TELEGRAM_API_BASE_URL=recv.base_url,
            LOG_FILE="crawl.log",
            LOG_LEVEL="DEBUG",
        )
    assert result.returncode == 0, result.stderr[-3000:]
    by_path = {r.path: r for r in recv.requests}
    slack_path = f"/services/T0123ABCD/B0456EFGH/{SLACK_SECRET}"
    discord_path = f"/api/webhooks/987654321/{DISCORD_SECRET}"
    telegram_path = f"/bot{TELEGRAM_TOKEN}/sendMessage"
    assert sorted(by_path) == sorted(["/hook", slack_path, discord_path, telegram_path])
    assert by_path["/hook"].params == {"token": HOOK_TOKEN}
    for request in recv.requests:
        assert request.method == "POST"
        assert request.headers["content-type"] == "application/json"
        assert request.headers["user-agent"].startswith("trawl/")

    text = "\n".join(
        [
            "trawl: example.com: complete, 3 new URLs",
            "wayback: complete, 3 URLs, 3 new, 0 errors",
            "New URLs:",
            "https://example.com/a",
            "https://example.com/b",
            "... and 1 more",
        ]
    )
    assert by_path[slack_path].body == {"text": text}
    assert by_path[discord_path].body == {"content": text}
    assert by_path[telegram_path].body == {
        "chat_id": "-100777",
        "text": text,
        "disable_web_page_preview": True,
    }

    run_id, job = run_row(workdir)
    log = (workdir / "crawl.log").read_text()
    logged = CrawlResult(0, "", log, workdir)  # the stats dump went to LOG_FILE
    posted = by_path["/hook"].body
    source = posted["sources"][0]
    assert isinstance(source["duration"], float) and source["duration"] >= 0
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", posted["started_at"])
    assert posted["started_at"] <= posted["finished_at"]
    assert posted == {
        "event": "trawl.run_finished",
        "domain": "example.com",
        "job_id": run_id,
        "outcome": "complete",
        "exit_status": 0,
        "started_at": posted["started_at"],
        "finished_at": posted["finished_at"],
        "sources": [
            {
                "source": "wayback",
                "run_id": run_id,
                "outcome": "complete",
                "requests": int(logged.stat("downloader/request_count") or -1),
                "pages": int(logged.stat("trawl/pages") or -1),
                "urls": 3,
                "new_urls": 3,
                "errors": 0,
                "duration": source["duration"],
            }
        ],
        "new_count": 3,
        "new_urls": ["https://example.com/a", "https://example.com/b"],
        "more_new_urls": 1,
        "store": f"sqlite:///{(workdir / 'trawl.db').resolve()}",
    }
    assert job == run_id  # a single-source crawl is a job of its own

    assert "notify: slack (127.0.0.1:" in log and "notified (HTTP 200)" in log
    with sqlite3.connect(workdir / "trawl.db") as con:
        stats = " ".join(row[0] for row in con.execute("SELECT stats FROM runs"))
    for secret in SECRETS:
        assert secret not in result.stderr, secret
        assert secret not in result.stdout, secret
        assert secret not in log, secret
        assert secret not in stats, secret


def test_crawl_all_sends_one_notification_for_every_source(workdir: Path) -> None:
    otx_urls = [OtxUrl("https://example.com/otx", "2021-01-01T00:00:00")]
    with wayback() as server, FakeOtxServer(urls=otx_urls) as otx, FakeReceiver() as recv:
        result = crawl(
            workdir,
            server,
            "-a",
            "sources=wayback,otx",
            source="all",
            OTX_BASE_URL=otx.base_url,
            NOTIFY_URLS=f"{recv.base_url}/hook",
        )
    assert result.returncode == 0, result.stderr[-3000:]
    [posted] = recv.bodies()
    assert sorted(s["source"] for s in posted["sources"]) == ["otx", "wayback"]
    assert (posted["outcome"], posted["new_count"]) == ("complete", 4)
    assert posted["new_urls"] == sorted([*URLS, "https://example.com/otx"])
    with sqlite3.connect(workdir / "trawl.db") as con:
        jobs = {row[0] for row in con.execute("SELECT job FROM runs")}
    assert jobs == {posted["job_id"]}


def test_notify_on_new_always_and_error(workdir: Path) -> None:
    with wayback() as server, FakeReceiver() as recv:
        hook = f"{recv.base_url}/hook"
        crawl(workdir, server, NOTIFY_URLS=hook, NOTIFY_ON="new")
        assert [b["new_count"] for b in recv.bodies()] == [3]
        again = crawl(workdir, server, NOTIFY_URLS=hook, NOTIFY_ON="new")
        assert again.returncode == 0
        assert len(recv.requests) == 1  # nothing new: no message
        crawl(workdir, server, NOTIFY_URLS=hook, NOTIFY_ON="error")
        assert len(recv.requests) == 1  # complete: no message
        crawl(workdir, server, NOTIFY_URLS=hook)  # always (the default)
        zero = recv.bodies()[-1]
        assert (zero["new_count"], zero["new_urls"], zero["outcome"]) == (0, [], "complete")
    with FakeReceiver() as recv:
        failed = crawl(workdir, None, NOTIFY_URLS=f"{recv.base_url}/hook", NOTIFY_ON="new,error")
    assert failed.returncode == 1
    [body] = recv.bodies()
    assert (body["outcome"], body["exit_status"], body["new_count"]) == ("failed", 1, 0)
    assert body["sources"][0]["errors"] >= 1


def test_zero_new_urls_text_says_so(workdir: Path) -> None:
    with wayback() as server, FakeReceiver() as recv:
        crawl(workdir, server)
        crawl(workdir, server, NOTIFY_URLS=f"slack+{recv.base_url}/s")
    assert recv.bodies() == [
        {"text": "trawl: example.com: complete, 0 new URLs\nwayback: complete, 3 URLs, 0 new, 0 errors"}
    ]


def test_a_receiver_that_is_down_is_one_warning(workdir: Path) -> None:
    with wayback() as server:
        started = time.monotonic()
        result = crawl(workdir, server, NOTIFY_URLS=f"http://127.0.0.1:9/hook?token={HOOK_TOKEN}")
        elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-3000:]
    [line] = warnings(result)
    assert "notify: webhook (127.0.0.1:9):" in line and "refused" in line.lower()
    assert HOOK_TOKEN not in result.stderr
    assert elapsed < 60


def test_a_slow_receiver_delays_the_end_by_the_timeout_at_most(workdir: Path) -> None:
    with wayback() as server, FakeReceiver(delay=60) as slow, FakeReceiver() as fast:
        result = crawl(
            workdir, server, NOTIFY_URLS=f"{slow.base_url}/slow,{fast.base_url}/fast", NOTIFY_TIMEOUT=1
        )
        ended = time.monotonic()
    assert result.returncode == 0, result.stderr[-3000:]
    [line] = warnings(result)
    assert f"notify: webhook (127.0.0.1:{slow.base_url.rsplit(':', 1)[1]}) did not answer within 1 s" in line
    assert len(fast.requests) == 1  # sent at the same time, not after the slow one
    # From the post to the end of the process: the timeout and Python's exit steps, far below the
    # receiver's 60 s; not the interpreter's teardown, over 2 s when loaded (trawl.common.exiting).
    assert ended - slow.arrivals[0] < 1 + 3


def test_a_plugin_that_raises_is_one_warning(workdir: Path) -> None:
    (workdir / "faulty_notifier.py").write_text(
        textwrap.dedent(
            """
            from trawl import hookimpl

            @hookimpl
            def trawl_run_finished(summary):
                raise RuntimeError(f"cannot post about {summary.domain}")
            """
        )
    )
    with wayback() as server, FakeReceiver() as recv:
        result = crawl(
            workdir, server, TRAWL_PLUGINS='{"faulty_notifier": true}', NOTIFY_URLS=f"{recv.base_url}/h"
        )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if "trawl_run_finished failed" in line]
    assert len(lines) == 1 and "RuntimeError: cannot post about example.com" in lines[0]
    assert len(recv.requests) == 1  # the built-in notifier still ran


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (f"ftp://host/{HOOK_TOKEN}", "NOTIFY_URLS: ftp:// is not a kind trawl can notify"),
        (f"teams+https://host/{HOOK_TOKEN}", "NOTIFY_URLS: teams+https:// is not a kind trawl can notify"),
        (
            f"telegram://{TELEGRAM_TOKEN}",
            "NOTIFY_URLS: a telegram entry takes the form telegram://TOKEN@CHAT_ID",
        ),
        ("[not json", "NOTIFY_URLS is not a valid JSON list"),
    ],
)
def test_a_bad_receiver_is_refused_in_one_line_without_its_secret(
    workdir: Path, value: str, message: str
) -> None:
    result = crawl(workdir, None, NOTIFY_URLS=value, TRAWL_LOG_ALL="False")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"trawl: error: {message}"), result.stderr
    for secret in SECRETS:
        assert secret not in result.stderr


def test_bad_notify_on_is_refused(workdir: Path) -> None:
    result = crawl(workdir, None, NOTIFY_ON="sometimes", TRAWL_LOG_ALL="False")
    assert result.returncode == 2
    assert result.stderr.startswith("trawl: error: NOTIFY_ON must be one or more of always, new, error")


def test_a_long_list_is_cut_to_the_receiver_limit() -> None:
    urls = tuple(f"https://example.com/{i:04d}/{'x' * 80}" for i in range(100))
    counts = SourceCounts("wayback", "r1", "complete", 10, 10, 500, 500, 0, 1.0)
    summary = RunSummary("example.com", "r1", "complete", 0, (counts,), 500, urls, "none", 0.0, 1.0)
    text = message_text(summary, 2000)
    assert len(text) <= 2000
    lines = text.splitlines()
    listed = [line for line in lines if line.startswith("https://")]
    assert listed == list(urls[: len(listed)]) and 10 < len(listed) < 100
    assert lines[-1] == f"... and {500 - len(listed):,} more"


def test_a_plugin_registers_a_receiver_kind_that_is_notified(workdir: Path) -> None:
    """A kind is a class a plugin registers, not a branch of an if-chain."""
    (workdir / "pager_notifier.py").write_text(
        textwrap.dedent(
            """
            from trawl import hookimpl
            from trawl.notify.receivers import ReceiverKind
            from trawl.settings_checks import Setting, text

            class PagerReceiver(ReceiverKind):
                name = "pager"
                settings_declared = {"PAGER_SEVERITY": Setting("low", text, "the page's severity")}

                @classmethod
                def payload(cls, receiver, summary):
                    severity = summary.settings.get("PAGER_SEVERITY")
                    return {"page": f"{summary.domain}: {summary.new_count} new", "severity": severity}

            @hookimpl
            def trawl_register_notifiers():
                return {"pager": PagerReceiver}
            """
        )
    )
    with wayback() as server, FakeReceiver() as recv:
        result = crawl(
            workdir,
            server,
            TRAWL_PLUGINS='{"pager_notifier": true}',
            NOTIFY_URLS=f"pager+{recv.base_url}/page/{HOOK_TOKEN}",
        )
    assert result.returncode == 0, result.stderr[-3000:]
    assert recv.bodies("/page/" + HOOK_TOKEN) == [{"page": "example.com: 3 new", "severity": "low"}]
    assert "notify: pager (127.0.0.1:" in result.stderr and HOOK_TOKEN not in result.stderr


def test_without_the_plugin_its_kind_is_refused(workdir: Path) -> None:
    result = crawl(workdir, None, NOTIFY_URLS="pager+https://pager.example/page", TRAWL_LOG_ALL="False")
    assert result.returncode == 2
    assert result.stderr.startswith(
        "trawl: error: NOTIFY_URLS: pager+https:// is not a kind trawl can notify"
    )
