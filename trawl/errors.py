"""Exceptions that end in one clear line for the user, never a traceback."""

from __future__ import annotations


class TrawlError(Exception):
    """Base class: the message is meant for the user as it is."""


class TrawlUsageError(TrawlError):
    """Bad input from the command line (spider arguments, settings, config file)."""


class StoreError(TrawlError):
    """The configured store cannot be opened or written."""


#: Exit status of a command that failed (a store that cannot be read, nothing of what was asked).
EXIT_FAILED = 1
#: Exit status of a command given bad input (an option, an argument, a setting).
EXIT_USAGE = 2
