"""The timer inside scrapyd that starts each schedule's jobs, through scrapyd's own scheduler.

A Twisted service added to scrapyd's application (:mod:`trawl.scrapyd.app`).
It sleeps until the earliest ``next_run`` of the table (at most
:data:`MAX_SLEEP` seconds, so a changed wall clock is noticed), then, for each
schedule due:

* if the schedule's previous job is still pending in scrapyd's queue or
  running in its launcher, the run is **skipped** and says so (a WARNING line
  and ``last_outcome = "skipped at ...: previous job ... still running"``):
  a schedule never overlaps itself, and a slow crawl does not pile up jobs;
* otherwise it queues a job exactly as ``schedule.json`` does:
  ``ISpiderScheduler.schedule(project, spider, priority=..., settings={...},
  _job=<uuid1 hex>, **args)``, with ``_version`` among the args when the
  schedule pins one, and asks the poller to poll at once (``IPoller.poll``,
  what scrapyd's own ``poll_interval`` timer calls) so that the job starts
  within milliseconds of its slot instead of up to ``poll_interval`` later;
* the next run is computed from now (:func:`trawl.scrapyd.schedules.due`):
  runs missed while scrapyd was down run once on start, not once per slot.

What became of a job is read from scrapyd's launcher log events ("Process
started:", "Process finished:", "Process died: exitstatus=N", with the
``job`` field), which scrapyd emits for every process it runs; the launcher
offers no other notice (its process deferred ends in its own bookkeeping).
tests/test_schedules.py pins the event fields against scrapyd's own
``ScrapyProcessProtocol.log``. A job whose end was not seen (scrapyd restarted
under it) is reported as such rather than as running forever.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from twisted.application.service import IServiceCollection, Service
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger, globalLogPublisher

from trawl.scrapyd.schedules import UTC, Schedule, due, iso, skipped
from trawl.scrapyd.store import ScheduleStore, path_from_config

log = Logger()

SERVICE_NAME = "trawl-schedules"
#: Longest sleep between two looks at the table (seconds).
MAX_SLEEP = 60.0
LAUNCHER_NAMESPACE = "scrapyd.launcher"
#: Outcomes of a job that is not over yet.
PENDING, RUNNING = "pending", "running"


class ScheduleService(Service):
    name = SERVICE_NAME

    def __init__(self, config: Any, app: Any, clock: IReactorTime | None = None) -> None:
        if clock is None:
            from twisted.internet import reactor as clock  # type: ignore[no-redef]
        self.app = app
        self.clock = clock
        self.store = ScheduleStore(path_from_config(config))
        self._call: IDelayedCall | None = None
        self._observer: Callable[[dict[str, Any]], None] = self.observe

    # --- the clock -------------------------------------------------------------------------

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.seconds(), UTC)

    def startService(self) -> None:  # noqa: N802 - Twisted's name
        super().startService()
        globalLogPublisher.addObserver(self._observer)
        for schedule in self.store.list():
            self.refresh(schedule, restarted=True)
        self._arm(0.0)  # runs missed while scrapyd was down: once, now

    def stopService(self) -> None:  # noqa: N802
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        globalLogPublisher.removeObserver(self._observer)
        return super().stopService()

    def _arm(self, delay: float | None = None) -> None:
        if not self.running:
            return
        if self._call is not None and self._call.active():
            self._call.cancel()
        if delay is None:
            delay = MAX_SLEEP
            try:
                times = [schedule.next_run for schedule in self.store.list()]
            except Exception:  # noqa: BLE001 - the table unreadable for now: look again later
                log.failure("trawl schedules: cannot read the schedules table")
                times = []
            if times:
                delay = min(MAX_SLEEP, max(0.0, (min(times) - self.now()).total_seconds()))
        self._call = self.clock.callLater(delay, self.tick)

    def tick(self) -> None:
        self._call = None
        try:
            now = self.now()
            for schedule in self.store.list():
                if schedule.next_run <= now:
                    self._run_or_postpone(schedule, now)
        except Exception:  # noqa: BLE001 - the timer must outlive a bad table
            log.failure("trawl schedules: a tick failed")
        finally:
            self._arm()

    def _run_or_postpone(self, schedule: Schedule, now: datetime) -> None:
        """One schedule's run; one that cannot run is tried again in :data:`MAX_SLEEP`, not in a loop."""
        try:
            self.run(schedule, now)
        except Exception as exc:  # noqa: BLE001 - the other schedules still run
            log.failure(
                "trawl schedules: {project}/{name} failed", project=schedule.project, name=schedule.name
            )
            self.store.update(
                schedule,
                next_run=now + timedelta(seconds=MAX_SLEEP),
                last_outcome=f"error: {type(exc).__name__}: {exc}",
            )

    # --- the table, for the web services -----------------------------------------------------

    def add(self, schedule: Schedule) -> bool:
        if not self.store.add(schedule):
            return False
        log.info(
            "trawl schedules: added {project}/{name} ({spider}, {when}), first run {next_run}",
            project=schedule.project,
            name=schedule.name,
            spider=schedule.spider,
            when=schedule.when,
            next_run=iso(schedule.next_run),
        )
        self._arm()
        return True

    def remove(self, project: str, name: str) -> bool:
        removed = self.store.delete(project, name)
        if removed:
            log.info("trawl schedules: removed {project}/{name}", project=project, name=name)
            self._arm()
        return removed

    def list(self, project: str | None = None) -> list[Schedule]:
        schedules = self.store.list(project)
        for schedule in schedules:
            self.refresh(schedule)
        return schedules

    # --- scrapyd's state ---------------------------------------------------------------------

    @property
    def poller(self) -> Any:
        from scrapyd.interfaces import IPoller

        return self.app.getComponent(IPoller)

    @property
    def scheduler(self) -> Any:
        from scrapyd.interfaces import ISpiderScheduler

        return self.app.getComponent(ISpiderScheduler)

    @property
    def launcher(self) -> Any:
        return IServiceCollection(self.app, self.app).getServiceNamed("launcher")

    def job_state(self, project: str, job: str) -> str | None:
        """``pending`` (in scrapyd's queue), ``running`` (a launcher process) or ``None``."""
        for process in self.launcher.processes.values():
            if process.project == project and process.job == job:
                return RUNNING
        queue = self.poller.queues.get(project)
        if queue is not None and any(message.get("_job") == job for message in queue.list()):
            return PENDING
        return None

    def refresh(self, schedule: Schedule, restarted: bool = False) -> None:
        """Bring ``last_outcome`` of an unfinished job in line with scrapyd's queues and launcher."""
        if not schedule.last_job or schedule.last_outcome not in (PENDING, RUNNING):
            return
        state = self.job_state(schedule.project, schedule.last_job)
        if state == schedule.last_outcome:
            return
        if state is not None:
            self.store.update(schedule, last_outcome=state)
        elif any(finished.job == schedule.last_job for finished in self.launcher.finished):
            self.store.update(schedule, last_outcome="finished")
        elif restarted:
            self.store.update(schedule, last_outcome="unknown: scrapyd stopped while the job was running")

    # --- a run -------------------------------------------------------------------------------

    def run(self, schedule: Schedule, now: datetime) -> None:
        run = due(schedule, now)
        if run is None:
            return
        where = f"{schedule.project}/{schedule.name}"
        if run.missed:
            log.warn(
                "trawl schedules: {where} missed {missed} run(s) (scrapyd was down): running once",
                where=where,
                missed=run.missed,
            )
        state = self.job_state(schedule.project, schedule.last_job) if schedule.last_job else None
        if state is not None:
            assert schedule.last_job is not None
            outcome = skipped(schedule.last_job, state, now)
            log.warn("trawl schedules: {where} {outcome}", where=where, outcome=outcome)
            self.store.update(schedule, next_run=run.next_run, last_outcome=outcome)
            return
        job = uuid.uuid1().hex
        try:
            self._queue(schedule, job)
        except Exception as exc:  # noqa: BLE001 - said in last_outcome and the log, the timer goes on
            outcome = f"error: {exc}"
            log.error("trawl schedules: {where} could not be queued: {error}", where=where, error=exc)
            self.store.update(
                schedule, next_run=run.next_run, last_planned=run.planned, last_run=now, last_outcome=outcome
            )
            return
        self.store.update(
            schedule,
            next_run=run.next_run,
            last_planned=run.planned,
            last_run=now,
            last_started=None,
            last_job=job,
            last_outcome=PENDING,
        )
        log.info(
            "trawl schedules: {where} queued job {job}, next run {next_run}",
            where=where,
            job=job,
            next_run=iso(run.next_run),
        )
        self.poller.poll()

    def _queue(self, schedule: Schedule, job: str) -> None:
        """What ``schedule.json`` does once its parameters are read."""
        if schedule.project not in self.poller.queues:
            raise LookupError(f"project {schedule.project!r} not found")
        args = dict(schedule.args)
        if schedule.version:
            args["_version"] = schedule.version
        self.scheduler.schedule(
            schedule.project,
            schedule.spider,
            priority=schedule.priority,
            settings=dict(schedule.settings),
            _job=job,
            **args,
        )

    # --- what became of a job ----------------------------------------------------------------

    def observe(self, event: dict[str, Any]) -> None:
        """A Twisted log observer: scrapyd's launcher events for the jobs the schedules started."""
        if event.get("log_namespace") != LAUNCHER_NAMESPACE:
            return
        job, action = event.get("job"), event.get("action")
        if not isinstance(job, str) or not isinstance(action, str):
            return
        try:
            self._record(job, action, event.get("log_time"))
        except Exception:  # noqa: BLE001 - an observer must not raise into scrapyd's logging
            log.failure("trawl schedules: could not record what became of job {job}", job=job)

    def _record(self, job: str, action: str, log_time: float | None) -> None:
        schedule = self.store.by_job(job)
        if schedule is None:
            return
        moment = datetime.fromtimestamp(log_time or self.clock.seconds(), UTC)
        if action.startswith("Process started"):
            self.store.update(schedule, last_outcome=RUNNING, last_started=moment)
        elif action.startswith("Process finished"):
            self.store.update(schedule, last_outcome="finished")
        elif action.startswith("Process died"):
            status = action.partition("exitstatus=")[2].strip() or "?"
            self.store.update(schedule, last_outcome=f"failed: exit status {status}")
