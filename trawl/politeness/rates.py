"""Rate limits written as ``"N/Ts"``: N requests per T seconds (``60/60s``, ``1/1s``, ``4/1m``)."""

from __future__ import annotations

import re

from trawl.errors import TrawlUsageError

_RATE = re.compile(r"\s*(\d+)\s*/\s*(\d*(?:\.\d+)?)\s*(s|sec|m|min|h)?\s*")
_UNIT = {None: 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_rate(text: str) -> tuple[int, float]:
    """``"60/60s"`` -> ``(60, 60.0)``: requests, and the period in seconds."""
    match = _RATE.fullmatch(str(text))
    if not match or int(match.group(1)) < 1:
        raise TrawlUsageError(f"a rate limit looks like 60/60s (requests/period), got {text!r}")
    period = float(match.group(2) or 1) * _UNIT[match.group(3)]
    if period <= 0:
        raise TrawlUsageError(f"a rate limit's period must be positive, got {text!r}")
    return int(match.group(1)), period


def format_duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
