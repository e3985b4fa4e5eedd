"""A signal while trawl is still starting: one line, not a traceback.

Until Scrapy's reactor runs (imports, settings, plugins, checks, the store),
Python's own SIGINT handler raised ``KeyboardInterrupt`` wherever the code was,
and a Ctrl-C printed a 50-line traceback. This module imports
nothing heavy, so that ``trawl/cli.py`` can install it before it imports
Scrapy; Scrapy replaces it with its own handlers once the reactor has started
(see :mod:`trawl.common.stopping` for what a signal does from then on).
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType


def _interrupted(signum: int, _frame: FrameType | None) -> None:
    name = signal.Signals(signum).name
    sys.stderr.write(f"trawl: interrupted ({name})\n")
    sys.stderr.flush()
    os._exit(128 + signum)  # nothing to clean up yet: the conventional status of a signal


def install_startup_handlers() -> None:
    """SIGINT and SIGTERM: one line and exit ``128 + signal`` until the reactor runs."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupted)
