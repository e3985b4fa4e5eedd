"""``trawl schedule add|list|remove``: recurring schedules in a scrapyd, from the terminal.

    trawl schedule add nightly wayback --cron '0 3 * * *' --tz Europe/Paris -a domain=example.com
    trawl schedule add often otx --every 6h -a domain=example.com --setting LOG_LEVEL=DEBUG
    trawl schedule list
    trawl schedule remove nightly
    trawl schedule list --url https://scrapyd.example.net --auth admin:secret

It talks to ``addschedule.json``, ``listschedules.json`` and
``delschedule.json`` (:mod:`trawl.scrapyd.webservice`) of the scrapyd at
``--url`` (default: the ``SCRAPYD_URL`` setting), in the project ``--project``
(default: ``SCRAPYD_PROJECT``), with basic auth from ``--auth USER:PASSWORD``,
the URL, or ``SCRAPYD_AUTH`` (:mod:`trawl.scrapyd.client`); the password is
never printed. Bad input, here or refused by scrapyd, is one ``trawl: error:``
line and exit status 2; a scrapyd that cannot be reached, exit status 1. ``add``
checks its job first, as ``trawl crawl`` would (:mod:`trawl.scrapyd.jobcheck`):
a job that could only fail is refused before scrapyd is contacted.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

import orjson
from scrapy.commands import ScrapyCommand

from trawl.errors import EXIT_FAILED, EXIT_USAGE, TrawlError, TrawlUsageError
from trawl.scrapyd.client import ScrapydClient
from trawl.scrapyd.jobcheck import check_job, check_when

ACTIONS = ("add", "list", "remove")
COLUMNS = ("name", "spider", "when", "next_run", "last_run", "last_job", "last_outcome")


def _one_line_error(message: str) -> NoReturn:
    """argparse's own errors (a missing option value...), as one line like every other."""
    sys.stderr.write(f"trawl: error: {message}\n")
    sys.exit(EXIT_USAGE)


def _pairs(items: list[str], option: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise TrawlUsageError(f"{option} takes NAME=VALUE, not {item!r}")
        pairs.append((key.strip(), value))
    return pairs


class Command(ScrapyCommand):
    requires_project = False
    requires_crawler_process = False  # an HTTP client: no spider loader, no crawler
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "add NAME SPIDER (--cron EXPR | --every 6h) [options] | list | remove NAME"

    def short_desc(self) -> str:
        return "Add, list or remove recurring schedules in scrapyd (SCRAPYD_URL)"

    def long_desc(self) -> str:
        return (
            "Recurring schedules kept and run by scrapyd itself (trawl's scrapyd.conf enables them):"
            " add NAME SPIDER with --cron '0 */6 * * *' (five fields, UTC unless --tz)"
            " or --every 30s|15m|6h|1d,"
            " spider arguments as -a NAME=VALUE and job settings as --setting NAME=VALUE; list shows each"
            " schedule's next run, last run, last job and last outcome; remove NAME deletes one."
            " See docs/schedules.md."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.error = _one_line_error  # type: ignore[method-assign]
        parser.add_argument("--url", help="scrapyd's URL (default: the SCRAPYD_URL setting)")
        parser.add_argument(
            "--auth",
            metavar="USER:PASSWORD",
            help="basic auth (default: the SCRAPYD_AUTH environment variable)",
        )
        parser.add_argument("--project", help="scrapyd project (default: the SCRAPYD_PROJECT setting)")
        parser.add_argument(
            "--cron", metavar="EXPR", help="add: five-field cron expression, e.g. '0 */6 * * *'"
        )
        parser.add_argument("--every", metavar="N[smhd]", help="add: an interval, e.g. 30s, 15m, 6h, 1d")
        parser.add_argument("--tz", help="add: time zone of --cron (default: UTC), e.g. Europe/Paris")
        parser.add_argument(
            "-a",
            dest="spargs",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="add: spider argument",
        )
        parser.add_argument(
            "--setting", action="append", default=[], metavar="NAME=VALUE", help="add: a setting of each job"
        )
        parser.add_argument(
            "--version", dest="egg_version", help="add: the project version (default: latest)"
        )
        parser.add_argument("--priority", help="add: scrapyd queue priority (default: 0)")
        parser.add_argument("--json", action="store_true", help="list: JSON lines, every field")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        try:
            if not args or args[0] not in ACTIONS:
                got = f", not {args[0]!r}" if args else ""
                raise TrawlUsageError(f"schedule takes one of {', '.join(ACTIONS)}{got}")
            unknown = [arg for arg in args[1:] if arg.startswith("-")]
            if unknown:
                raise TrawlUsageError(f"unknown option {unknown[0]}")
            action, rest = args[0], args[1:]
            wanted = {"add": 2, "list": 0, "remove": 1}[action]
            if len(rest) != wanted:
                raise TrawlUsageError(f"usage: trawl schedule {self._usage(action)}")
            client = ScrapydClient(str(opts.url or self.settings.get("SCRAPYD_URL")), opts.auth)
            project = str(opts.project or self.settings.get("SCRAPYD_PROJECT"))
            getattr(self, f"_{action}")(client, project, rest, opts)
        except TrawlUsageError as exc:
            self._fail(str(exc), EXIT_USAGE)
        except TrawlError as exc:
            self._fail(str(exc), EXIT_FAILED)

    @staticmethod
    def _usage(action: str) -> str:
        return {
            "add": "add NAME SPIDER (--cron EXPR | --every 6h) [--tz TZ] [-a NAME=VALUE]"
            " [--setting NAME=VALUE]",
            "list": "list [--json]",
            "remove": "remove NAME",
        }[action]

    def _add(self, client: ScrapydClient, project: str, rest: list[str], opts: argparse.Namespace) -> None:
        name, spider = rest
        if (opts.cron is None) == (opts.every is None):
            raise TrawlUsageError("schedule add takes either --cron EXPR or --every N[smhd]")
        check_when(opts.cron, opts.every, opts.tz)
        settings, arguments = _pairs(opts.setting, "--setting"), _pairs(opts.spargs, "-a")
        check_job(self.settings, spider, arguments, settings)
        fields = [("project", project), ("spider", spider), ("name", name)]
        fields += [(key, value) for key, value in (("cron", opts.cron), ("every", opts.every)) if value]
        for key, value in (("tz", opts.tz), ("_version", opts.egg_version), ("priority", opts.priority)):
            if value is not None:
                fields.append((key, value))
        fields += [("setting", f"{key}={value}") for key, value in settings]
        fields += arguments
        schedule = client.post("addschedule.json", fields)["schedule"]
        print(f"added {schedule['name']}: {_when(schedule)}, next run {schedule['next_run']}")

    def _list(self, client: ScrapydClient, project: str, rest: list[str], opts: argparse.Namespace) -> None:
        schedules = client.get("listschedules.json", project=project)["schedules"]
        if opts.json:
            sys.stdout.writelines(orjson.dumps(schedule).decode() + "\n" for schedule in schedules)
            return
        if not schedules:
            print(f"no schedules in project {project!r} at {client.url}")
            return
        rows = [COLUMNS] + [tuple(_cell(schedule, column) for column in COLUMNS) for schedule in schedules]
        widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
        for row in rows:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())

    def _remove(self, client: ScrapydClient, project: str, rest: list[str], opts: argparse.Namespace) -> None:
        client.post("delschedule.json", [("project", project), ("name", rest[0])])
        print(f"removed {rest[0]}")

    def _fail(self, message: str, status: int) -> None:
        sys.stderr.write(f"trawl: error: {message}\n")
        self.exitcode = status


def _when(schedule: dict[str, Any]) -> str:
    if schedule.get("cron"):
        tz = schedule.get("tz") or "UTC"
        return f"{schedule['spider']} at cron '{schedule['cron']}' ({tz})"
    return f"{schedule['spider']} every {schedule['every']}"


def _cell(schedule: dict[str, Any], column: str) -> str:
    if column == "when":
        return (
            f"cron {schedule['cron']} {schedule['tz']}"
            if schedule.get("cron")
            else f"every {schedule['every']}"
        )
    value = schedule.get(column)
    if value is None:
        return "-"
    if column in ("next_run", "last_run"):
        return str(value)[:19].replace("T", " ") + "Z"
    return str(value)
