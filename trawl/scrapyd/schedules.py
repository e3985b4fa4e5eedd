"""What a recurring schedule is, and when it runs: next run, missed runs, time zones.

Pure functions of a :class:`Schedule` and a time, so that the rules are tested
on a fake clock (tests/test_schedules.py) and the timer service only applies
them:

* **Next run.** ``every`` slots are anchored on the schedule's creation time
  (``created + k * every``), so a late tick never pushes later runs back; a
  ``cron`` expression is read by croniter (no hand-written parser) in the
  schedule's ``tz``, UTC unless one is given, and a run is the next match
  strictly after a time.
* **Missed runs run once.** When a tick comes after one or more planned
  times (scrapyd was down, the machine slept), the schedule runs once and its
  next run is the first slot after *now*: never one job per missed slot.
  :func:`due` says how many slots were missed, for the log line.
* **Skip if running** is decided by the service (it knows scrapyd's queues and
  processes); :func:`skipped` words the outcome.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter

UTC = timezone.utc
EVERY_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_EVERY = re.compile(r"^\s*(\d+)\s*([smhd])\s*$")
#: Slots counted when telling how many runs were missed (the count is only for the log line).
MISSED_COUNT_CAP = 1000


class ScheduleError(ValueError):
    """Bad input for one field of a schedule: the message names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field} is invalid: {message}")
        self.field = field


def parse_every(text: str) -> int:
    """``30s``, ``15m``, ``6h``, ``1d`` as seconds (> 0)."""
    match = _EVERY.match(text or "")
    if not match or int(match.group(1)) <= 0:
        raise ScheduleError(
            "every", f"{text!r} is not a positive number of s, m, h or d, e.g. 30s, 15m, 6h, 1d"
        )
    return int(match.group(1)) * EVERY_UNITS[match.group(2)]


def format_every(seconds: int) -> str:
    """The shortest ``every`` text for a number of seconds (``21600`` -> ``6h``)."""
    for unit in ("d", "h", "m"):
        if seconds % EVERY_UNITS[unit] == 0:
            return f"{seconds // EVERY_UNITS[unit]}{unit}"
    return f"{seconds}s"


def check_cron(text: str) -> str:
    """A five-field cron expression (minute hour day month weekday), normalized spacing."""
    fields = (text or "").split()
    if len(fields) != 5:
        raise ScheduleError(
            "cron",
            f"{text!r} is not a five-field cron expression (minute hour day-of-month month day-of-week),"
            " e.g. '0 */6 * * *'",
        )
    expression = " ".join(fields)
    try:
        croniter(expression, datetime(2000, 1, 1, tzinfo=UTC))
    except (CroniterError, ValueError, KeyError) as exc:
        raise ScheduleError("cron", f"{text!r}: {exc}") from None
    return expression


def check_tz(text: str) -> str:
    """An IANA time zone name (``Europe/Paris``); empty is UTC."""
    name = (text or "").strip() or "UTC"
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError("tz", f"unknown time zone {text!r} (an IANA name such as Europe/Paris)") from None
    return name


@dataclass
class Schedule:
    """One row of the schedules table (:mod:`trawl.scrapyd.store`); times are aware, in UTC."""

    project: str
    name: str
    spider: str
    created: datetime
    next_run: datetime
    cron: str | None = None
    every: int | None = None  # seconds
    tz: str = "UTC"
    version: str | None = None
    priority: float = 0.0
    args: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    last_planned: datetime | None = None  # the slot the last job was started for
    last_run: datetime | None = None  # when it was queued
    last_started: datetime | None = None  # when scrapyd's launcher started its process
    last_job: str | None = None
    last_outcome: str | None = None

    def __post_init__(self) -> None:
        if (self.cron is None) == (self.every is None):
            raise ScheduleError("cron", "give either 'cron' or 'every', not both and not neither")

    @property
    def when(self) -> str:
        return f"cron {self.cron}" if self.cron else f"every {format_every(self.every or 0)}"

    def as_json(self) -> dict[str, Any]:
        drift = None
        if self.last_started and self.last_planned:
            drift = round((self.last_started - self.last_planned).total_seconds(), 3)
        return {
            "project": self.project,
            "name": self.name,
            "spider": self.spider,
            "cron": self.cron,
            "every": format_every(self.every) if self.every else None,
            "tz": self.tz,
            "version": self.version,
            "priority": self.priority,
            "args": self.args,
            "settings": self.settings,
            "created": iso(self.created),
            "next_run": iso(self.next_run),
            "last_planned": iso(self.last_planned),
            "last_run": iso(self.last_run),
            "last_started": iso(self.last_started),
            "last_drift": drift,
            "last_job": self.last_job,
            "last_outcome": self.last_outcome,
        }


def iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds") if moment else None


def next_run(schedule: Schedule, after: datetime) -> datetime:
    """The first planned time strictly after ``after``, in UTC."""
    if schedule.every:
        step = schedule.every
        elapsed = (after - schedule.created).total_seconds()
        slots = max(0, math.floor(elapsed / step)) + 1
        planned = schedule.created + timedelta(seconds=slots * step)
        while planned <= after:  # float rounding at a slot boundary
            planned += timedelta(seconds=step)
        return planned
    assert schedule.cron
    local = after.astimezone(ZoneInfo(schedule.tz))
    return croniter(schedule.cron, local).get_next(datetime).astimezone(UTC)


def first_run(schedule: Schedule) -> datetime:
    """A new schedule's first run: one ``every`` after its creation, or the next cron match."""
    return next_run(schedule, schedule.created)


@dataclass(frozen=True)
class Due:
    """A run to start now: the slot it is for, the schedule's next run, and the slots missed."""

    planned: datetime  # the latest planned time at or before now
    next_run: datetime
    missed: int  # earlier planned times that passed without a run (0: on time)


def due(schedule: Schedule, now: datetime) -> Due | None:
    """``None`` before the schedule's next run; else one run, however many slots passed.

    The run is for the latest slot at or before ``now``; the slots before it
    are counted in ``missed`` and never run.
    """
    if schedule.next_run > now:
        return None
    latest, missed = schedule.next_run, 0
    if schedule.every:
        missed = math.floor((now - latest).total_seconds() / schedule.every)
        latest += timedelta(seconds=missed * schedule.every)
    else:
        slot = next_run(schedule, latest)
        while slot <= now and missed < MISSED_COUNT_CAP:
            latest, missed = slot, missed + 1
            slot = next_run(schedule, slot)
    return Due(planned=latest, next_run=next_run(schedule, now), missed=missed)


def skipped(job: str, state: str, now: datetime) -> str:
    """The outcome of a run that was not started because the previous job is still going."""
    return f"skipped at {iso(now)}: previous job {job} still {state}"
