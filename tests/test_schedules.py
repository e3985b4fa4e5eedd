"""The rules of recurring schedules on a fake clock: next run, missed runs once, skip if running, tz.

The service runs against scrapyd's real scheduler, poller and SQLite queues
(a temporary ``dbs_dir``) with a stand-in launcher, and a Twisted ``Clock``
for time. tests/test_scrapyd_schedules.py runs them in a real scrapyd.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from scrapyd.config import Config
from scrapyd.interfaces import IPoller, ISpiderScheduler
from scrapyd.launcher import ScrapyProcessProtocol
from scrapyd.poller import QueuePoller
from scrapyd.scheduler import SpiderScheduler
from twisted.application.service import Application, Service
from twisted.internet import error
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from trawl.scrapyd.schedules import (
    UTC,
    Schedule,
    ScheduleError,
    check_cron,
    check_tz,
    due,
    first_run,
    format_every,
    next_run,
    parse_every,
)
from trawl.scrapyd.service import ScheduleService
from trawl.scrapyd.store import ScheduleStore, path_from_config

T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def every(seconds: int, created: datetime = T0, name: str = "s", **fields: object) -> Schedule:
    schedule = Schedule(
        project="demo",
        name=name,
        spider="wayback",
        created=created,
        next_run=created,
        every=seconds,
        **fields,
    )
    schedule.next_run = first_run(schedule)
    return schedule


def cron(expression: str, tz: str = "UTC", created: datetime = T0) -> Schedule:
    schedule = Schedule(
        project="demo", name="c", spider="wayback", created=created, next_run=created, cron=expression, tz=tz
    )
    schedule.next_run = first_run(schedule)
    return schedule


# --- next run -----------------------------------------------------------------------------------


def test_every_is_anchored_on_creation_so_a_late_tick_does_not_push_runs_back() -> None:
    schedule = every(600)
    assert schedule.next_run == T0 + timedelta(minutes=10)
    assert next_run(schedule, T0 + timedelta(minutes=10, seconds=3)) == T0 + timedelta(minutes=20)
    assert next_run(schedule, T0 + timedelta(minutes=20)) == T0 + timedelta(minutes=30)  # strictly after


def test_cron_is_read_in_utc_by_default() -> None:
    schedule = cron("0 */6 * * *")
    assert schedule.next_run == datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
    assert next_run(schedule, schedule.next_run) == datetime(2026, 12, 2, 0, 0, tzinfo=UTC)


def test_cron_follows_the_tz_field_across_daylight_saving_time() -> None:
    winter = cron("0 9 * * *", tz="Europe/Paris", created=datetime(2026, 3, 27, 10, 0, tzinfo=UTC))
    assert winter.next_run == datetime(2026, 3, 28, 8, 0, tzinfo=UTC)  # 09:00 CET
    assert next_run(winter, winter.next_run) == datetime(2026, 3, 29, 7, 0, tzinfo=UTC)  # 09:00 CEST
    new_york = cron("30 8 * * 1-5", tz="America/New_York", created=T0)  # a Tuesday
    assert new_york.next_run == datetime(2026, 12, 1, 13, 30, tzinfo=UTC)


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30), ("15m", 900), ("6h", 21600), ("1d", 86400)])
def test_every_takes_seconds_minutes_hours_days(text: str, seconds: int) -> None:
    assert parse_every(text) == seconds
    assert format_every(seconds) == text


@pytest.mark.parametrize("text", ["", "0s", "5", "5w", "-5m", "1.5h", "every 5m"])
def test_a_bad_every_names_the_field(text: str) -> None:
    with pytest.raises(ScheduleError, match="^every is invalid"):
        parse_every(text)


@pytest.mark.parametrize(
    "text", ["", "0 */6 * *", "0 0 */6 * * *", "61 * * * *", "* * * * mon-xyz", "@daily"]
)
def test_a_bad_cron_names_the_field(text: str) -> None:
    with pytest.raises(ScheduleError, match="^cron is invalid"):
        check_cron(text)


def test_a_bad_tz_names_the_field_and_empty_is_utc() -> None:
    assert check_tz("") == "UTC"
    with pytest.raises(ScheduleError, match="^tz is invalid: unknown time zone 'Mars/Olympus'"):
        check_tz("Mars/Olympus")


# --- missed runs run once -----------------------------------------------------------------------


def test_nothing_is_due_before_the_next_run() -> None:
    schedule = every(60)
    assert due(schedule, T0 + timedelta(seconds=59)) is None
    run = due(schedule, T0 + timedelta(seconds=60))
    assert run is not None and run.missed == 0 and run.planned == T0 + timedelta(seconds=60)


def test_slots_missed_while_down_make_one_run_and_the_next_run_is_after_now() -> None:
    schedule = every(3600)
    now = T0 + timedelta(hours=5, minutes=30)
    run = due(schedule, now)
    assert run is not None
    assert run.missed == 4  # 1h, 2h, 3h, 4h never run; this run is for 5h
    assert run.planned == T0 + timedelta(hours=5)
    assert run.next_run == T0 + timedelta(hours=6)


def test_cron_slots_missed_make_one_run_too() -> None:
    schedule = cron("*/15 * * * *")
    run = due(schedule, T0 + timedelta(hours=1, minutes=1))
    assert run is not None
    assert (run.planned, run.next_run, run.missed) == (
        T0 + timedelta(hours=1),
        T0 + timedelta(hours=1, minutes=15),
        3,
    )


# --- the service, on a fake clock ---------------------------------------------------------------


class FakeLauncher(Service):
    """scrapyd's launcher as the service reads it: running processes by slot, finished jobs."""

    name = "launcher"

    def __init__(self) -> None:
        self.processes: dict[int, SimpleNamespace] = {}
        self.finished: list[SimpleNamespace] = []

    def start_next(self, poller: QueuePoller, project: str = "demo") -> dict:
        message = poller.queues[project].pop()
        self.processes[len(self.processes)] = SimpleNamespace(
            project=project, spider=message["name"], job=message["_job"]
        )
        return message

    def finish_all(self) -> None:
        self.finished.extend(self.processes.values())
        self.processes.clear()


class Scrapyd(SimpleNamespace):
    config: Config
    app: Application
    poller: QueuePoller
    launcher: FakeLauncher
    clock: Clock

    started: list[ScheduleService]

    def service(self) -> ScheduleService:
        service = ScheduleService(self.config, self.app, clock=self.clock)
        service.startService()
        self.started.append(service)
        return service

    def pending(self) -> list[dict]:
        return self.poller.queues["demo"].list()


@pytest.fixture
def scrapyd(tmp_path: Path) -> Iterator[Scrapyd]:
    config = Config(values={})
    config.cp.set("scrapyd", "dbs_dir", str(tmp_path / "dbs"))
    config.cp.set("scrapyd", "eggs_dir", str(tmp_path / "eggs"))
    config.cp.add_section("settings")
    config.cp.set("settings", "demo", "demo.settings")
    app = Application("scrapyd")
    poller = QueuePoller(config)
    app.setComponent(IPoller, poller)
    app.setComponent(ISpiderScheduler, SpiderScheduler(config))
    launcher = FakeLauncher()
    launcher.setServiceParent(app)
    clock = Clock()
    clock.advance(T0.timestamp())
    scrapyd = Scrapyd(config=config, app=app, poller=poller, launcher=launcher, clock=clock, started=[])
    yield scrapyd
    for service in scrapyd.started:  # no log observer left behind
        if service.running:
            service.stopService()


def add_every(service: ScheduleService, seconds: int, **fields: object) -> Schedule:
    schedule = every(seconds, created=service.now(), **fields)
    assert service.add(schedule)
    return schedule


def test_a_run_queues_a_job_exactly_like_schedule_json(scrapyd: Scrapyd) -> None:
    service = scrapyd.service()
    add_every(
        service,
        10,
        args={"domain": "example.com", "subs": "false"},
        settings={"LOG_LEVEL": "DEBUG"},
        version="r7",
        priority=2.0,
    )
    scrapyd.clock.advance(9.9)
    assert scrapyd.pending() == []
    scrapyd.clock.advance(0.1)
    [message] = scrapyd.pending()
    job = message["_job"]
    assert len(job) == 32 and int(job, 16)  # scrapyd's uuid1().hex
    # schedule.json's message: name, _job, settings, _version and the spider arguments, nothing else.
    assert message == {
        "name": "wayback",
        "_job": job,
        "settings": {"LOG_LEVEL": "DEBUG"},
        "_version": "r7",
        "domain": "example.com",
        "subs": "false",
    }
    assert list(scrapyd.poller.queues["demo"].q)[0][1] == 2.0  # the priority
    [schedule] = service.list()
    assert (schedule.last_job, schedule.last_outcome) == (job, "pending")
    assert schedule.last_planned == T0 + timedelta(seconds=10)
    assert schedule.next_run == T0 + timedelta(seconds=20)


def test_every_fires_on_each_slot(scrapyd: Scrapyd) -> None:
    service = scrapyd.service()
    add_every(service, 5)
    jobs = []
    for _ in range(4):
        scrapyd.clock.advance(5)
        jobs.append(scrapyd.launcher.start_next(scrapyd.poller)["_job"])
        scrapyd.launcher.finish_all()
    assert len(set(jobs)) == 4
    assert service.list()[0].last_outcome == "finished"


def test_a_run_whose_previous_job_is_running_is_skipped_and_says_so(scrapyd: Scrapyd) -> None:
    service = scrapyd.service()
    add_every(service, 5)
    scrapyd.clock.advance(5)
    first = scrapyd.launcher.start_next(scrapyd.poller)["_job"]
    scrapyd.clock.advance(5)  # the first job is still running
    assert scrapyd.pending() == []
    [schedule] = service.list()
    assert schedule.last_job == first
    assert schedule.last_outcome == (
        f"skipped at 2026-12-01T12:00:10.000+00:00: previous job {first} still running"
    )
    assert schedule.next_run == T0 + timedelta(seconds=15)
    scrapyd.launcher.finish_all()
    scrapyd.clock.advance(5)
    [message] = scrapyd.pending()
    assert message["_job"] != first


def test_a_job_still_pending_in_the_queue_also_skips_the_run(scrapyd: Scrapyd) -> None:
    service = scrapyd.service()
    add_every(service, 5)
    scrapyd.clock.advance(5)
    scrapyd.clock.advance(5)  # every slot of scrapyd's launcher busy: the job never left the queue
    assert len(scrapyd.pending()) == 1
    assert "still pending" in service.list()[0].last_outcome


def test_runs_missed_while_scrapyd_was_down_run_once_on_start(scrapyd: Scrapyd) -> None:
    service = scrapyd.service()
    add_every(service, 60)
    service.stopService()
    scrapyd.clock.advance(60 * 30 + 1)  # down for 30 slots
    restarted = scrapyd.service()
    assert scrapyd.pending() == []  # the start tick comes once the reactor runs
    scrapyd.clock.advance(0)
    assert len(scrapyd.pending()) == 1
    [schedule] = restarted.list()
    assert schedule.last_planned == T0 + timedelta(minutes=30)
    assert schedule.next_run == T0 + timedelta(minutes=31)
    scrapyd.launcher.start_next(scrapyd.poller)
    scrapyd.launcher.finish_all()
    scrapyd.clock.advance(58)  # 12:30:59: nothing more until 12:31
    assert scrapyd.pending() == []
    scrapyd.clock.advance(1)
    assert len(scrapyd.pending()) == 1


def test_schedules_survive_a_restart_and_a_job_lost_with_it_is_said_to_be(scrapyd: Scrapyd) -> None:
    service = scrapyd.service()
    add_every(service, 5)
    scrapyd.clock.advance(5)
    job = scrapyd.launcher.start_next(scrapyd.poller)["_job"]
    service.list()
    service.stopService()
    scrapyd.launcher.processes.clear()  # scrapyd stopped: its launcher forgot the process
    restarted = scrapyd.service()
    [schedule] = restarted.list()
    assert (schedule.name, schedule.every, schedule.last_job) == ("s", 5, job)
    assert schedule.last_outcome == "unknown: scrapyd stopped while the job was running"


def test_a_schedule_for_a_project_that_is_gone_says_so_and_keeps_its_slots(scrapyd: Scrapyd) -> None:
    service = scrapyd.service()
    schedule = every(5, created=service.now())
    schedule.project = "gone"
    service.add(schedule)
    scrapyd.clock.advance(5)
    [schedule] = service.list()
    assert schedule.last_outcome == "error: project 'gone' not found"
    assert schedule.next_run == T0 + timedelta(seconds=10)


def test_a_schedule_that_cannot_run_is_postponed_and_the_others_still_run(
    scrapyd: Scrapyd, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = scrapyd.service()
    add_every(service, 5, name="a")
    add_every(service, 5, name="b")
    # A row whose times cannot be computed (say, a cron expression a newer croniter refuses).
    monkeypatch.setattr(
        "trawl.scrapyd.service.due", lambda *args: 1 / 0 if args[0].name == "a" else due(*args)
    )
    scrapyd.clock.advance(5)
    schedules = {schedule.name: schedule for schedule in service.list()}
    assert schedules["a"].last_outcome == "error: ZeroDivisionError: division by zero"
    assert schedules["a"].next_run == T0 + timedelta(seconds=65)  # not a busy loop
    assert schedules["b"].last_outcome == "pending" and len(scrapyd.pending()) == 1


def test_the_timer_sleeps_until_the_earliest_run(scrapyd: Scrapyd) -> None:
    service = scrapyd.service()
    scrapyd.clock.advance(0)
    add_every(service, 3600)
    assert [call.getTime() - scrapyd.clock.seconds() for call in scrapyd.clock.getDelayedCalls()] == [60.0]
    add_every(service, 7, name="often")
    assert [call.getTime() - scrapyd.clock.seconds() for call in scrapyd.clock.getDelayedCalls()] == [7.0]
    service.remove("demo", "often")
    assert [call.getTime() - scrapyd.clock.seconds() for call in scrapyd.clock.getDelayedCalls()] == [60.0]
    service.stopService()
    assert scrapyd.clock.getDelayedCalls() == []


def test_the_outcome_is_read_from_scrapyds_own_launcher_events(scrapyd: Scrapyd) -> None:
    """Pins the fields of scrapyd's launcher log events (action, job) that the service reads."""
    service = scrapyd.service()
    add_every(service, 5)
    scrapyd.clock.advance(5)
    job = scrapyd.pending()[0]["_job"]
    process = ScrapyProcessProtocol("demo", "wayback", job, env={}, args=[])
    process.pid = 4242
    try:
        process.log("info", "Process started:")
        schedule = service.store.get("demo", "s")
        assert schedule is not None and schedule.last_outcome == "running"
        assert schedule.last_started is not None
        process.processEnded(Failure(error.ProcessTerminated(exitCode=1)))
        schedule = service.store.get("demo", "s")
        assert schedule is not None and schedule.last_outcome == "failed: exit status 1"
        process = ScrapyProcessProtocol("demo", "wayback", job, env={}, args=[])
        process.processEnded(Failure(error.ProcessDone(0)))
        schedule = service.store.get("demo", "s")
        assert schedule is not None and schedule.last_outcome == "finished"
    finally:
        service.stopService()


def test_the_table_is_a_file_in_dbs_dir(scrapyd: Scrapyd) -> None:
    path = Path(path_from_config(scrapyd.config))
    assert path.parent == Path(scrapyd.config.get("dbs_dir")) and path.name == "_trawl_schedules.db"
    store = ScheduleStore(str(path))
    assert store.add(every(5))
    assert not store.add(every(5))  # one name per project
    assert store.list()[0].next_run == T0 + timedelta(seconds=5)
