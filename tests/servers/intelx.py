"""A local stand-in for the Intelligence X phonebook API (``2.intelx.io`` / ``free.intelx.io``).

Wire format from the IntelX SDK and waymore (``/work/shared/api-formats.md``
section g): ``POST /phonebook/search`` with a JSON body and the key in
``X-Key`` answers ``{"id": "<uuid>", "softselectorwarning": false, "status": 0}``
(status 1 invalid term, 2 too many concurrent searches);
``GET /phonebook/search/result?id=&limit=&offset=-1`` returns the next chunk of
``{"selectors": [{"selectorvalue", "selectorvalueh", "selectortype",
"selectortypeh"}], "status": s}`` on each call: 0 results, 1 no more results,
2 search id not found, 3 not ready yet. A key the base does not accept gets
``refuse_status`` (401: how 2.intelx.io answers free keys, which waymore then
takes to free.intelx.io); no credit left gets 402.

Guesses (not seen in a recording): the ``/authenticate/info`` body beyond
``paths["/phonebook/search"].Credit``/``CreditMax``, the selectortype number
(3 for URLs, as target 3), the error bodies, whether the last chunk carries
status 0 or 1 (``end_with_results`` switches).

Run one instance per base: the paid one refusing a free key, the free one
accepting it.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field

from tests.servers.local import LocalServer, SeenRequest

#: (status, body, headers) answered instead, per endpoint: "search", "result", "info".
Fault = tuple[int, bytes, dict[str, str]]

_JSON = {"Content-Type": "application/json; charset=utf-8"}


def selector(value: str) -> dict[str, object]:
    return {"selectorvalue": value, "selectorvalueh": value, "selectortype": 3, "selectortypeh": "URL"}


def rate_limited() -> Fault:
    return (429, b"Too Many Requests", {"Content-Type": "text/plain; charset=utf-8", "Retry-After": "1"})


def server_error(status: int = 500) -> Fault:
    return (
        status,
        b"<html><body><h1>Internal Server Error</h1></body></html>",
        {"Content-Type": "text/html"},
    )


def html_200() -> Fault:
    return (
        200,
        b"<!DOCTYPE html><html><body>Intelligence X - Login</body></html>",
        {"Content-Type": "text/html"},
    )


def malformed() -> Fault:
    return (200, b'{"selectors": [{"selectorvalue": "https://exa', dict(_JSON))


def search_status(status: int) -> Fault:
    """A search that did not start: 1 invalid term, 2 too many concurrent searches."""
    body = {"id": "00000000-0000-0000-0000-000000000000", "softselectorwarning": False, "status": status}
    return (200, json.dumps(body).encode(), dict(_JSON))


@dataclass
class _Search:
    values: list[str]
    offset: int = 0
    not_ready: int = 0


@dataclass
class FakeIntelX(LocalServer):
    """Context manager: one IntelX base on 127.0.0.1, ``base_url`` while running."""

    keys: set[str] = field(default_factory=lambda: {"ix-test-key-0123456789"})
    #: Selector values by search term.
    selectors: dict[str, list[str]] = field(default_factory=dict)
    #: Status-3 ("not ready yet") answers before the first chunk of each search.
    not_ready: int = 0
    #: The last chunk comes with status 1 itself instead of status 0 then an empty status 1.
    end_with_results: bool = False
    #: Search ids are forgotten at once (every result call answers status 2).
    forget_searches: bool = False
    refuse_status: int = 401
    credits: int = 50
    credit_max: int = 50
    faults: dict[str, list[Fault]] = field(default_factory=dict)
    requests: list[SeenRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._searches: dict[str, _Search] = {}

    def requests_to(self, path: str) -> list[SeenRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    # --- answers -------------------------------------------------------------------------

    def answer(self, request: SeenRequest) -> Fault:
        with self._lock:
            self.requests.append(request)
            endpoint = {
                "/phonebook/search": "search",
                "/phonebook/search/result": "result",
                "/authenticate/info": "info",
            }.get(request.path)
            if endpoint is None:
                return (404, b"Not Found", {"Content-Type": "text/plain"})
            if request.headers.get("x-key") not in self.keys:
                return (self.refuse_status, b"", {"Content-Type": "text/plain"})
            queue = self.faults.get(endpoint)
            if queue:
                return queue.pop(0)
            if endpoint == "search":
                return self._search(request)
            if endpoint == "result":
                return self._result(request.params)
            return self._info()

    def _search(self, request: SeenRequest) -> Fault:
        if request.method != "POST":
            return (405, b"Method Not Allowed", {"Content-Type": "text/plain"})
        if self.credits <= 0:
            return (402, b"", {"Content-Type": "text/plain"})
        body = request.body or {}
        term = body.get("term")
        if not isinstance(term, str) or not term:
            return search_status(1)
        self.credits -= 1
        values = list(self.selectors.get(term, []))[: int(body.get("maxresults") or 1000)]
        search_id = str(uuid.uuid4())
        self._searches[search_id] = _Search(values, not_ready=self.not_ready)
        return (
            200,
            json.dumps({"id": search_id, "softselectorwarning": False, "status": 0}).encode(),
            dict(_JSON),
        )

    def _result(self, params: dict[str, str]) -> Fault:
        search = None if self.forget_searches else self._searches.get(params.get("id", ""))
        if search is None:
            return _chunk([], 2)
        if search.not_ready > 0:
            search.not_ready -= 1
            return _chunk([], 3)
        limit = int(params.get("limit") or 1000)
        chunk = search.values[search.offset : search.offset + limit]
        search.offset += len(chunk)
        if not chunk:
            return _chunk([], 1)
        done = search.offset >= len(search.values)
        return _chunk(chunk, 1 if done and self.end_with_results else 0)

    def _info(self) -> Fault:
        def path(name: str, credit: int, credit_max: int) -> dict[str, object]:
            return {"Path": name, "Credit": credit, "CreditMax": credit_max, "CreditReset": 86400}

        info = {
            "added": "2021-03-04T05:06:07.123456Z",
            "buckets": ["leaks.public", "pastes", "web.public"],
            "paths": {
                "/authenticate/info": path("/authenticate/info", 0, 0),
                "/intelligent/search": path("/intelligent/search", 50, 50),
                "/phonebook/search": path("/phonebook/search", self.credits, self.credit_max),
            },
            "searchesactive": 0,
            "maxconcurrentsearches": 20,
        }
        return (200, json.dumps(info).encode(), dict(_JSON))


def _chunk(values: list[str], status: int) -> Fault:
    body = {"selectors": [selector(v) for v in values], "status": status}
    return (200, json.dumps(body).encode(), dict(_JSON))
