"""The Wayback Machine's raw replay (``id_``) and how it says "no memento".

``{WAYBACK_BASE_URL}/web/{timestamp}id_/{url}`` answers the archived bytes as
they were captured, never the rewritten replay page (no toolbar, no rewritten
links). A timestamp that is not exact is a ``302`` to the nearest capture; an
archived redirect comes back with its archived status and a ``Location`` on
another ``id_`` URL: both are followed as the archive serves them (Scrapy's
redirect middleware, within ``REDIRECT_MAX_TIMES``), so a redirect loop ends.

A URL the archive has no capture of is a ``404`` HTML page ("The Wayback
Machine has not archived that URL.") without ``Memento-Datetime``; an
archived 404 page carries that header. The first is counted and not stored;
the second is a response like any other.
"""

from __future__ import annotations

import re

from scrapy.http import Response

NO_MEMENTO_MARKER = b"has not archived that url"
_REPLAY = re.compile(r"/web/(\d{1,14})[a-z_]*/")


def replay_url(base_url: str, timestamp: str, url: str) -> str:
    """The raw replay of one capture."""
    return f"{base_url}/web/{timestamp}id_/{url}"


def served_timestamp(response_url: str) -> str | None:
    """The capture a replay URL names (after redirects: the one the archive served)."""
    found = _REPLAY.search(response_url)
    return found.group(1) if found else None


def is_memento(response: Response) -> bool:
    """An archived answer (any status), not the archive's own page."""
    return b"Memento-Datetime" in response.headers or b"memento-datetime" in response.headers


def is_no_memento(response: Response) -> bool:
    """The archive's "has not archived that URL" answer (404 without ``Memento-Datetime``)."""
    if is_memento(response) or response.status < 400:
        return False
    return response.status == 404 or NO_MEMENTO_MARKER in response.body[:8192].lower()
