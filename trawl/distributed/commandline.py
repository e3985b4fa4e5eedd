"""What ``trawl enqueue``, ``worker`` and ``queue`` share: checked settings, one-line errors, the queue.

Each of them checks the settings it reads before touching Redis (one
``trawl: error:`` line, exit status 2), installs trawl's log handler, and
connects with :func:`trawl.distributed.connection.connect`: a Redis that does
not answer is one line and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from trawl.common.logs import install_log_handler, write_usage_error
from trawl.distributed.connection import SETTING, connect
from trawl.distributed.queue import WorkQueue
from trawl.errors import EXIT_USAGE, TrawlError, exit_status
from trawl.readsettings import arglist_to_dict
from trawl.settings_checks import real_value, whole_value
from trawl.validation import LOGGING_SETTINGS, validate_settings

QUEUE_SETTINGS = (SETTING, "QUEUE_HEARTBEAT", "QUEUE_MAX_DEATHS")


def open_queue(settings: Any) -> WorkQueue:
    """The shared queue; ``TrawlUsageError`` for a bad setting or an unreachable Redis."""
    validate_settings(settings, names=(*LOGGING_SETTINGS, *QUEUE_SETTINGS))
    install_log_handler(settings)
    heartbeat = real_value(settings.get("QUEUE_HEARTBEAT"), "QUEUE_HEARTBEAT", 0.1, False, "seconds", 600)
    deaths = whole_value(settings.get("QUEUE_MAX_DEATHS"), "QUEUE_MAX_DEATHS", 1, None)
    return WorkQueue(connect(settings), max_deaths=deaths, heartbeat=heartbeat)


def given_settings(opts: argparse.Namespace) -> dict[str, str]:
    """The ``-s NAME=VALUE`` typed on this command line, as typed (not the whole settings)."""
    return {name: str(value) for name, value in arglist_to_dict(getattr(opts, "set", None) or []).items()}


def fail(settings: Any, error: TrawlError | str) -> int:
    """One ``trawl: error:`` line; the exit status: 2 for bad input, 1 for a Redis that does not answer."""
    write_usage_error(settings, str(error))
    return exit_status(error) if isinstance(error, TrawlError) else EXIT_USAGE


def stderr(line: str) -> None:
    sys.stderr.write(line.rstrip("\n") + "\n")
