"""The crates alerts: ``trawl crates watch`` rules evaluated after each crates run, sent to a local receiver.

What a user sees: the bodies a receiver (tests/servers/receiver.py) got after each
run (each event once: a run that changes nothing sends nothing), in the form
each kind takes, and no token of ``NOTIFY_URLS`` in any line printed.
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.servers.crates_api import FakeCrate, FakeCratesApi, FakeVersion
from tests.servers.receiver import FakeReceiver

AGENT = "trawl-tests (https://example.org/trawl; tests@example.org)"
FAST_GATE = ("-s", "RATE_LIMITS_ENABLED=True", "-s", 'RATE_LIMITS={"crates": "100/1s"}')
HOOK_TOKEN = "hooktoken0123456789"
SLACK_SECRET = "slacksecretXYZ0123456789"
END = date(2026, 8, 31)


def history(before: int, after: int) -> list[tuple[str, int]]:
    """14 days: ``before`` a day for a week, then ``after`` a day for the week ending on :data:`END`."""
    return [((END - timedelta(days=13 - d)).isoformat(), before if d < 7 else after) for d in range(14)]


def crates() -> list[FakeCrate]:
    serde = FakeCrate(1, "serde", "2014-12-05T20:20:39Z", "2026-08-30T10:00:00Z", versions=[
        FakeVersion(11, "1.0.200", "2026-08-30T10:00:00Z", "2026-08-30T10:00:00Z", daily=history(100, 110),
                    dependencies=[{"id": 102, "crate": "tiny", "req": "=0.1.0"}]),
        FakeVersion(12, "1.0.199", "2026-08-01T10:00:00Z", "2026-08-02T10:00:00Z", yanked=True),
    ])  # fmt: skip
    tokio = FakeCrate(2, "tokio", "2016-07-01T00:00:00Z", "2026-08-31T09:00:00Z", versions=[
        FakeVersion(21, "1.40.0", "2026-08-31T09:00:00Z", "2026-08-31T09:00:00Z", daily=history(10, 50),
                    dependencies=[{"id": 100, "crate": "serde", "req": "^1.0"}]),
    ])  # fmt: skip
    tiny = FakeCrate(3, "tiny", "2020-01-01T00:00:00Z", "2020-01-02T00:00:00Z", versions=[
        FakeVersion(31, "0.1.0", "2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z", daily=history(5, 5)),
    ])  # fmt: skip
    return [serde, tokio, tiny]


def notify_urls(recv: FakeReceiver) -> str:
    return json.dumps(
        [f"{recv.base_url}/hook?token={HOOK_TOKEN}", f"slack+{recv.base_url}/services/T01/B02/{SLACK_SECRET}"]
    )


def crawl(workdir: Path, api: FakeCratesApi, recv: FakeReceiver, mode: str) -> CrawlResult:
    settings = {
        "CRATES_BASE_URL": api.base_url,
        "STORE_URI": "sqlite:///x.db",
        "CRATES_USER_AGENT": AGENT,
        "CRATES_WATCH_FILE": "watch.json",
        "NOTIFY_URLS": notify_urls(recv),
        "NOTIFY_ON": "error",  # no run summaries: the alerts are sent whatever NOTIFY_ON says
    }
    extra = ("-a", f"mode={mode}", "-a", "dependencies=true", *FAST_GATE)
    result = run_scrapy(workdir, *crawl_args("crates", None, settings, *extra))
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    for secret in (HOOK_TOKEN, SLACK_SECRET):
        assert secret not in result.stderr and secret not in result.stdout
    return result


def watch(workdir: Path, *args: str) -> CrawlResult:
    result = run_scrapy(workdir, "crates", "watch", *args, "-s", "CRATES_WATCH_FILE=watch.json")
    assert result.returncode == 0, result.stderr
    return result


def test_each_event_reaches_the_receivers_once(workdir: Path) -> None:
    watch(workdir, "add", "serde")
    watch(workdir, "growth", "3.0", "--window", "7")
    assert json.loads((workdir / "watch.json").read_text()) == {
        "crates": {"serde": ["version", "yanked", "dependency"]},
        "growth": {"factor": 3.0, "window": 7},
    }
    with FakeCratesApi(crates()) as api, FakeReceiver() as recv:
        # 1. The first load: serde's baseline (no alert for its history); tokio went x5 in a week.
        crawl(workdir, api, recv, "api")
        first = recv.bodies("/hook")
        assert [[(a["kind"], a["crate"]) for a in body["alerts"]] for body in first] == [
            [("growth", "tokio")]
        ]
        assert first[0]["event"] == "trawl.crates_alerts"
        assert first[0]["alerts"][0]["detail"] == "x5.0 in 7 days (70 -> 350)"
        slack = f"/services/T01/B02/{SLACK_SECRET}"
        assert recv.bodies(slack) == [
            {"text": "trawl: crates.io: 1 alert\ntokio: downloads x5.0 in 7 days (70 -> 350)"}
        ]

        # 2. serde publishes 1.0.201 (a new dependency on tokio) and yanks 1.0.200: the daily top-up.
        serde = api.crates["serde"]
        serde.updated_at = "2026-09-01T08:00:00Z"
        serde.versions[0].yanked = True
        serde.versions.append(FakeVersion(13, "1.0.201", "2026-09-01T08:00:00Z", "2026-09-01T08:00:00Z",
                              dependencies=[{"id": 103, "crate": "tokio", "req": "^1.40"}]))  # fmt: skip
        crawl(workdir, api, recv, "incremental")
        second = recv.bodies("/hook")[1:]
        assert [sorted((a["kind"], a["crate"], a["detail"]) for a in body["alerts"]) for body in second] == [
            [
                ("dependency", "serde", "tokio"),
                ("version", "serde", "1.0.201"),
                ("yanked", "serde", "1.0.200"),
            ]
        ]  # tokio still grows: not again
        assert recv.bodies(slack)[1:] == [{"text": second[0]["text"]}]
        assert second[0]["text"].startswith("trawl: crates.io: 3 alerts\n")

        # 3. Nothing changed: nothing is sent.
        crawl(workdir, api, recv, "incremental")
        assert len(recv.requests) == 4


def test_bad_rules_are_one_line(workdir: Path) -> None:
    (workdir / "watch.json").write_text('{"crates": {"serde": ["versions"]}}')
    result = run_scrapy(workdir, "crates", "watch", "check", "-s", "CRATES_WATCH_FILE=watch.json")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "trawl: error: the watch file 'watch.json': watch events are some of version, yanked, dependency,"
        " not ['versions']"
    )
    (workdir / "watch.json").unlink()
    bad = run_scrapy(workdir, "crates", "watch", "growth", "0.9", "-s", "CRATES_WATCH_FILE=watch.json")
    assert bad.returncode == 2 and bad.stderr.startswith("trawl: error: the growth factor must be")
