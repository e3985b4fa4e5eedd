"""Capture timestamps: every source's dates as the 14-digit ``YYYYMMDDhhmmss`` of CDX.

One form makes first/last-seen comparable across sources (and sortable as text).
"""

from __future__ import annotations

from datetime import datetime, timezone


def iso_timestamp(value: object) -> str:
    """``2019-02-06T02:40:30`` or ``2023-02-01T23:49:29.142Z`` -> UTC digits; ``""`` if unreadable.

    A value without a zone is UTC (OTX writes them so).
    """
    if not isinstance(value, str) or not value:
        return ""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return ""
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y%m%d%H%M%S")
