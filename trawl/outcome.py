"""How a run ended, in one word, from its stats: what exit status and summaries use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

COMPLETE = "complete"
PARTIAL = "partial"
FAILED = "failed"
BLOCKED = "blocked"


def run_outcome(stats: Mapping[str, Any], reason: str | None) -> str:
    """complete / partial / failed / blocked.

    A run is complete only if it finished by itself with no error and no limit
    cut it short; it failed if it read no page at all.
    """
    if stats.get("trawl/blocked"):
        return BLOCKED
    errors = stats.get("trawl/errors", 0)
    pages = stats.get("trawl/pages", 0)
    if errors and not pages:
        return FAILED
    if errors or stats.get("trawl/limited") or (reason or "finished") != "finished":
        return PARTIAL
    return COMPLETE
