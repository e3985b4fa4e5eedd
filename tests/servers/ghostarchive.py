"""A local stand-in for ghostarchive.org's HTML search (``/search?term=&page=``).

GhostArchive has no API and no page of it was recorded, so this layout is a
plausible guess built from what waymore's parser and other scrapers rely on
(``/work/shared/api-formats.md`` section g): a results table whose rows link
``<a href="/archive/<id>">URL</a>`` (the archived URL is the link text), a
"Showing X to Y out of N" line (or "Page X out of N" with
``counter="page"``), a "Next Page" link, "No archives for that site." for an
empty result, "The site is under maintenance and will be back soon" when it is
down, and the quirk scrapers report: past the last page the site serves page
1 again.

Page numbering is a switch too: ``one_based=False`` (default) serves the
first page at ``page=0`` as waymore asks; ``one_based=True`` makes 1 the first
page, with ``page=0`` an alias of it (its "Next Page" link points to 2).
``next_on_last`` puts a "Next Page" link on the last page as well, so only the
reset guard can stop a client.
"""

from __future__ import annotations

import html
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from tests.servers.local import LocalServer, SeenRequest

#: (status, body, headers) answered instead of the next search page.
Fault = tuple[int, bytes, dict[str, str]]
_HTML = {"Content-Type": "text/html; charset=utf-8", "Server": "nginx"}

NO_ARCHIVES = "No archives for that site."
MAINTENANCE = "The site is under maintenance and will be back soon"


def archive_id(index: int) -> str:
    """Short mixed-case ids like the site's (``/archive/aB3xZ``)."""
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    out = ""
    number = index * 7919 + 104729
    for _ in range(5):
        number, digit = divmod(number, len(alphabet))
        out += alphabet[digit]
    return out


def maintenance(status: int = 200) -> Fault:
    body = f"<!DOCTYPE html><html><body><h2>{MAINTENANCE}.</h2></body></html>".encode()
    return (status, body, dict(_HTML))


def server_error(status: int = 502) -> Fault:
    body = f"<html><head><title>{status}</title></head><body><center><h1>{status}</h1></center></body></html>"
    return (status, body.encode(), dict(_HTML))


@dataclass
class FakeGhostArchive(LocalServer):
    """Context manager: serves on 127.0.0.1, ``base_url`` while running."""

    #: Archived URL texts by search term, in the order the site lists them.
    archives: dict[str, Sequence[str]] = field(default_factory=dict)
    per_page: int = 3
    one_based: bool = False
    next_on_last: bool = False
    counter: str = "showing"  # or "page"
    faults: list[Fault] = field(default_factory=list)
    #: Answered every time a given ``page=`` is asked (after ``faults`` ran out).
    page_faults: dict[int, Fault] = field(default_factory=dict)
    requests: list[SeenRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def pages_asked(self) -> list[int]:
        with self._lock:
            return [int(r.params.get("page", "0")) for r in self.requests if r.path == "/search"]

    def ids(self, term: str) -> list[str]:
        return [archive_id(i) for i in range(len(self.archives.get(term, ())))]

    # --- answers -------------------------------------------------------------------------

    def answer(self, request: SeenRequest) -> Fault:
        with self._lock:
            self.requests.append(request)
            fault = self.faults.pop(0) if self.faults else None
        if request.path != "/search":
            return (404, b"<html><body>Not Found</body></html>", dict(_HTML))
        if fault is not None:
            return fault
        term = request.params.get("term", "")
        try:
            page = int(request.params.get("page", "0"))
        except ValueError:
            page = 0
        if page in self.page_faults:
            return self.page_faults[page]
        return (200, self.render(term, page).encode(), dict(_HTML))

    def render(self, term: str, asked: int) -> str:
        entries = list(self.archives.get(term, ()))
        if not entries:
            return _page(term, f"<p>Page 0 out of 0</p>\n<p>{NO_ARCHIVES}</p>")
        pages = math.ceil(len(entries) / self.per_page)
        offset = 1 if self.one_based else 0
        index = max(asked - offset, 0)  # one-based: page 0 is page 1
        if index >= pages:
            index = 0  # past the end the site starts over at its first page
        start = index * self.per_page
        rows = "\n".join(
            f'<tr><td><a href="/archive/{archive_id(i)}">{html.escape(entries[i])}</a></td>'
            f"<td>{html.escape(term)}</td><td>Archived 2022 Mar {1 + i % 28:02d}</td></tr>"
            for i in range(start, min(start + self.per_page, len(entries)))
        )
        shown = index + offset
        if self.counter == "page":
            counter = f"<p>Page {shown} out of {pages}</p>"
        else:
            end = min(start + self.per_page, len(entries))
            counter = f"<p>Showing {start + 1} to {end} out of {len(entries)}</p>"
        links = []
        if index > 0:
            links.append(f'<a href="{_search_href(term, shown - 1)}">Previous Page</a>')
        if index < pages - 1 or self.next_on_last:
            links.append(f'<a href="{_search_href(term, shown + 1)}">Next Page</a>')
        body = (
            f'{counter}\n<table class="results">\n<tr><th>URL</th><th>Search</th><th>Date</th></tr>\n'
            f'{rows}\n</table>\n<div class="pagination">{" ".join(links)}</div>'
        )
        return _page(term, body)


def _search_href(term: str, page: int) -> str:
    return "/search?" + html.escape(urlencode({"term": term, "page": page}))


def _page(term: str, content: str) -> str:
    safe = html.escape(term)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">'
        f"<title>Ghostarchive - {safe}</title></head>\n<body>\n"
        '<div id="header"><a href="/">Ghostarchive</a> <a href="/varchive">Videos</a></div>\n'
        f'<form action="/search" method="get"><input id="searchInput" type="text" name="term" value="{safe}">'
        '<input type="submit" value="Search"></form>\n'
        f"<h1>Archives for {safe}</h1>\n{content}\n</body>\n</html>\n"
    )
