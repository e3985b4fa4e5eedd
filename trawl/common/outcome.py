"""How a run ended, in one word, from its stats: what exit status and summaries use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trawl.common import statkeys

COMPLETE = "complete"
PARTIAL = "partial"
FAILED = "failed"
BLOCKED = "blocked"
SKIPPED_NO_KEY = "skipped-no-key"


def error_count(stats: Mapping[str, Any]) -> int:
    """The errors of this run: trawl's own count, or the ERROR lines it logged if more.

    Any ERROR line counts, not only the ones trawl reports itself (a failing
    exporter, a plugin raising): an error the user was shown is not "complete".
    Only this crawler's lines count (``trawl/log_errors``, see
    :mod:`trawl.common.attribution`); without that counter, Scrapy's
    ``log_count/ERROR``, which counts every crawler's lines in the process.
    """
    logged = stats.get(statkeys.LOG_ERRORS)
    if logged is None:
        logged = stats.get("log_count/ERROR", 0)
    return max(stats.get(statkeys.ERRORS, 0), logged)


def run_outcome(stats: Mapping[str, Any], reason: str | None) -> str:
    """complete / partial / failed / blocked / skipped-no-key.

    A run is complete only if it finished by itself with no error; it failed if
    it read no page at all. A limit the user set (``limit_requests``) does not
    make a run partial: it did what it was asked.
    """
    if stats.get(statkeys.SKIPPED):
        return SKIPPED_NO_KEY
    if stats.get(statkeys.BLOCKED):
        return BLOCKED
    errors = error_count(stats)
    pages = stats.get(statkeys.PAGES, 0)
    if errors and not pages:
        return FAILED
    if errors or (reason or "finished") != "finished":
        return PARTIAL
    return COMPLETE
