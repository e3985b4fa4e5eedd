"""Exceptions that end in one clear line for the user, never a traceback."""

from __future__ import annotations


class TrawlError(Exception):
    """Base class: the message is meant for the user as it is."""


class TrawlUsageError(TrawlError):
    """Bad input from the command line (spider arguments, settings, config file)."""


class StoreError(TrawlError):
    """The configured store cannot be opened or written."""


class UnreachableError(TrawlError):
    """A shared service the command needs (Redis) does not answer: a failure, not bad input."""


#: Exit status of a command that failed (a store that cannot be read, nothing of what was asked).
EXIT_FAILED = 1
#: Exit status of a command given bad input (an option, an argument, a setting).
EXIT_USAGE = 2


def exit_status(exc: TrawlError) -> int:
    """Bad input is 2; a store or Redis that cannot be reached or read is 1, as a run that failed.

    A mistyped setting is the user's to fix before anything runs; a database that is down at
    the start is the same failure as one that goes down mid-run, which has always exited 1.
    """
    return EXIT_FAILED if isinstance(exc, StoreError | UnreachableError) else EXIT_USAGE
