"""Recurring schedules in a real scrapyd (tests/servers/scrapyd.py) configured by the project's scrapyd.conf.

One scrapyd for the module, with trawl deployed to it once, and its ``[scrapyd]``
application and ``[services]`` taken from the project-root ``scrapyd.conf`` (the
file users copy). Jobs are wayback crawls of a fake CDX server (about 2.5 s each).

**No test depends on another.** Before and after each test the ``scrapyd`` fixture
brings that scrapyd back to what a fresh one shows: running (a test that failed
between ``stop`` and ``start`` left it down), no schedule in the table, no job pending
or running (each is cancelled and gone before the test starts). What a test says about
jobs is about the ids it saw, never about the length of scrapyd's lists, which hold
the jobs of the tests before it. So each test passes alone (``-k``) and in any order
(``-p random_order --random-order``).

**Nothing waits for a fixed time.** Every wait polls until the events a test asserts
have happened, with a deadline past which the same assertions fail and say why: the
5 s schedule's test ends once its second job has started, the first one having ended
(about 10 s after the schedule is added), where it used to watch a 20 s window.

**One scrapyd, poll_interval 5 s.** ``poll_interval`` is scrapyd's default 5 s here
(trawl's file sets 1) so that the drift measured includes what scrapyd's own poller
would add: a job that waited for that poller would start 0 to 5 s after its slot (the
poller's phase), past the 2.5 s bound about every other run. That costs the other tests
no time, so they share this scrapyd rather than use a second one with the file's 1 s: a
schedule's job never waits for the poller (the timer polls as it queues the job, and
scrapyd polls once as it starts, before the timer's first tick), and no test here queues
through ``schedule.json``. Measured, each test takes as long with 1 s as with 5 s; a
second scrapyd would add its start and a deploy (about 4 s) and save nothing.
"""

from __future__ import annotations

import configparser
import json
import math
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from urllib.request import urlopen

import pytest

from tests.conftest import FAST, ROOT
from tests.helpers import processes
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.scrapyd import PROJECT, ScrapydServer

#: Options of the launcher's own scrapyd.conf that the project's file must not override here.
LAUNCHER_OPTIONS = {"bind_address", "http_port", "eggs_dir", "logs_dir", "items_dir", "dbs_dir", "max_proc"}


def project_conf() -> dict[str, dict[str, str]]:
    """The project-root scrapyd.conf, as extra sections for the test launcher."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / "scrapyd.conf", encoding="utf-8")
    scrapyd = {key: value for key, value in parser.items("scrapyd") if key not in LAUNCHER_OPTIONS}
    scrapyd["poll_interval"] = "5.0"  # scrapyd's default: the drift measured is what a user would see
    return {"scrapyd": scrapyd, "services": dict(parser.items("services"))}


class Server(ScrapydServer):
    """The launcher plus the three schedule endpoints (answers with ``status: error`` are returned)."""

    def call(
        self, endpoint: str, fields: list[tuple[str, str]] | None = None, **params: str
    ) -> dict[str, Any]:
        if fields is None:
            return self._get(endpoint, **params)
        with urlopen(f"{self.url}{endpoint}", data=urlencode(fields).encode(), timeout=60) as response:
            return json.loads(response.read())

    def add(self, name: str, spider: str = "wayback", **fields: str) -> dict[str, Any]:
        settings = fields.pop("settings", {})
        form = [("project", PROJECT), ("spider", spider), ("name", name), *fields.items()]
        form += [("setting", f"{key}={value}") for key, value in dict(settings).items()]
        return self.call("addschedule.json", form)

    def schedules(self) -> dict[str, dict[str, Any]]:
        answer = self.call("listschedules.json")
        assert answer["status"] == "ok", answer
        return {schedule["name"]: schedule for schedule in answer["schedules"]}

    def remove(self, name: str) -> dict[str, Any]:
        return self.call("delschedule.json", [("project", PROJECT), ("name", name)])

    def clear(self) -> None:
        """Running again if it was stopped; every schedule removed, every job cancelled and gone."""
        if self.process is not None and self.process.poll() is not None:
            self.stop()  # it died: start it again
        if self.process is None:
            self.start()
        answer = self.call("listschedules.json")
        assert answer["status"] == "ok", answer
        for schedule in answer["schedules"]:
            form = [("project", schedule["project"]), ("name", schedule["name"])]
            assert self.call("delschedule.json", form)["status"] == "ok"
        self.wait_idle()

    def job_ids(self) -> set[str]:
        """Every job scrapyd lists, pending, running or finished."""
        return {job["id"] for jobs in self.jobs().values() if isinstance(jobs, list) for job in jobs}


@pytest.fixture(scope="module")
def cdx() -> Iterator[FakeCdxServer]:
    with FakeCdxServer([make_capture("http://example.com/a", "20200101000000")]) as server:
        yield server


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    conf = project_conf()
    assert conf["scrapyd"]["application"] == "trawl.scrapyd.app.application"
    with Server(tmp_path_factory.mktemp("scrapyd-schedules"), conf) as server:
        server.deploy(ROOT)
        yield server


@pytest.fixture
def scrapyd(deployed: Server) -> Iterator[Server]:
    """The module's scrapyd as a fresh one is: running, no schedule, no job pending or running."""
    deployed.clear()
    yield deployed
    deployed.clear()


def crawl_settings(cdx: FakeCdxServer, store: Path) -> dict[str, str]:
    return {"WAYBACK_BASE_URL": cdx.base_url, "STORE_URI": f"sqlite:///{store}", **FAST}


def local(text: str) -> float:
    """scrapyd's ``start_time``/``end_time`` (naive local time, ``str(datetime)``) as a timestamp."""
    return datetime.fromisoformat(text).timestamp()


def utc(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def ended(outcome: str) -> bool:
    """An outcome read back from scrapyd's launcher once the job's process is over."""
    return outcome == "finished" or outcome.startswith("failed: exit status")


def test_every_5s_fires_at_least_twice_in_20s_and_never_overlaps_itself(
    scrapyd: Server, cdx: FakeCdxServer, tmp_path: Path
) -> None:
    settings = crawl_settings(cdx, tmp_path / "often.db")
    answer = scrapyd.add("often", every="5s", domain="example.com", settings=settings)
    assert answer["status"] == "ok", answer
    added = utc(answer["schedule"]["created"])
    seen: dict[str, dict[str, Any]] = {}  # job -> the schedule as last listed with that job
    outcomes: list[str] = []

    def observed() -> bool:
        """All that is asserted below has happened: two jobs, each started, a running and an end outcome."""
        started = all(listed["last_started"] for listed in seen.values())
        return len(seen) >= 2 and started and "running" in outcomes and any(map(ended, outcomes))

    # Until then, or 25 s after the schedule was added (the two starts asserted within 20 s, and
    # time to see them): past that the assertions below fail and say what was seen.
    deadline = time.monotonic() + 25 - (time.time() - added)
    while not observed() and time.monotonic() < deadline:
        schedule = scrapyd.schedules()["often"]
        if schedule["last_job"]:
            seen[schedule["last_job"]] = schedule
        if schedule["last_outcome"] and schedule["last_outcome"] not in outcomes[-1:]:
            outcomes.append(schedule["last_outcome"])
        time.sleep(0.1)
    assert scrapyd.remove("often")["status"] == "ok"

    # Each job's start and end as scrapyd's listjobs.json has them; the last one's end is not
    # needed (the schedule is gone: no job comes after it), so it may still run (the fixture
    # cancels it).
    jobs = {job: scrapyd.wait_finished(job, timeout=120) for job in list(seen)[:-1]}
    jobs.update({job: scrapyd.wait_started(job, timeout=120) for job in list(seen)[-1:]})
    starts = sorted(
        (local(job["start_time"]), local(job["end_time"]) if job.get("end_time") else math.inf, jobid)
        for jobid, job in jobs.items()
    )
    assert len(starts) >= 2, (starts, outcomes)
    assert all(start - added <= 20 for start, _, _ in starts[:2]), (added, starts)
    for (_, end, first), (start, _, second) in zip(starts, starts[1:], strict=False):
        assert end <= start, f"job {second} started before job {first} ended: {starts}"
    # Drift: planned slot to the launcher's start of the process, as the schedule reports it
    # and as scrapyd's listjobs.json does.
    drifts = []
    for jobid, schedule in seen.items():
        planned = utc(schedule["last_planned"])
        drifts.append((round(local(jobs[jobid]["start_time"]) - planned, 3), schedule["last_drift"]))
    durations = [round(end - start, 1) for start, end, _ in starts[:-1]]
    print(
        f"\nschedule drift (listjobs start - planned, last_drift) in s: {drifts}; job durations {durations} s"
    )
    print(f"outcomes: {outcomes}")
    assert all(0 <= listed < 2.5 for listed, _ in drifts), drifts
    assert all(reported is None or 0 <= reported < 2.5 for _, reported in drifts), drifts
    # What became of each job is read back from scrapyd's launcher (its exit status).
    assert "running" in outcomes, outcomes
    assert any(map(ended, outcomes)), outcomes


def test_a_schedule_is_skipped_while_its_previous_job_runs(
    scrapyd: Server, cdx: FakeCdxServer, tmp_path: Path
) -> None:
    settings = crawl_settings(cdx, tmp_path / "busy.db")
    assert scrapyd.add("busy", every="1s", domain="example.com", settings=settings)["status"] == "ok"
    skipped, jobs = None, set()
    deadline = time.monotonic() + 30
    while skipped is None and time.monotonic() < deadline:
        schedule = scrapyd.schedules()["busy"]
        jobs.add(schedule["last_job"])
        if (schedule["last_outcome"] or "").startswith("skipped"):
            skipped = schedule["last_outcome"]
        time.sleep(0.05)
    assert scrapyd.remove("busy")["status"] == "ok"
    assert skipped is not None and "previous job" in skipped and skipped.endswith(("running", "pending"))
    running = [job for job in scrapyd.jobs()["running"] + scrapyd.jobs()["pending"] if job["id"] in jobs]
    assert len(running) <= 1


def test_schedules_survive_a_scrapyd_restart(scrapyd: Server, cdx: FakeCdxServer, tmp_path: Path) -> None:
    settings = crawl_settings(cdx, tmp_path / "nightly.db")
    first = scrapyd.add(
        "nightly", cron="0 3 * * *", tz="Europe/Paris", domain="example.com", settings=settings
    )
    assert first["status"] == "ok", first
    assert scrapyd.add("hourly", every="1h", domain="example.org")["status"] == "ok"
    before = scrapyd.schedules()
    scrapyd.restart()
    after = scrapyd.schedules()
    assert {"nightly", "hourly"} <= set(after)
    for name in ("nightly", "hourly"):
        assert after[name] == before[name]
    nightly = after["nightly"]
    assert nightly["cron"] == "0 3 * * *" and nightly["tz"] == "Europe/Paris"
    assert nightly["next_run"].endswith(("T02:00:00.000+00:00", "T01:00:00.000+00:00"))  # CET / CEST
    assert nightly["args"] == {"domain": "example.com"} and nightly["settings"] == settings
    for name in ("nightly", "hourly"):
        assert scrapyd.remove(name)["status"] == "ok"
    assert scrapyd.schedules() == {}


def test_runs_missed_while_scrapyd_was_down_run_once_on_start(
    scrapyd: Server, cdx: FakeCdxServer, tmp_path: Path
) -> None:
    settings = crawl_settings(cdx, tmp_path / "missed.db")
    assert scrapyd.add("missed", every="10m", domain="example.com", settings=settings)["status"] == "ok"
    before = scrapyd.job_ids()
    scrapyd.stop()
    # Down for an hour: the table says the next run was 60 minutes ago (7 slots since).
    hour_ago = datetime.now(timezone.utc) - timedelta(hours=1)
    with sqlite3.connect(scrapyd.dbs_dir / "_trawl_schedules.db") as db:
        db.execute(
            "UPDATE schedules SET created = ?, next_run = ? WHERE name = 'missed'",
            ((hour_ago - timedelta(minutes=10)).isoformat(), hour_ago.isoformat()),
        )
    scrapyd.start()
    deadline = time.monotonic() + 30
    while not (schedule := scrapyd.schedules()["missed"])["last_job"]:
        assert time.monotonic() < deadline, schedule
        time.sleep(0.05)
    assert utc(schedule["next_run"]) > time.time()  # the next slot after now, not a missed one
    scrapyd.wait_finished(schedule["last_job"], timeout=120)
    assert scrapyd.remove("missed")["status"] == "ok"
    jobs = scrapyd.jobs()
    assert scrapyd.job_ids() - before == {schedule["last_job"]}, jobs  # one job, not one per slot
    assert not jobs["running"] and not jobs["pending"], jobs
    log = (scrapyd.workdir / "scrapyd.stdout").read_text(errors="replace")
    assert "trawl/missed missed 6 run(s)" in log  # slots 60, 50 ... 0 minutes ago: 6 dropped, 1 run


def test_trawl_schedule_add_list_remove_against_scrapyd(scrapyd: Server, tmp_path: Path) -> None:
    def trawl(*args: str) -> subprocess.CompletedProcess[str]:
        return processes.run(
            [sys.executable, "-m", "trawl.cli", "schedule", *args, "--url", scrapyd.url],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    added = trawl("add", "cli", "wayback", "--every", "6h", "-a", "domain=example.com", "--setting", "X=1")
    assert added.returncode == 0 and added.stdout.startswith("added cli: wayback every 6h, next run "), added
    assert scrapyd.schedules()["cli"]["settings"] == {"X": "1"}
    listed = trawl("list")
    assert listed.returncode == 0, listed
    header, *rows = listed.stdout.splitlines()
    assert header.split()[0] == "name", listed.stdout
    assert [row.split()[:4] for row in rows] == [["cli", "wayback", "every", "6h"]], listed.stdout
    bad = trawl("add", "cli", "wayback", "--every", "1d", "-a", "domain=example.com")
    assert bad.returncode == 2 and bad.stderr.startswith(
        "trawl: error: scrapyd refused addschedule.json: name 'cli' is taken"
    )
    removed = trawl("remove", "cli")
    assert removed.returncode == 0 and "cli" not in scrapyd.schedules()


#: Bad input to addschedule.json, and a word of the error message (the field it names).
BAD = [
    ({"project": None}, "'project' parameter is required"),
    ({"spider": None}, "'spider' parameter is required"),
    ({"name": None}, "'name' parameter is required"),
    ({"name": " "}, "name is invalid"),
    ({"every": None}, "give either 'cron'"),
    ({"cron": "0 * * * *"}, "not both"),
    ({"every": "5"}, "every is invalid"),
    ({"every": "0s"}, "every is invalid"),
    ({"every": None, "cron": "0 */6 * *"}, "cron is invalid"),
    ({"every": None, "cron": "99 * * * *"}, "cron is invalid"),
    ({"tz": "Mars/Olympus"}, "tz is invalid"),
    ({"setting": "LOG_LEVEL"}, "setting is invalid"),
    ({"priority": "high"}, "priority is invalid"),
    ({"jobid": "abc"}, "jobid cannot be given"),
    ({"project": "nope"}, "project 'nope' not found"),
    ({"spider": "nope"}, "spider 'nope' not found"),
    ({"_version": "nope"}, "version 'nope' not found"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=[message for _, message in BAD])
def test_bad_input_to_addschedule_is_a_json_error_naming_the_field(
    scrapyd: Server, change: dict[str, str | None], message: str
) -> None:
    fields: dict[str, str | None] = {"project": PROJECT, "spider": "wayback", "name": "bad", "every": "5s"}
    fields.update(change)
    form = [(key, value) for key, value in fields.items() if value is not None]
    answer = scrapyd.call("addschedule.json", form)
    assert answer["status"] == "error", answer
    assert message in answer["message"], answer
    assert "\n" not in answer["message"] and "Traceback" not in answer["message"]
    assert "bad" not in scrapyd.schedules()


def test_a_name_is_taken_once_per_project_and_removing_an_unknown_one_says_so(scrapyd: Server) -> None:
    assert scrapyd.add("twice", every="1d", domain="example.com")["status"] == "ok"
    again = scrapyd.add("twice", every="1d", domain="example.com")
    assert again["status"] == "error" and "name 'twice' is taken" in again["message"]
    assert scrapyd.remove("twice")["status"] == "ok"
    gone = scrapyd.remove("twice")
    assert gone["status"] == "error" and "no schedule of that name" in gone["message"]


def test_the_services_without_the_timer_say_which_line_is_missing(tmp_path: Path) -> None:
    conf = project_conf()
    del conf["scrapyd"]["application"]  # scrapyd's own application: no schedule timer
    with Server(tmp_path / "scrapyd", conf) as plain:
        answer = plain.call("listschedules.json")
    assert answer["status"] == "error"
    assert "set application = trawl.scrapyd.app.application" in answer["message"]
