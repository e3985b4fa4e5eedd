"""Why a source got nothing, in two words, from its stats: ``HTTP 503``, ``timeout``, ``blocked``.

``check_only`` reported a source whose counting request failed as "0 requests,
0 s", an estimate nobody could tell from a real one, so it says
``unknown (HTTP 503)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trawl.common import statkeys

_STATUS = "downloader/response_status_count/"
_EXCEPTION = "downloader/exception_type_count/"
#: Exception class names (the end of Scrapy's stat key) -> what a user calls them.
_EXCEPTIONS = {
    "DownloadTimeoutError": "timeout",
    "TimeoutError": "timeout",
    "TCPTimedOutError": "timeout",
    "DownloadConnectionRefusedError": "connection refused",
    "ConnectionRefusedError": "connection refused",
    "CannotResolveHostError": "unknown host",
    "DNSLookupError": "unknown host",
    "DownloadFailedError": "connection closed",
    "ConnectionLost": "connection closed",
    "ConnectionDone": "connection closed",
    "ResponseDataLossError": "answer cut off",
    "StillArriving": "answer too slow",  # trawl.politeness.bounds
    "ResponseTooLarge": "answer too large",
}


def failure_cause(stats: Mapping[str, Any]) -> str:
    """The most frequent failure of a run ("" if none was recorded)."""
    if stats.get(statkeys.BLOCKED):
        return "blocked"
    statuses = {
        int(k[len(_STATUS) :]): v
        for k, v in stats.items()
        if k.startswith(_STATUS) and k[len(_STATUS) :].isdigit()
    }
    bad = {status: count for status, count in statuses.items() if status >= 400}
    if bad:
        return f"HTTP {max(bad, key=lambda s: (bad[s], s))}"
    failures = {
        k[len(_EXCEPTION) :].rsplit(".", 1)[-1]: v for k, v in stats.items() if k.startswith(_EXCEPTION)
    }
    if failures:
        name = max(failures, key=lambda n: failures[n])
        return _EXCEPTIONS.get(name, name)
    if stats.get(statkeys.ERRORS_MALFORMED):
        return "unreadable answer"
    return ""


def estimate_unknown(stats: Mapping[str, Any]) -> str | None:
    """``check_only``: why the number of requests is unknown, or ``None`` if it is known.

    Unknown when the source said so, or when it reported no estimate and had errors.
    """
    failed = statkeys.ESTIMATE_REQUESTS not in stats and (
        stats.get(statkeys.ERRORS) or stats.get(statkeys.BLOCKED)
    )
    if not stats.get(statkeys.ESTIMATE_UNKNOWN) and not failed:
        return None
    cause = failure_cause(stats)
    return f"unknown ({cause})" if cause else "unknown"
