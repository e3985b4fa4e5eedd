"""A recurring job checked here, as ``trawl crawl`` would check it, before scrapyd is asked to keep it.

``trawl schedule add nightly wayback --every 6h -a 'domain=not a domain'``
printed ``added nightly`` and exit status 0: every run of the schedule failed
later, in scrapyd's job log. With scrapyd down, a bad ``--cron '61 * * *'``
said only ``cannot reach scrapyd``. So the cron expression,
the interval and the time zone (scrapyd's own checks,
:mod:`trawl.scrapyd.schedules`), the spider's arguments (the spider's own
``check_arguments``, or ``all``'s) and the job's settings
(:mod:`trawl.validation`) are checked first, each failure one
:class:`~trawl.errors.TrawlUsageError`.

Two things are left to the job: settings that name this machine's files
(``STORE_URI``'s directory, ``PROXY_LIST_FILE``), since scrapyd may run
elsewhere, and a spider this checkout does not know (a project deployed to
scrapyd may have its own; scrapyd refuses a name it does not know).
"""

from __future__ import annotations

from scrapy.settings import BaseSettings
from scrapy.spiderloader import get_spider_loader

from trawl.errors import TrawlUsageError
from trawl.run.crawl_all import ALL, check_all
from trawl.scrapyd.schedules import ScheduleError, check_cron, check_tz, parse_every
from trawl.sources.arguments import check_repeated
from trawl.validation import SETTINGS, check_setting_names, validate_settings

#: Settings whose check reads this machine's file system, not the one scrapyd runs the job on.
LOCAL_SETTINGS = frozenset({"STORE_URI", "PROXY_LIST_FILE"})


def check_when(cron: str | None, every: str | None, tz: str | None) -> None:
    """``--cron``, ``--every`` and ``--tz`` as scrapyd's ``addschedule.json`` reads them."""
    try:
        if cron is not None:
            check_cron(cron)
        if every is not None:
            parse_every(every)
        if tz is not None:
            check_tz(tz)
    except ScheduleError as exc:
        raise TrawlUsageError(str(exc)) from None


def check_job(
    settings: BaseSettings,
    spider: str,
    arguments: list[tuple[str, str]],
    job_settings: list[tuple[str, str]],
) -> None:
    """The job's settings and the spider's arguments, as its ``crawl`` would check them."""
    check_repeated([f"{key}=" for key, _ in arguments], "-a")
    check_repeated([f"{key}=" for key, _ in job_settings], "--setting")
    job = settings.copy()
    for key, value in job_settings:
        job.set(key, value, priority="cmdline")  # what scrapyd's -s gives the job
    check_setting_names(job)
    loader = get_spider_loader(job)
    error = getattr(loader, "plugin_error", None)
    if error is not None:
        raise error
    sources = [name for name in loader.list() if name != ALL]
    validate_settings(job, sources=sources, names=[name for name in SETTINGS if name not in LOCAL_SETTINGS])
    given = dict(arguments)
    if spider == ALL:
        check_all(loader, job, given)
    elif spider in sources:
        check = getattr(loader.load(spider), "check_arguments", None)
        if check is not None:
            check(job, given)
