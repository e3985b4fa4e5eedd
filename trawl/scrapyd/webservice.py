"""``addschedule.json``, ``listschedules.json``, ``delschedule.json``: scrapyd web services.

Enabled in scrapyd.conf's ``[services]`` section (``addschedule.json =
trawl.scrapyd.webservice.AddSchedule``...), the way scrapyd's own
``schedule.json`` is; they reach the timer
(:class:`~trawl.scrapyd.service.ScheduleService`) through scrapyd's
application. ``addschedule.json`` takes what ``schedule.json`` takes
(``project``, ``spider``, ``_version``, ``priority``, ``setting=NAME=VALUE``
repeated, any other field a spider argument) plus ``name``, ``cron`` or
``every`` and ``tz``, and checks it the same way (project, version and spider
exist) before anything is stored. Bad input is scrapyd's JSON error,
``{"status": "error", "message": ...}``, with a message naming the field.
"""

from __future__ import annotations

from typing import Any

from scrapyd.webservice import WsResource, param, spider_list
from twisted.application.service import IServiceCollection
from twisted.web import error, http

from trawl.scrapyd.schedules import (
    Schedule,
    ScheduleError,
    check_cron,
    check_tz,
    first_run,
    parse_every,
)
from trawl.scrapyd.service import SERVICE_NAME, ScheduleService

MAX_NAME_LENGTH = 200


def _refuse(message: str) -> error.Error:
    return error.Error(code=http.OK, message=message.encode())


class _ScheduleResource(WsResource):
    def service(self) -> ScheduleService:
        try:
            return IServiceCollection(self.root.app, self.root.app).getServiceNamed(SERVICE_NAME)
        except KeyError:
            raise _refuse(
                "recurring schedules are off in this scrapyd: set application = trawl.scrapyd.app.application"
                " in the [scrapyd] section of scrapyd.conf"
            ) from None


class AddSchedule(_ScheduleResource):
    @param("project")
    @param("spider")
    @param("name")
    @param("cron", required=False)
    @param("every", required=False)
    @param("tz", required=False, default="UTC")
    @param("_version", dest="version", required=False, default=None)
    @param("priority", required=False, default=0, type=float)
    @param("setting", required=False, default=list, multiple=True)
    def render_POST(  # noqa: N802 - Twisted's name
        self,
        txrequest: Any,
        project: str,
        spider: str,
        name: str,
        cron: str | None,
        every: str | None,
        tz: str,
        version: str | None,
        priority: float,
        setting: list[str],
    ) -> dict[str, Any]:
        service = self.service()
        if b"jobid" in txrequest.args:
            raise _refuse("jobid cannot be given: each run of a schedule gets a new job id")
        name = name.strip()
        if not name or len(name) > MAX_NAME_LENGTH or not name.isprintable():
            raise _refuse(f"name is invalid: {name!r} (1 to {MAX_NAME_LENGTH} printable characters)")
        if (cron is None) == (every is None):
            raise _refuse(
                "give either 'cron' (five fields, e.g. '0 */6 * * *') or 'every' (30s, 15m, 6h, 1d),"
                + (" not both" if cron is not None else " (neither was given)")
            )
        try:
            cron = check_cron(cron) if cron is not None else None
            seconds = parse_every(every) if every is not None else None
            tz = check_tz(tz)
        except ScheduleError as exc:
            raise _refuse(str(exc)) from None
        settings = {}
        for item in setting:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise _refuse(f"setting is invalid: {item!r} is not NAME=VALUE")
            settings[key] = value
        if priority != priority or priority in (float("inf"), float("-inf")):
            raise _refuse(f"priority is invalid: {priority!r} is not a finite number")

        if project not in self.root.poller.queues:
            raise _refuse(f"project {project!r} not found")
        if version and self.root.eggstorage.get(project, version) == (None, None):
            raise _refuse(f"version {version!r} not found")
        # Spiders of the version a job would run (scrapyd's runner takes the latest when none is
        # pinned), under that version's name: the list addversion.json computed and cached on
        # deploy is used, where asking for "no version" ran ``scrapy list`` again, seconds during
        # which scrapyd's reactor, the schedule timer with it, waits.
        runs = version or next(reversed(self.root.eggstorage.list(project)), None)
        if spider not in spider_list.get(project, runs, runner=self.root.runner):
            raise _refuse(f"spider {spider!r} not found")

        # What is left of the request is spider arguments, as in schedule.json.
        args = {key.decode(): values[0].decode() for key, values in txrequest.args.items()}
        now = service.now()
        schedule = Schedule(
            project=project,
            name=name,
            spider=spider,
            created=now,
            next_run=now,
            cron=cron,
            every=seconds,
            tz=tz,
            version=version,
            priority=priority,
            args=args,
            settings=settings,
        )
        schedule.next_run = first_run(schedule)
        if not service.add(schedule):
            raise _refuse(
                f"name {name!r} is taken: project {project!r} has a schedule of that name"
                " (delschedule.json removes it)"
            )
        return {"schedule": schedule.as_json()}


class ListSchedules(_ScheduleResource):
    @param("project", required=False)
    def render_GET(self, txrequest: Any, project: str | None) -> dict[str, Any]:  # noqa: N802
        return {"schedules": [schedule.as_json() for schedule in self.service().list(project)]}


class DelSchedule(_ScheduleResource):
    @param("project")
    @param("name")
    def render_POST(self, txrequest: Any, project: str, name: str) -> dict[str, Any]:  # noqa: N802
        if not self.service().remove(project, name.strip()):
            raise _refuse(f"name {name!r}: project {project!r} has no schedule of that name")
        return {"removed": name.strip()}
