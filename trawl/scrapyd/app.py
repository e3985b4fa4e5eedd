"""``application = trawl.scrapyd.app.application``: scrapyd's own application plus the schedule timer.

scrapyd builds its Twisted application in the function its ``application``
option names (``scrapyd.app.application`` by default). This one calls that
function (the ``trawl_application`` option of ``[scrapyd]`` names it, for a
deployment that already replaces it) and adds
:class:`~trawl.scrapyd.service.ScheduleService` to the result, so the
launcher, poller, web services and the schedules share one process and one
``Application``. Nothing of scrapyd is patched or copied.
"""

from __future__ import annotations

from typing import Any

from scrapy.utils.misc import load_object

from trawl.scrapyd.service import ScheduleService

WRAPPED_OPTION = "trawl_application"
WRAPPED_DEFAULT = "scrapyd.app.application"


def application(config: Any) -> Any:
    wrapped = load_object(config.get(WRAPPED_OPTION, WRAPPED_DEFAULT))
    if wrapped is application:
        raise ValueError(f"{WRAPPED_OPTION} must name scrapyd's application, not {__name__}.application")
    app = wrapped(config)
    ScheduleService(config, app).setServiceParent(app)
    return app
