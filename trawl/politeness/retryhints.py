"""When does an upstream say to come back? Reading its 429/503 answer.

Hints, first found wins: ``Retry-After`` (seconds or an HTTP date),
URLScan's ``X-Rate-Limit-Reset-After`` (seconds) and ``X-Rate-Limit-Reset``
(ISO date), and bodies such as "Reset in 30 seconds" (URLScan) or "Expected
available in 12 seconds" (Django REST framework, OTX).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

from scrapy.http import Response

_BODY_SECONDS = re.compile(
    rb"(?:reset in|available in|try again in|retry after|wait)\s+(\d+(?:\.\d+)?)\s*(?:s\b|sec|second)",
    re.IGNORECASE,
)


def _header(response: Response, name: str) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1").strip() if value else None


def _seconds_or_date(value: str, now: float) -> float | None:
    try:
        return now + max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def resume_time(response: Response, now: float) -> tuple[float, str] | None:
    """(epoch time to come back, which hint said so), or ``None`` without a hint."""
    for name in ("Retry-After", "X-Rate-Limit-Reset-After", "X-Rate-Limit-Reset", "RateLimit-Reset"):
        value = _header(response, name)
        if value:
            at = _seconds_or_date(value, now)
            if at is not None:
                return at, name
    match = _BODY_SECONDS.search(response.body[:4096])
    if match:
        return now + float(match.group(1)), "body"
    return None
