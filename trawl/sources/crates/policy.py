"""The API modes' arguments and crates.io's crawler policy, checked before anything is sent.

crates.io asks every crawler for a ``User-Agent`` that names the application
and gives a contact (https://crates.io/data-access: "Including contact
information will also reduce the chance that we will need to take action
against your bot"). trawl cannot know its user's contact, so against the real
host (``crates.io`` and its subdomains) a run without ``CRATES_USER_AGENT``, or
with one that holds neither an email address nor a URL, is refused in one
line before any request: better than a crawl that crates.io may block. Against
any other base URL (a mirror, the tests' local server) trawl's own
``USER_AGENT`` is fine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from trawl.errors import TrawlUsageError
from trawl.sources.arguments import parse_bool, parse_int
from trawl.sources.crates.api import ApiOptions

#: ``-a`` arguments of the API modes (``mode=dump`` refuses them: they would do nothing there).
API_ARGUMENTS = ("crates", "q", "limit", "dependencies")
#: An email address, a URL, or a host with a path (``my_crawler.com/info``, crates.io's own example).
_CONTACT = re.compile(r"[^\s@()<>]+@[^\s@()<>]+\.[a-z]{2,}|https?://\S+|\b[\w-]+(?:\.[\w-]+)+/\S*", re.I)
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}", re.I)


def is_crates_io(base_url: str) -> bool:
    host = (urlsplit(base_url).hostname or "").lower()
    return host == "crates.io" or host.endswith(".crates.io")


def user_agent(settings: Mapping[str, Any], base_url: str) -> str:
    """The User-Agent of every API request; :class:`TrawlUsageError` against crates.io without a contact."""
    given = " ".join(str(settings.get("CRATES_USER_AGENT") or "").split())
    if is_crates_io(base_url):
        if not given or not _CONTACT.search(given):
            raise TrawlUsageError(
                "the crates.io API asks crawlers for a User-Agent with a contact (https://crates.io/data-access):"
                " set CRATES_USER_AGENT to your application and an email or URL,"
                " e.g. -s 'CRATES_USER_AGENT=my-crawler (me@example.com)'"
                + (f"; {given!r} has neither" if given else "")
            )
        return given
    return given or str(settings.get("USER_AGENT") or "trawl")


def read_api_options(
    mode: str, settings: Mapping[str, Any], arguments: Mapping[str, Any], base_url: str
) -> ApiOptions:
    """``-a crates=``, ``q=``, ``limit=``, ``dependencies=`` and the User-Agent, checked."""
    crates = [name.strip() for name in str(arguments.get("crates") or "").split(",") if name.strip()]
    bad = [name for name in crates if not _NAME.fullmatch(name)]
    if bad:
        raise TrawlUsageError(f"-a crates= takes crate names separated by commas, got {bad[0]!r}")
    q = str(arguments.get("q") or "").strip()
    if crates and (q or mode == "incremental"):
        other = "-a q=" if q else "-a mode=incremental"
        raise TrawlUsageError(f"-a crates= names the crates: it cannot be combined with {other}")
    return ApiOptions(
        mode=mode,
        user_agent=user_agent(settings, base_url),
        crates=list(dict.fromkeys(crates)),
        q=q,
        limit=parse_int("limit", arguments.get("limit", 0)),
        dependencies=parse_bool("dependencies", arguments.get("dependencies", False)),
    )
