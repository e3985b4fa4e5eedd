"""A tiny passive-DNS JSON API: the upstream of the second record kind's example source.

``GET /v1/records?page=N`` answers ``{"records": [...], "next": N+1 or null}``,
each record ``{"name", "type", "value", "first_seen", "last_seen", "count"}``,
``per_page`` records a page. The records are whatever the test gives (change
:attr:`records` between crawls to play a later state of the upstream); every
request is logged in :attr:`requests`.
"""

from __future__ import annotations

import json
from typing import Any

from tests.servers.local import Answer, LocalServer, SeenRequest


class FakePassiveDnsServer(LocalServer):
    def __init__(self, records: list[dict[str, Any]], per_page: int = 2) -> None:
        self.records = records
        self.per_page = per_page
        self.requests: list[SeenRequest] = []

    def answer(self, request: SeenRequest) -> Answer:
        self.requests.append(request)
        if request.path != "/v1/records":
            return 404, b'{"error": "not found"}', {"Content-Type": "application/json"}
        page = int(request.params.get("page", "1"))
        start = (page - 1) * self.per_page
        chunk = self.records[start : start + self.per_page]
        more = start + self.per_page < len(self.records)
        body = {"records": chunk, "next": page + 1 if more else None}
        return 200, json.dumps(body).encode(), {"Content-Type": "application/json"}
